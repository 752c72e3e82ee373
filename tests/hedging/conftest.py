"""Helpers shared by the hedged publisher's tests (which run against the suite's
`local_server` through the real client)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll: generous timeouts, because a loaded CI machine is slow, never fast."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., None]:
    return wait_until
