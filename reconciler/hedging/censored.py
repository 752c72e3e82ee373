"""One attempt's latency, rebuilt from what the service records of a topic whose
publishers hedge. Pure Python: the advisor imports no google or gRPC.

On such a topic the successful calls no longer hold the tail: a slow original is
cancelled once its hedge answers, and its call is recorded as `cancelled` with the
time it ran until then. Each cancelled (or deadline-passed) attempt is an
observation cut short: its latency is known only to exceed the time recorded.
Every attempt, original or hedge, draws its latency from the same distribution
(the simulator's model), and when an attempt is cancelled depends on the *other*
attempt's latency, not on its own, so the cut is independent of what it hides:
the conditions under which the Kaplan–Meier estimator recovers the distribution
from completed and cut-short observations together.

The metric is a histogram, so the estimate is the life-table (actuarial) form of
Kaplan–Meier over its buckets: in each bucket, of the attempts still running at
its lower bound, the completed ones end there, and the ones cut short inside it
count as running for half of it. The completed attempts keep their place within
each bucket (the band the success histogram was fitted to); the share of the
attempts still running after the last completed one (every attempt that slow was
cut short) has no observed end: it is put at the upper bound of the last bucket
that holds a cut-short attempt, a lower bound of where it ends, and reported as
`unresolved` so the advice can say its figure is a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reconciler.hedging.distribution import Bucket, LatencyDistribution

# Reconstructed shares are held as integer bucket counts: shares times this.
WEIGHT = 1_000_000


@dataclass(frozen=True)
class Reconstruction:
    """The latency distribution of one attempt as if nothing cut it short."""

    latencies: LatencyDistribution
    completed: int  # attempts that ended with an answer
    cut_short: int  # attempts cancelled or past their deadline
    unresolved: float  # share of attempts slower than every completed one
    unresolved_above_ms: float  # where that share is put (a lower bound)


def reconstruct(completed: LatencyDistribution, cut: LatencyDistribution) -> Reconstruction:
    """`completed`: the successful calls' latencies; `cut`: the cancelled and
    deadline-passed ones, each the time it ran. Without cut-short calls, the
    completed distribution itself."""
    if not cut.count:
        return Reconstruction(completed, completed.count, 0, 0.0, 0.0)
    events = _by_interval(completed)
    censored = _by_interval(cut)
    edges = sorted(set(events) | set(censored))
    at_risk = float(completed.count + cut.count)
    survival = 1.0
    shares: list[tuple[tuple[float, float], float]] = []
    for edge in edges:
        d = sum(b.count for b in events.get(edge, ()))
        c = sum(b.count for b in censored.get(edge, ()))
        exposed = at_risk - c / 2
        if d and exposed > 0:
            ended = survival * min(1.0, d / exposed)
            shares.append((edge, ended))
            survival -= ended
        at_risk -= d + c
    buckets: list[Bucket] = []
    for edge, share in shares:
        group = events[edge]
        total = sum(b.count for b in group)
        for b in group:
            weight = round(share * WEIGHT * b.count / total)
            if weight > 0:
                buckets.append(replace(b, count=weight))
    unresolved = max(0.0, survival)
    above = max(hi if hi > lo else lo for lo, hi in censored)
    if unresolved * WEIGHT >= 1:
        buckets.append(Bucket(above, above, round(unresolved * WEIGHT)))
    return Reconstruction(
        LatencyDistribution(samples=(), buckets=tuple(buckets)),
        completed.count,
        cut.count,
        unresolved,
        above,
    )


def _by_interval(dist: LatencyDistribution) -> dict[tuple[float, float], list[Bucket]]:
    """The histogram's buckets by (lower, upper) bound; loose samples (a file's) as
    buckets of their own value."""
    out: dict[tuple[float, float], list[Bucket]] = {}
    for b in dist.buckets:
        out.setdefault((b.lo, b.hi), []).append(b)
    for x in dist.samples:
        out.setdefault((x, x), []).append(Bucket(x, x, 1))
    return out
