"""A publish latency distribution to draw attempts from: observed samples, a
histogram's buckets (Cloud Monitoring's `topic/send_request_latencies` is one), or
both. Pure Python: the advisor imports no google or gRPC.

A bucket's draws are spread across it, evenly, or geometrically for exponential
buckets; the overflow bucket has no upper bound, so its draws sit on its lower bound.
Where the histogram also gives its mean (Cloud Monitoring's distributions do), the
draws' position within every bucket is bent (fraction f -> f**k, one k for the whole
histogram) until the reconstruction has that mean: a p99 inside a wide bucket (the
service's x1.4 bounds) is then read where the observations were, not spread across
the bucket's width.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

_MEAN_STEPS = 64  # midpoints integrating a geometric bucket's mean
_FIT_ROUNDS = 60  # bisection rounds on log k
_K_RANGE = (1e-3, 1e3)


@dataclass(frozen=True)
class Bucket:
    """`count` observations between `lo` and `hi` milliseconds."""

    lo: float
    hi: float
    count: int
    geometric: bool = False
    skew: float = 1.0  # draws at fraction f**skew: above 1 towards lo, below towards hi

    def at(self, f: float) -> float:
        """The latency at fraction `f` (0 to 1) of the way through the bucket."""
        lo, hi = self.lo, self.hi
        if self.skew != 1.0:
            f = f**self.skew
        if self.geometric and lo > 0 and hi > lo:
            return float(lo * (hi / lo) ** f)
        return lo + (hi - lo) * f

    def mean(self) -> float:
        """The mean of the bucket's draws."""
        if self.hi <= self.lo:
            return self.lo
        if not (self.geometric and self.lo > 0):
            return self.lo + (self.hi - self.lo) / (self.skew + 1)
        return sum(self.at((i + 0.5) / _MEAN_STEPS) for i in range(_MEAN_STEPS)) / _MEAN_STEPS


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

    def with_mean(self, mean: float) -> LatencyDistribution:
        """The same counts with every bucket's draws bent (one skew for all) so that
        the distribution's mean is `mean`, as close as the buckets allow."""
        if not self.buckets or not math.isfinite(mean) or mean <= 0:
            return self

        def total(k: float) -> float:
            return sum(replace(b, skew=k).mean() * b.count for b in self.buckets)

        fixed = sum(self.samples)
        target = mean * self.count - fixed
        lo, hi = (math.log(k) for k in _K_RANGE)  # a larger k: a smaller mean
        for _ in range(_FIT_ROUNDS):
            mid = (lo + hi) / 2
            if total(math.exp(mid)) > target:
                lo = mid
            else:
                hi = mid
        k = math.exp((lo + hi) / 2)
        return LatencyDistribution(self.samples, tuple(replace(b, skew=k) for b in self.buckets))

    def mean(self) -> float:
        """The mean of the draws (each observation equally likely)."""
        n = self.count
        return (sum(self.samples) + sum(b.mean() * b.count for b in self.buckets)) / n if n else 0.0

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
