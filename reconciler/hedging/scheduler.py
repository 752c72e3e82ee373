"""One timer thread for all of a publisher's waits.

Hedge ticks, batch latency flushes, retry backoffs and total-timeout deadlines are
entries in one heap served by one thread, so waiting costs no thread per batch.
Callbacks must be short: they run on the scheduler thread.
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

    Cancelling drops the callback at once, so a long timer (a 60 s total-timeout
    deadline) does not keep its finished batch alive until it would have fired.
    """

    __slots__ = ("fn", "when")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn: Callable[[], None] | None = fn

    @property
    def cancelled(self) -> bool:
        return self.fn is None

    def cancel(self) -> None:
        self.fn = None


class Scheduler:
    def __init__(self, name: str = "hedging-scheduler", lag: LagMonitor | None = None) -> None:
        # How late timers fire is the client's own scheduling lag (see lag.py).
        self.lag = lag or LagMonitor()
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._compacted = _COMPACT_AT // 2  # heap size after the last compaction
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_at(self, when: float, fn: Callable[[], None]) -> TimerHandle:
        """Run `fn` on the scheduler thread at monotonic time `when`."""
        handle = TimerHandle(when, fn)
        with self._cond:
            if self._stopped:
                raise RuntimeError("scheduler is stopped")
            if len(self._heap) >= _COMPACT_AT and len(self._heap) >= 2 * self._compacted:
                # Mostly cancelled entries (finished batches' deadlines): drop them.
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
                self._compacted = max(len(self._heap), _COMPACT_AT // 2)
            heapq.heappush(self._heap, (when, next(self._seq), handle))
            if self._heap[0][2] is handle:
                self._cond.notify()
        return handle

    def call_soon(self, fn: Callable[[], None]) -> TimerHandle:
        return self.call_at(time.monotonic(), fn)

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        return self.call_at(time.monotonic() + delay, fn)

    def stop(self) -> None:
        """Drop pending calls and end the thread."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    if not self._heap:
                        self._cond.wait()
                        continue
                    now = time.monotonic()
                    wait = self._heap[0][0] - now
                    if wait <= 0:
                        handle = heapq.heappop(self._heap)[2]
                        fn = handle.fn
                        handle.fn = None
                        if fn is not None:
                            self.lag.observe(-wait, now)
                        break
                    self._cond.wait(wait)
            if fn is None:
                continue
            try:
                fn()
            except Exception:  # a broken callback must not stop every other timer
                _log.exception("hedging scheduler callback failed")
