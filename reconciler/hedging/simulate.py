"""Predict what a hedging profile does to publish latency, from a latency
distribution, with the publisher's (and the official clients') semantics.

Model (docs/hedging.md), without errors: every attempt's latency is drawn
independently from the distribution; one token bucket, empty at the start, in
thousandths; a hedge check a hedge delay after attempt 0 and after each hedge
spends a token and sends a hedge, or finds none and drops the batch's hedging; a
hedge slower than min(time left, 10 s) fails; the first answer completes the batch
and refills the bucket. Batches arrive at `rate` per second (open loop, the token
bucket shared by the batches in flight together), or with `rate=None` one after
another. Out: latency percentiles (from each batch's start), extra requests per
batch, and the share of batches a hedge answered first (each may be stored twice:
the original it beat is cancelled, and a cancel does not undo a stored publish).
Pure Python: `reconcile hedging advise` imports no google or gRPC.

What the client adds, optional inputs measured at the client:

- `overhead`: time a batch takes at the client beyond the service's own latency
  (the round trip, serialisation, noticing the answer): the service's
  `send_request_latencies` does not include it, the publisher's callback does. One
  draw is added to each batch's first answer. It does not move the hedge checks'
  view: the publisher's local probe (lag.py) lets the client notice an answer that
  has arrived before it decides, so the client's own slowness is not hedged.
- `hedge_lag`: how late a hedge check runs after its hedge delay has passed (the
  timer thread's lateness, the local probe; the publisher's `hedge_lateness_ms`
  counter measures it). One draw is added to each check.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.hedging.distribution import LatencyDistribution
from reconciler.hedging.profile import DEFAULT_TOTAL_TIMEOUT_MS, HedgingProfile
from reconciler.hedging.tokens import SCALE, TOKEN, refill_units

HEDGE_TIMEOUT_CAP_MS = 10_000.0  # attempts.HEDGE_TIMEOUT_CAP, without importing gRPC
_DONE, _CHECK = 0, 1  # at the same instant an answer comes before a hedge check


@dataclass(frozen=True)
class Outcome:
    hedge_delay_ms: int | None  # None: hedging off
    p50_ms: float
    p99_ms: float
    p999_ms: float
    extra_fraction: float  # hedged requests per batch
    dropped_fraction: float  # batches whose hedge found no token (and was dropped)
    latencies_ms: tuple[float, ...]  # sorted, for the CDF plot
    # Batches a hedge answered first: their cancelled original may be stored too, so
    # each can reach subscribers twice, under two message IDs.
    won_fraction: float = 0.0


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest rank: the value at or below which p% of the values fall."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def as_distribution(latencies: LatencyDistribution | Sequence[float]) -> LatencyDistribution:
    if isinstance(latencies, LatencyDistribution):
        return latencies
    return LatencyDistribution.from_samples(latencies)


def simulate(
    latencies: LatencyDistribution | Sequence[float],
    profile: HedgingProfile | None,
    batches: int = 20_000,
    seed: int = 2026,
    rate: float | None = None,
    total_timeout_ms: float = DEFAULT_TOTAL_TIMEOUT_MS,
    overhead: LatencyDistribution | Sequence[float] | None = None,
    hedge_lag: LatencyDistribution | Sequence[float] | None = None,
) -> Outcome:
    """`profile=None`: one attempt per batch (hedging off). `rate`: batches per second
    (None: one after another). `overhead`, `hedge_lag`: milliseconds the client adds
    to each batch's answer and to each hedge check (module docstring)."""
    draw = as_distribution(latencies).sampler(random.Random(seed))
    noticed = as_distribution(overhead).sampler(random.Random(seed + 1)) if overhead else None
    late = as_distribution(hedge_lag).sampler(random.Random(seed + 2)) if hedge_lag else None
    if profile is None:
        return _outcome(None, sorted(draw() + (noticed() if noticed else 0.0)
                                     for _ in range(batches)), 0, 0, batches)
    delay = float(profile.hedge_delay_ms)
    cap, refill = profile.max_tokens * SCALE, refill_units(profile.refill_ratio)
    gap = 1000.0 / rate if rate else None
    tokens = extra = dropped = won = 0
    start: list[float] = []
    done: list[float] = []  # each batch's earliest answer so far
    finished: list[bool] = []
    hedge_first: list[bool] = []  # each batch's earliest answer so far is a hedge's
    results: list[float] = []
    events: list[tuple[float, int, int]] = []

    def begin(at: float) -> None:
        i = len(start)
        start.append(at)
        done.append(at + draw())
        finished.append(False)
        hedge_first.append(False)
        heapq.heappush(events, (done[i], _DONE, i))
        check = at + delay + (late() if late else 0.0)
        if done[i] > check:
            heapq.heappush(events, (check, _CHECK, i))

    if gap is None:
        begin(0.0)
    else:
        for i in range(batches):
            begin(i * gap)
    while events:
        t, kind, i = heapq.heappop(events)
        if kind == _DONE:
            if finished[i] or t != done[i]:
                continue  # an answer a hedge beat
            finished[i] = True
            won += hedge_first[i]
            tokens = min(cap, tokens + refill)
            answered = t - start[i] + (noticed() if noticed else 0.0)
            results.append(min(answered, total_timeout_ms))  # else it failed
            if gap is None and len(start) < batches:
                begin(t)
            continue
        left = start[i] + total_timeout_ms - t
        if finished[i] or t >= done[i] or left <= 0:
            continue
        if tokens < TOKEN:
            dropped += 1  # no more hedges for this batch
            continue
        tokens -= TOKEN
        extra += 1
        latency = draw()
        if latency <= min(HEDGE_TIMEOUT_CAP_MS, left) and t + latency < done[i]:
            done[i] = t + latency
            hedge_first[i] = True
            heapq.heappush(events, (done[i], _DONE, i))
        check = t + delay + (late() if late else 0.0)
        if done[i] > check:
            heapq.heappush(events, (check, _CHECK, i))
    results.sort()
    return _outcome(profile.hedge_delay_ms, results, extra, dropped, batches, won)


def _outcome(
    delay: int | None, results: list[float], extra: int, dropped: int, batches: int,
    won: int = 0,
) -> Outcome:
    return Outcome(
        hedge_delay_ms=delay,
        p50_ms=percentile(results, 50),
        p99_ms=percentile(results, 99),
        p999_ms=percentile(results, 99.9),
        extra_fraction=extra / batches,
        dropped_fraction=dropped / batches,
        latencies_ms=tuple(results),
        won_fraction=won / batches,
    )
