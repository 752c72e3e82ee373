"""Calls to a service made in the background, each on a daemon thread of its own, a
bounded number at once.

Daemon threads, not a ThreadPoolExecutor: the interpreter waits for an executor's
threads at exit, so a command interrupted (Ctrl-C, SIGTERM) while a slow service
holds a call would end only when that call times out; with daemon threads it ends at
once, and the calls still in flight end with the process.

    Background(limit).submit(fn, *args) -> Future   fn(*args) started now
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class Background:
    """At most `limit` calls run at once; the others wait for a slot, in no order."""

    def __init__(self, limit: int, name: str = "background") -> None:
        self._slots = threading.BoundedSemaphore(max(1, limit))
        self._name = name

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """`fn(*args)` on a daemon thread: its result, or what it raised, in the future."""
        future: Future[T] = Future()

        def run() -> None:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # the caller's result() raises it
                    future.set_exception(exc)

        threading.Thread(target=run, name=self._name, daemon=True).start()
        return future
