"""How far behind the client itself is running, so hedging reacts only to the service.

Under CPU saturation every timer fires late and every response is noticed late;
an attempt then *looks* slow although the service answered in time. The scheduler
reports how late each timer fired and `LagProbe` how late a finished call is
noticed; the monitor keeps a peak that halves every `half_life` seconds, so one
stall counts for a while and then fades.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any


class LagMonitor:
    def __init__(self, half_life: float = 1.0) -> None:
        self._half_life = half_life
        self._peak = 0.0
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def observe(self, lag: float, now: float | None = None) -> None:
        """Record one lateness sample (seconds)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            decayed = self._decayed(now)
            if lag >= decayed:
                self._peak, self._at = lag, now

    def current(self, now: float | None = None) -> float:
        """The client's recent lag estimate, in seconds."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return self._decayed(now)

    def _decayed(self, now: float) -> float:
        age = max(0.0, now - self._at)
        return float(self._peak * 0.5 ** (age / self._half_life))


class LagProbe:
    """Measures how long the client takes to notice a finished call.

    A Publish call whose deadline has already passed fails inside the gRPC library
    without leaving the process (no request reaches the service), but its completion
    waits in the same queue, for the same thread, as real responses: the time to
    its callback is the lag a real response would see. Batches about to hedge ask
    for a fresh probe and decide when it answers; an unanswered probe's age counts
    as lag by itself.
    """

    EXPIRED = -3600.0  # seconds: a deadline an hour ago

    def __init__(
        self,
        rpc: Any,
        request: Any,
        metadata: Any,
        monitor: LagMonitor,
        call_soon: Callable[[Callable[[], None]], object],
        fresh_for: float,
        on_send: Callable[[], None] | None = None,
    ) -> None:
        self._rpc = rpc
        self._request = request
        self._metadata = metadata
        self._monitor = monitor
        self._call_soon = call_soon
        self._fresh_for = fresh_for
        self._lock = threading.Lock()
        self._issued: float | None = None
        self._answered = -math.inf
        self._waiters: list[Callable[[], None]] = []
        self._on_send = on_send
        self.sent = 0

    def age(self, now: float) -> float:
        """How long the probe in flight has waited (0 when none is)."""
        issued = self._issued
        return 0.0 if issued is None else max(0.0, now - issued)

    def fresh(self, now: float) -> bool:
        return now - self._answered <= self._fresh_for

    def then(self, waiter: Callable[[], None]) -> None:
        """Run `waiter` (through `call_soon`) once a probe sent from now on answers."""
        with self._lock:
            self._waiters.append(waiter)
            if self._issued is not None:
                return
            self._issued = time.monotonic()
            self.sent += 1
        if self._on_send is not None:
            self._on_send()
        try:
            call = self._rpc.future(self._request, timeout=self.EXPIRED, metadata=self._metadata)
        except Exception:  # channel closed: nothing to measure, let the waiters go
            self._done(None)
            return
        call.add_done_callback(self._done)

    def _done(self, _call: Any) -> None:
        now = time.monotonic()
        with self._lock:
            issued, self._issued = self._issued, None
            waiters, self._waiters = self._waiters, []
            self._answered = now
        if issued is not None:
            self._monitor.observe(now - issued, now)
        for waiter in waiters:
            try:
                self._call_soon(waiter)
            except RuntimeError:  # the publisher closed meanwhile: nothing to decide
                return
