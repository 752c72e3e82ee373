"""The hedging token bucket (docs/hedging.md).

Each hedged attempt costs one token; each successful batch adds the refill ratio,
capped at max tokens; the bucket starts full. Tokens are kept as integer parts per
million so that ten refills of 0.1 make exactly one token (floats would not).
"""

from __future__ import annotations

import threading

_UNIT = 1_000_000  # one token in parts per million


class TokenBucket:
    """Thread-safe: one bucket is shared by every batch of a publisher."""

    def __init__(self, max_tokens: int, refill_ppm: int) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if refill_ppm < 0:
            raise ValueError("refill_ppm must not be negative")
        self._cap = max_tokens * _UNIT
        self._refill = refill_ppm
        self._level = self._cap
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        """Spend one token if at least one whole token is available."""
        with self._lock:
            if self._level < _UNIT:
                return False
            self._level -= _UNIT
            return True

    def refill(self) -> None:
        """Credit one successful batch."""
        with self._lock:
            self._level = min(self._cap, self._level + self._refill)

    @property
    def available(self) -> float:
        with self._lock:
            return self._level / _UNIT
