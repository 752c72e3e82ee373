"""The hedged publisher's counters: a lock-protected tally and its snapshot."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class HedgingCounters:
    """A consistent snapshot of a publisher's counters (docs/hedging.md).

    Attempts are numbered as the official clients number them: attempt 0 is the
    original request (with its own retries), 1, 2, ... the hedges.

    - `attempts`: every Publish RPC sent (attempt 0's tries and the hedges);
    - `hedges_sent`: hedged attempts sent (each spent a token);
    - `hedges_dropped`: hedges due that found no token and were dropped (at most one
      per batch: a dropped hedge ends that batch's hedging, as in every official
      client);
    - `hedges_failed`: hedged attempts that failed (discarded, never retried);
    - `wins_by_attempt`: attempt number -> batches it completed;
    - `retried_attempts`: retries of attempt 0; `failed_attempts`: every failed RPC;
    - `lag_paused_hedges`: hedge delays that passed while the client itself ran a
      hedge delay late (see lag.py; `lag_probes` counts the local probes that
      measured it, none reaches the service);
    - `duplicates`: attempts still in flight when their batch ended (another attempt
      won, or the batch failed): cancellation is best effort, the service may have
      stored each, so this bounds the copies kept beyond one per successful message;
      `duplicates_confirmed`: late successes the client saw. Batches ended by
      close() are not counted: their futures fail with PublishOutcomeUnknown;
    - `profile_lookups`, `profile_lookup_failures`: GetTopic calls that read the
      topic's hedging labels, and those that failed, timed out or found damaged
      labels; `unhedged_fallback_batches`: batches sent unhedged because the topic's
      profile could not be read (yet);
    - `hedge_lateness_ms`: for the latest hedges sent (at most `LATENESS_KEPT`), how
      long after its hedge delay had passed each left the client (the timer thread's
      lateness, the local probe, lag pauses): what `reconcile hedging advise
      --hedge-lateness` adds to the simulated checks.
    """

    attempts: int = 0
    hedges_sent: int = 0
    hedges_dropped: int = 0
    hedges_failed: int = 0
    wins_by_attempt: Mapping[int, int] = field(default_factory=dict)
    retried_attempts: int = 0
    failed_attempts: int = 0
    cancelled_attempts: int = 0
    duplicates: int = 0
    duplicates_confirmed: int = 0
    batches_succeeded: int = 0
    batches_failed: int = 0
    lag_paused_hedges: int = 0
    lag_probes: int = 0
    profile_lookups: int = 0
    profile_lookup_failures: int = 0
    unhedged_fallback_batches: int = 0
    tokens_available: float | None = None
    client_lag_ms: float = 0.0
    hedge_lateness_ms: Sequence[float] = ()


# The tallied fields: everything but the gauges and the map.
_COUNTS = tuple(
    f.name
    for f in fields(HedgingCounters)
    if f.name not in ("wins_by_attempt", "tokens_available", "client_lag_ms", "hedge_lateness_ms")
)
LATENESS_KEPT = 2_000  # the latest hedges' lateness, a bounded sample


class Stats:
    """Mutable tally; `add` and `win` take the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, Any] = dict.fromkeys(_COUNTS, 0)
        self.wins: dict[int, int] = {}
        self.lateness: deque[float] = deque(maxlen=LATENESS_KEPT)

    def hedge_sent(self, lateness: float) -> None:
        """One hedge sent `lateness` seconds after its hedge delay passed."""
        with self.lock:
            self.counts["attempts"] += 1
            self.counts["hedges_sent"] += 1
            self.lateness.append(round(lateness * 1000, 3))

    def add(self, **deltas: int) -> None:
        with self.lock:
            counts = self.counts
            for name, delta in deltas.items():
                counts[name] += delta

    def win(self, attempt: int) -> None:
        with self.lock:
            self.wins[attempt] = self.wins.get(attempt, 0) + 1
            self.counts["batches_succeeded"] += 1

    def snapshot(self, tokens: float | None, lag: float) -> HedgingCounters:
        with self.lock:
            return HedgingCounters(
                **self.counts,
                wins_by_attempt=dict(sorted(self.wins.items())),
                tokens_available=tokens,
                client_lag_ms=round(lag * 1000, 1),
                hedge_lateness_ms=tuple(self.lateness),
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
    summed = {f: sum(getattr(p, f) for p in parts) for f in _COUNTS}
    return HedgingCounters(
        **summed,
        wins_by_attempt=dict(sorted(wins.items())),
        tokens_available=min(tokens) if tokens else None,
        client_lag_ms=max(p.client_lag_ms for p in parts),
        hedge_lateness_ms=tuple(x for p in parts for x in p.hedge_lateness_ms),
    )
