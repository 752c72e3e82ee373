"""`HedgingSettings`: the Java client's knobs (`HedgingSettings.newBuilder()`), in seconds.

Pure Python (no google imports), so the advisor and docs can use it. Out-of-range
values raise `ValueError` at construction, with the same messages `validate` gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.hedging.profile import (
    DEFAULT_HEDGE_DELAY_MS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_REFILL_RATIO,
    HedgingConfigError,
    HedgingProfile,
)


@dataclass(frozen=True)
class HedgingSettings:
    """hedge_delay in seconds (100 ms to 10 s), max_tokens 1-250, refill_ratio
    0.001-0.2; defaults 1 s, 50, 0.1 (docs/hedging.md)."""

    hedge_delay: float = DEFAULT_HEDGE_DELAY_MS / 1000
    max_tokens: int = DEFAULT_MAX_TOKENS
    refill_ratio: float = DEFAULT_REFILL_RATIO

    def __post_init__(self) -> None:
        problems = self.profile().problems()
        if problems:
            raise HedgingConfigError(problems)

    def profile(self) -> HedgingProfile:
        return HedgingProfile(
            hedge_delay_ms=round(self.hedge_delay * 1000),
            max_tokens=self.max_tokens,
            refill_ratio=self.refill_ratio,
        )
