"""The hedged publisher's counters: a lock-protected tally and its snapshot."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class HedgingCounters:
    """A consistent snapshot of a publisher's counters.

    `attempts` counts every Publish RPC sent (originals, hedges and retries);
    `throttled_hedges` counts hedge delays that passed with no token to spend;
    `lag_paused_hedges` counts hedge delays that passed while the client itself was
    running late (its timers fired late by more than the hedge delay, or the
    attempt's time on the wire, once the client's lag is taken off, was still
    under the hedge delay), so no hedge was sent for the client's own slowness;
    `lag_probes` counts the local probes that measured that lag (none reaches the
    service);
    `wins_by_attempt` maps the winning attempt's number within its batch (1 = the
    original) to how many batches it won.

    `duplicates` counts attempts that may have been stored after their batch had
    completed: every attempt still in flight when another one won, or when the batch
    failed (a non-retryable error, the total timeout); cancellation is best effort,
    the service may have stored each. It bounds the copies the service keeps beyond
    one per successful message; `duplicates_confirmed` counts late successes the
    client saw. Batches ended by close() are not counted: their futures fail with
    PublishOutcomeUnknown, which says the same.
    """

    attempts: int = 0
    hedged_attempts: int = 0
    throttled_hedges: int = 0
    lag_paused_hedges: int = 0
    lag_probes: int = 0
    retried_attempts: int = 0
    wins_by_attempt: Mapping[int, int] = field(default_factory=dict)
    tokens_available: float | None = None
    cancelled_attempts: int = 0
    failed_attempts: int = 0
    duplicates: int = 0
    duplicates_confirmed: int = 0
    batches_succeeded: int = 0
    batches_failed: int = 0
    client_lag_ms: float = 0.0


class Stats:
    """Mutable tally; callers take `lock` around updates."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts = 0
        self.hedged = 0
        self.throttled = 0
        self.lag_paused = 0
        self.retried = 0
        self.wins: dict[int, int] = {}
        self.cancelled = 0
        self.failed = 0
        self.duplicates = 0
        self.duplicates_confirmed = 0
        self.succeeded_batches = 0
        self.failed_batches = 0

    def snapshot(self, tokens: float | None, lag: float, probes: int = 0) -> HedgingCounters:
        with self.lock:
            return HedgingCounters(
                attempts=self.attempts,
                hedged_attempts=self.hedged,
                throttled_hedges=self.throttled,
                lag_paused_hedges=self.lag_paused,
                lag_probes=probes,
                retried_attempts=self.retried,
                wins_by_attempt=dict(self.wins),
                tokens_available=tokens,
                cancelled_attempts=self.cancelled,
                failed_attempts=self.failed,
                duplicates=self.duplicates,
                duplicates_confirmed=self.duplicates_confirmed,
                batches_succeeded=self.succeeded_batches,
                batches_failed=self.failed_batches,
                client_lag_ms=round(lag * 1000, 1),
            )


def merge(parts: list[HedgingCounters]) -> HedgingCounters:
    """The sum of several topics' counters (tokens and lag: the lowest and highest)."""
    if not parts:
        return HedgingCounters()
    wins: dict[int, int] = {}
    for p in parts:
        for k, v in p.wins_by_attempt.items():
            wins[k] = wins.get(k, 0) + v
    tokens = [p.tokens_available for p in parts if p.tokens_available is not None]
    summed = {
        f: sum(getattr(p, f) for p in parts)
        for f in HedgingCounters.__dataclass_fields__
        if f not in ("wins_by_attempt", "tokens_available", "client_lag_ms")
    }
    return HedgingCounters(
        **summed,
        wins_by_attempt=wins,
        tokens_available=min(tokens) if tokens else None,
        client_lag_ms=max(p.client_lag_ms for p in parts),
    )
