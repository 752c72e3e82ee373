"""One timer thread for all of a client's waits, and only while it has some.

Hedge checks, batch latency flushes, retry backoffs, total-timeout deadlines and the
topic-label lookup's wait are entries in one heap served by one thread, so waiting
costs no thread per batch. The thread starts with the first pending entry and ends
when none is left (every entry ran or was cancelled), so an idle or dropped client
keeps no thread, as the official client keeps none. Callbacks must be short: they
run on the scheduler thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from reconciler.hedging.lag import LagMonitor

_log = logging.getLogger(__name__)
_COMPACT_AT = 4096


class TimerHandle:
    """Cancel a scheduled call; cancelling after it ran is harmless.

    Cancelling drops the callback at once, so a long timer (a 600 s total-timeout
    deadline) does not keep its finished batch alive until it would have fired, nor
    the scheduler's thread running.
    """

    __slots__ = ("_owner", "fn", "when")

    def __init__(self, when: float, fn: Callable[[], None], owner: Scheduler) -> None:
        self.when = when
        self.fn: Callable[[], None] | None = fn
        self._owner: Scheduler | None = owner

    @property
    def cancelled(self) -> bool:
        return self.fn is None

    def cancel(self) -> None:
        owner = self._owner
        if owner is not None:
            owner._drop(self)


class Scheduler:
    def __init__(self, name: str = "hedging-scheduler", lag: LagMonitor | None = None) -> None:
        # How late timers fire is the client's own scheduling lag (see lag.py).
        self.lag = lag or LagMonitor()
        self._name = name
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._live = 0  # entries neither run nor cancelled
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def call_at(self, when: float, fn: Callable[[], None]) -> TimerHandle:
        """Run `fn` on the scheduler thread at monotonic time `when`."""
        handle = TimerHandle(when, fn, self)
        with self._cond:
            if self._stopped:
                raise RuntimeError("scheduler is stopped")
            if len(self._heap) >= _COMPACT_AT and len(self._heap) >= 4 * self._live:
                # Mostly cancelled entries (finished batches' deadlines): drop them.
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (when, next(self._seq), handle))
            self._live += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0][2] is handle:
                self._cond.notify()
        return handle

    def call_soon(self, fn: Callable[[], None]) -> TimerHandle:
        return self.call_at(time.monotonic(), fn)

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        return self.call_at(time.monotonic() + delay, fn)

    def stop(self) -> None:
        """Drop pending calls and end the thread; later calls are refused."""
        with self._cond:
            self._stopped = True
            self._clear()
            thread = self._thread
            self._cond.notify()
        if thread is not None and threading.current_thread() is not thread:
            thread.join()

    def _drop(self, handle: TimerHandle) -> None:
        with self._cond:
            if handle.fn is None:
                return
            handle.fn = None
            handle._owner = None
            self._live -= 1
            if self._live == 0:
                self._clear()
                self._cond.notify()  # nothing left: the thread ends now

    def _clear(self) -> None:
        """Caller holds the condition."""
        for _, _, handle in self._heap:
            handle.fn = None
            handle._owner = None
        self._heap.clear()
        self._live = 0

    def _next(self) -> Callable[[], None] | None:
        """On the thread: wait for the next due call; None when the thread must end."""
        with self._cond:
            while True:
                if self._stopped or not self._heap:
                    self._thread = None
                    return None
                now = time.monotonic()
                wait = self._heap[0][0] - now
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                handle = heapq.heappop(self._heap)[2]
                fn = handle.fn
                if fn is None:
                    continue
                handle.fn = None
                handle._owner = None
                self._live -= 1
                self.lag.observe(-wait, now)
                return fn

    def _run(self) -> None:
        while (fn := self._next()) is not None:
            try:
                fn()
            except Exception:  # a broken callback must not stop every other timer
                _log.exception("hedging scheduler callback failed")
            del fn  # drop the reference before waiting: a dropped client can be collected
