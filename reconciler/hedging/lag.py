"""How far behind the client itself is running, so hedging reacts only to the service.

Under CPU saturation every timer fires late and every response is noticed late;
an attempt then *looks* slow although the service answered in time. The scheduler
reports how late each timer fired; the monitor keeps a peak that halves every
`half_life` seconds, so one stall counts for a while and then fades.
"""

from __future__ import annotations

import threading
import time


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
