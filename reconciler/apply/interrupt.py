"""Ctrl-C during apply: the first starts no new call and lets those in flight finish
(so the summary is true); the second aborts at once."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from reconciler.apply.events import EventSink, Notice


@contextmanager
def stop_on_sigint(stop: threading.Event, events: EventSink) -> Iterator[None]:
    """First Ctrl-C: set `stop` (the executor starts no new call). Second: abort."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        events(Notice(
            "Interrupt: starting no new calls; waiting for those in flight "
            "(Ctrl-C again to abort at once)"
        ))

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
