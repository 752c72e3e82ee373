"""censored.reconstruct: one attempt's latency from completed and cut-short calls
(the life-table Kaplan-Meier over a histogram's buckets), on histograms whose
answer is known."""

from __future__ import annotations

import random

from reconciler.hedging.censored import reconstruct
from reconciler.hedging.distribution import LatencyDistribution
from reconciler.hedging.simulate import percentile

BOUNDS = [1.4**i / 1000 for i in range(1, 67)]  # the local server's buckets, in ms


def histogram(values: list[float]) -> LatencyDistribution:
    counts = [0] * (len(BOUNDS) + 1)
    for v in values:
        counts[next((i for i, b in enumerate(BOUNDS) if v < b), len(BOUNDS))] += 1
    return LatencyDistribution.from_buckets(BOUNDS, counts, geometric=True)


def p99(dist: LatencyDistribution) -> float:
    draw = dist.sampler(random.Random(7))
    return percentile(sorted(draw() for _ in range(50_000)), 99)


def attempts(rng: random.Random, n: int) -> list[float]:
    """5 ms, or 3% at 1.5 s: the issue's shape."""
    return [5.0 + rng.random() * 40 + (1500.0 if rng.random() < 0.03 else 0.0)
            for _ in range(n)]


def test_without_cut_short_calls_the_completed_ones_are_the_answer() -> None:
    completed = histogram(attempts(random.Random(1), 2000))
    rebuilt = reconstruct(completed, LatencyDistribution())
    assert rebuilt.latencies is completed and rebuilt.unresolved == 0.0


def test_the_tail_the_cancels_hid_comes_back() -> None:
    """Each attempt is cut at a time independent of its own latency (the other
    attempt's): most slow ones are cancelled at ~100-150 ms, a few complete."""
    rng = random.Random(2)
    truth = attempts(rng, 20_000)
    done, cut = [], []
    for latency in truth:
        cancel_at = 100.0 + rng.random() * 50 if rng.random() < 0.9 else float("inf")
        (done if latency <= cancel_at else cut).append(min(latency, cancel_at))
    completed_only = p99(histogram(done))
    rebuilt = reconstruct(histogram(done), histogram(cut))
    assert completed_only < 100  # the successes alone have lost the tail
    assert 0.95 * 1505 <= p99(rebuilt.latencies) <= 1.6 * 1545  # back in its bucket
    assert rebuilt.unresolved == 0.0
    assert (rebuilt.completed, rebuilt.cut_short) == (len(done), len(cut))


def test_a_tail_no_attempt_completed_is_a_lower_bound_said_so() -> None:
    rng = random.Random(3)
    truth = attempts(rng, 5_000)
    done = [x for x in truth if x < 120]
    cut = [120.0 for x in truth if x >= 120]  # every slow attempt cancelled at 120 ms
    rebuilt = reconstruct(histogram(done), histogram(cut))
    assert abs(rebuilt.unresolved - len(cut) / len(truth)) < 0.002
    assert 120 <= rebuilt.unresolved_above_ms <= 120 * 1.4
    assert p99(rebuilt.latencies) == rebuilt.unresolved_above_ms
