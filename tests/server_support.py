"""The suite's one way to make a local server: the `local_server` fixture (tests/
conftest.py) is this, and a test that needs a fresh one per hypothesis example calls it
directly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def running_local_server() -> Iterator[Any]:
    """An in-memory `LocalServer` on a free loopback port (fault fractions seeded, so
    a run is repeatable), stopped on exit."""
    from reconciler.localserver import LocalServer

    server = LocalServer(fault_seed=1234)
    server.start()
    try:
        yield server
    finally:
        server.stop(grace=None)
