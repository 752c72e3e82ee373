"""The suite's one poll for a state the server or a client reaches on a thread of its
own (a counter bumped after a send, an outcome recorded after a reply)."""

from __future__ import annotations

import time
from collections.abc import Callable

Wait = Callable[..., None]


def wait_until(cond: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `cond` until it holds. `timeout` is a safety net against a hang, generous
    because a loaded CI machine is slow, never fast: not a latency expectation."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"{what} not reached in {timeout:g} s")
        time.sleep(0.005)
