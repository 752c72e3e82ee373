"""Simulate hedging over observed publish latencies, to choose a hedge delay.

Model (the publisher's algorithm (docs/hedging.md), without errors): every
attempt's latency is drawn independently from the samples; batches run one after
another against one token bucket that starts full. An attempt still unanswered a
hedge delay after the latest attempt was sent gets a hedge if a whole token is
left (one token each); the batch completes with its first answer, which refills
the bucket by the refill ratio. Out: latency percentiles and extra requests per
batch. Pure Python: `reconcile hedging advise` imports no google or gRPC.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.hedging.profile import HedgingProfile

MAX_ATTEMPTS = 64  # a batch never has more in the publisher either (tokens run out)


@dataclass(frozen=True)
class Outcome:
    hedge_delay_ms: int | None  # None: hedging off
    p50_ms: float
    p99_ms: float
    p999_ms: float
    extra_fraction: float  # hedged requests per batch
    throttled_fraction: float  # batches that wanted a hedge and found no token
    latencies_ms: tuple[float, ...]  # sorted, for the CDF plot


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest rank, as the benchmark computes it."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def simulate(
    samples_ms: Sequence[float],
    profile: HedgingProfile | None,
    batches: int = 20_000,
    seed: int = 2026,
) -> Outcome:
    """`profile=None` draws one attempt per batch (hedging off)."""
    if not samples_ms:
        raise ValueError("no latency samples")
    rng = random.Random(seed)
    draw = rng.choice
    results: list[float] = []
    extra = throttled = 0
    if profile is None:
        results = [draw(samples_ms) for _ in range(batches)]
    else:
        delay = float(profile.hedge_delay_ms)
        cap = float(profile.max_tokens)
        refill = profile.refill_ratio
        tokens = cap
        for _ in range(batches):
            done = draw(samples_ms)  # when the first answer arrives
            sent = 0.0  # when the latest attempt was sent
            wanted = False
            while sent + delay < done and (sent + delay) / delay < MAX_ATTEMPTS:
                if tokens < 1.0:
                    wanted = True
                    break
                tokens -= 1.0
                extra += 1
                sent += delay
                done = min(done, sent + draw(samples_ms))
            throttled += wanted
            results.append(done)
            tokens = min(cap, tokens + refill)
    results.sort()
    return Outcome(
        hedge_delay_ms=None if profile is None else profile.hedge_delay_ms,
        p50_ms=percentile(results, 50),
        p99_ms=percentile(results, 99),
        p999_ms=percentile(results, 99.9),
        extra_fraction=extra / batches,
        throttled_fraction=throttled / batches,
        latencies_ms=tuple(results),
    )
