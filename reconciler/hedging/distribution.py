"""A publish latency distribution to draw attempts from: observed samples, a
histogram's buckets (Cloud Monitoring's `topic/send_request_latencies` is one), or
both. Pure Python: the advisor imports no google or gRPC.

A bucket's draws are spread across it, evenly, or geometrically for exponential
buckets; the overflow bucket has no upper bound, so its draws sit on its lower bound.
Where the histogram also gives its mean and sum of squared deviations (Cloud
Monitoring's distributions do), the draws of every bucket are narrowed to a band
(one position and one width for the whole histogram) until the reconstruction has
that mean and variance: a p99 inside a wide bucket (the service's x1.4 bounds) is
then read where the observations were, not spread across the bucket's width.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

_STEPS = 32  # midpoints integrating a bucket's moments
_FIT_ROUNDS = 30  # bisection rounds per parameter


@dataclass(frozen=True)
class Bucket:
    """`count` observations between `lo` and `hi` milliseconds."""

    lo: float
    hi: float
    count: int
    geometric: bool = False
    # Draws fill the band [centre - width/2, centre + width/2] of the bucket (fractions
    # of its way through): the whole bucket by default.
    centre: float = 0.5
    width: float = 1.0

    def at(self, f: float) -> float:
        """The latency at fraction `f` (0 to 1) of the way through the bucket's band."""
        lo, hi = self.lo, self.hi
        f = self.centre + self.width * (f - 0.5)
        if self.geometric and lo > 0 and hi > lo:
            return float(lo * (hi / lo) ** f)
        return lo + (hi - lo) * f

    def moments(self) -> tuple[float, float]:
        """The mean and mean square of the bucket's draws."""
        if self.hi <= self.lo:
            return self.lo, self.lo * self.lo
        xs = [self.at((i + 0.5) / _STEPS) for i in range(_STEPS)]
        return sum(xs) / _STEPS, sum(x * x for x in xs) / _STEPS


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

    def fitted(
        self, mean: float, sum_of_squared_deviation: float | None = None
    ) -> LatencyDistribution:
        """The same counts, every bucket's draws narrowed to one band (the same
        position and width in every bucket) so that the reconstruction has `mean` and,
        when given, the variance the sum of squared deviations says, as close as the
        buckets allow. Without it the band is as wide as its position permits."""
        n = self.count
        if not self.buckets or not n or not math.isfinite(mean) or mean <= 0:
            return self

        def with_band(centre: float, width: float) -> LatencyDistribution:
            bent = tuple(replace(b, centre=centre, width=width) for b in self.buckets)
            return LatencyDistribution(self.samples, bent)

        def centred(width: float) -> LatencyDistribution:
            lo, hi = width / 2, 1 - width / 2  # the band's centres that fit the bucket
            for _ in range(_FIT_ROUNDS):
                mid = (lo + hi) / 2
                if with_band(mid, width).mean() < mean:
                    lo = mid
                else:
                    hi = mid
            return with_band((lo + hi) / 2, width)

        ssd = sum_of_squared_deviation
        if ssd is None or not math.isfinite(ssd) or ssd < 0:
            lo, hi = 0.0, 1.0  # the widest band whose centre reaches the mean
            for _ in range(_FIT_ROUNDS):
                mid = (lo + hi) / 2
                trial = centred(mid)
                if abs(trial.mean() - mean) <= 1e-6 * mean:
                    lo = mid
                else:
                    hi = mid
            return centred(lo)
        variance = ssd / n
        lo, hi = 0.0, 1.0
        for _ in range(_FIT_ROUNDS):
            mid = (lo + hi) / 2
            if centred(mid).variance() < variance:
                lo = mid
            else:
                hi = mid
        return centred((lo + hi) / 2)

    def mean(self) -> float:
        """The mean of the draws (each observation equally likely)."""
        return self._moments()[0]

    def variance(self) -> float:
        mean, square = self._moments()
        return max(0.0, square - mean * mean)

    def _moments(self) -> tuple[float, float]:
        n = self.count
        if not n:
            return 0.0, 0.0
        first = sum(self.samples)
        second = sum(x * x for x in self.samples)
        for b in self.buckets:
            m1, m2 = b.moments()
            first += m1 * b.count
            second += m2 * b.count
        return first / n, second / n

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
