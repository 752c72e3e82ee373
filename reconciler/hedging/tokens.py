"""The hedging token bucket, as the official clients keep it (docs/hedging.md).

It starts empty; a hedged attempt spends one token; each successful batch (whichever
attempt won) adds the refill ratio, capped at max tokens. Tokens are fixed-point
thousandths, as in Java, Node, Go and Rust, so ten refills of 0.1 make exactly one
token (floats would make 0.9999...). A refill ratio finer than 0.001 is rounded to
the nearest thousandth, as a bucket of thousandths can hold it.
"""

from __future__ import annotations

import threading

SCALE = 1000  # one token in thousandths
TOKEN = SCALE


def refill_units(refill_ratio: float) -> int:
    """The refill ratio in thousandths of a token."""
    return round(refill_ratio * SCALE)


class TokenBucket:
    """Thread-safe: one bucket is shared by every batch of a publisher."""

    def __init__(self, max_tokens: int, refill_ratio: float) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if refill_ratio < 0:
            raise ValueError("refill_ratio must not be negative")
        self._cap = max_tokens * SCALE
        self._refill = refill_units(refill_ratio)
        self._level = 0
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        """Spend one token if a whole one is there."""
        with self._lock:
            if self._level < TOKEN:
                return False
            self._level -= TOKEN
            return True

    def refill(self) -> None:
        """Credit one successful batch."""
        with self._lock:
            self._level = min(self._cap, self._level + self._refill)

    @property
    def available(self) -> float:
        with self._lock:
            return self._level / SCALE
