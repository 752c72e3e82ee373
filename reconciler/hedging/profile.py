"""Publish hedging settings and the rules they must satisfy (docs/hedging.md).

One definition serves the spec validator (as diagnostics), the label encoding and the
hedged publisher (as a construction error), so a profile that validates is one that
publishers accept. Pure Python: the validate path imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HEDGE_DELAY_MS = (100, 10_000)
MAX_TOKENS = (1, 250)
REFILL_RATIO = (0.001, 0.2)
REFILL_RATIO_DECIMALS = 6  # recorded on the topic as parts per million
PARTS_PER_MILLION = 1_000_000

DEFAULT_HEDGE_DELAY_MS = 1_000
DEFAULT_MAX_TOKENS = 50
DEFAULT_REFILL_RATIO = 0.1
# The Java Publisher's retry defaults (and google-cloud-pubsub 2.44's 600 s deadline):
# 5 s initial RPC timeout (x4 per retry up to 60 s), 600 s total.
DEFAULT_INITIAL_RPC_TIMEOUT_MS = 5_000
DEFAULT_TOTAL_TIMEOUT_MS = 600_000


@dataclass(frozen=True)
class Problem:
    """One broken rule: `field` names the setting (spec spelling), `code` is stable."""

    field: str
    code: str
    message: str


@dataclass(frozen=True)
class HedgingProfile:
    hedge_delay_ms: int = DEFAULT_HEDGE_DELAY_MS
    max_tokens: int = DEFAULT_MAX_TOKENS
    refill_ratio: float = DEFAULT_REFILL_RATIO
    name: str | None = None

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        ranges: tuple[tuple[str, float, tuple[float, float], Callable[[Any], str]], ...] = (
            ("hedgeDelay", self.hedge_delay_ms, HEDGE_DELAY_MS, format_ms),
            ("maxTokens", self.max_tokens, MAX_TOKENS, str),
            ("refillRatio", self.refill_ratio, REFILL_RATIO, lambda v: f"{v:g}"),
        )
        for field, value, (lo, hi), show in ranges:
            if not lo <= value <= hi:
                out.append(
                    Problem(
                        field,
                        "hedging-range",
                        f"{field} {show(value)} is outside the allowed range "
                        f"{show(lo)} to {show(hi)} (inclusive)",
                    )
                )
        in_range = REFILL_RATIO[0] <= self.refill_ratio <= REFILL_RATIO[1]
        if in_range and abs(self.refill_ratio * PARTS_PER_MILLION - self.refill_ppm) > 1e-6:
            out.append(
                Problem(
                    "refillRatio",
                    "hedging-precision",
                    f"refillRatio {self.refill_ratio!r} has more than "
                    f"{REFILL_RATIO_DECIMALS} decimal places; it could not be recorded on "
                    "the topic exactly",
                )
            )
        return out

    @property
    def refill_ppm(self) -> int:
        return round(self.refill_ratio * PARTS_PER_MILLION)


@dataclass(frozen=True)
class RetryTimeouts:
    initial_rpc_timeout_ms: int = DEFAULT_INITIAL_RPC_TIMEOUT_MS
    total_timeout_ms: int = DEFAULT_TOTAL_TIMEOUT_MS

    def problems(self) -> list[Problem]:
        if self.initial_rpc_timeout_ms > self.total_timeout_ms:
            return [
                Problem(
                    "initialRpcTimeout",
                    "retry-timeout",
                    f"initialRpcTimeout {format_ms(self.initial_rpc_timeout_ms)} is longer "
                    f"than totalTimeout {format_ms(self.total_timeout_ms)}",
                )
            ]
        return []


def combination_problems(
    profile: HedgingProfile, retry: RetryTimeouts, message_ordering: bool
) -> list[Problem]:
    """Rules that tie the profile to the publisher's other settings."""
    out: list[Problem] = []
    if message_ordering:
        out.append(
            Problem(
                "hedging",
                "hedging-ordering",
                "hedging cannot be combined with message ordering (hedged attempts can "
                "reach the service out of order); disable one of them",
            )
        )
    for field, limit_name, limit in (
        ("initialRpcTimeout", "initialRpcTimeout", retry.initial_rpc_timeout_ms),
        ("totalTimeout", "totalTimeout", retry.total_timeout_ms),
    ):
        if profile.hedge_delay_ms >= limit:
            out.append(
                Problem(
                    field,
                    "hedging-timeout",
                    f"hedgeDelay {format_ms(profile.hedge_delay_ms)} must be shorter than "
                    f"{limit_name} {format_ms(limit)}, or the publisher fails to initialise",
                )
            )
    return out


def all_problems(
    profile: HedgingProfile, retry: RetryTimeouts, message_ordering: bool
) -> list[Problem]:
    return profile.problems() + retry.problems() + combination_problems(
        profile, retry, message_ordering
    )


class HedgingConfigError(ValueError):
    """Raised by the hedged publisher when its settings break a rule."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


def check(profile: HedgingProfile, retry: RetryTimeouts, message_ordering: bool) -> None:
    problems = all_problems(profile, retry, message_ordering)
    if problems:
        raise HedgingConfigError(problems)


def format_ms(ms: int) -> str:
    """The spec's own duration spelling: 500ms, 5s, 1m, 1m30s."""
    if ms % 1000:
        return f"{ms}ms"
    seconds = ms // 1000
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds // 60}m"
    if seconds > 60:
        return f"{seconds // 60}m{seconds % 60}s"
    return f"{seconds}s"
