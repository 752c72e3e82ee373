"""A publish latency distribution to draw attempts from: observed samples, a
histogram's buckets (Cloud Monitoring's `topic/send_request_latencies` is one), or
both. Pure Python: the advisor imports no google or gRPC.

A bucket's draws are spread across it, evenly, or geometrically for exponential
buckets; the overflow bucket has no upper bound, so its draws sit on its lower bound.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bucket:
    """`count` observations between `lo` and `hi` milliseconds."""

    lo: float
    hi: float
    count: int
    geometric: bool = False

    def at(self, f: float) -> float:
        """The latency at fraction `f` (0 to 1) of the way through the bucket."""
        lo, hi = self.lo, self.hi
        if self.geometric and lo > 0 and hi > lo:
            return float(lo * (hi / lo) ** f)
        return lo + (hi - lo) * f


def buckets_from_bounds(
    bounds: Sequence[float], counts: Sequence[int], geometric: bool = False
) -> list[Bucket]:
    """Buckets of a histogram with n - 1 finite `bounds` between its n `counts`
    (underflow from 0, ..., overflow at the last bound), as Cloud Monitoring and
    Prometheus lay them out."""
    out = []
    for i, count in enumerate(counts):
        if count <= 0:
            continue
        lo = float(bounds[i - 1]) if i > 0 else 0.0
        hi = float(bounds[i]) if i < len(bounds) else lo
        out.append(Bucket(lo, hi, int(count), geometric))
    return out


@dataclass(frozen=True)
class LatencyDistribution:
    samples: tuple[float, ...] = ()
    buckets: tuple[Bucket, ...] = ()

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> LatencyDistribution:
        return cls(samples=tuple(samples))

    @classmethod
    def from_buckets(
        cls, bounds: Sequence[float], counts: Sequence[int], geometric: bool = False
    ) -> LatencyDistribution:
        return cls(buckets=tuple(buckets_from_bounds(bounds, counts, geometric)))

    def __add__(self, other: LatencyDistribution) -> LatencyDistribution:
        return LatencyDistribution(self.samples + other.samples, self.buckets + other.buckets)

    @property
    def count(self) -> int:
        """How many observations it holds."""
        return len(self.samples) + sum(b.count for b in self.buckets)

    def sampler(self, rng: random.Random) -> Callable[[], float]:
        """A function drawing one latency (ms) per call, each observation equally likely."""
        samples, buckets = self.samples, self.buckets
        if not samples and not buckets:
            raise ValueError("no latency samples")
        if not buckets:
            return lambda: rng.choice(samples)
        n = len(samples)
        ends = list(itertools.accumulate((b.count for b in buckets), initial=n))[1:]
        total = ends[-1]
        uniform = rng.random

        def draw() -> float:
            u = uniform() * total
            if u < n:
                return samples[int(u)]
            i = bisect.bisect_right(ends, u)
            return buckets[min(i, len(buckets) - 1)].at(uniform())

        return draw
