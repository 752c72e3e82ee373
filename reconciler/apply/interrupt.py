"""Ctrl-C or SIGTERM during apply (SIGTERM is what CI runners send on cancel): the
first starts no new call and lets those in flight finish, so the summary is true; a
second signal aborts at once.

The exit code says which signal stopped the run: 130 for SIGINT, 143 for SIGTERM.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from reconciler.apply.events import EventSink, Notice
from reconciler.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
NAMES = {signal.SIGINT: "Interrupt", signal.SIGTERM: "Terminate signal (SIGTERM)"}


@dataclass
class Received:
    """The first stop signal that arrived, if any."""

    signum: int | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.signum == signal.SIGTERM else EXIT_INTERRUPTED


@contextmanager
def stop_on_signals(stop: threading.Event, events: EventSink) -> Iterator[Received]:
    """First SIGINT or SIGTERM: set `stop` (the executor starts no new call) and say so.
    A second: abort (KeyboardInterrupt for SIGINT, Terminated for SIGTERM)."""
    received = Received()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated()
        received.signum = signum
        stop.set()
        again = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        events(Notice(
            f"{NAMES.get(signal.Signals(signum), 'Signal')}: starting no new calls; "
            f"waiting for those in flight ({again} again to abort at once)"
        ))

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield received
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
