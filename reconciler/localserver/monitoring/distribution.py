"""Latency distributions as Cloud Monitoring reports them (`google.api.Distribution`):
count, mean, sum of squared deviations and counts per bucket, mergeable.

Buckets are exponential, like the service's latency distributions: bucket 0 holds
values below `SCALE` µs, bucket i (1..`FINITE`) holds [SCALE·GROWTH^(i-1),
SCALE·GROWTH^i), bucket FINITE+1 everything above. With 1 µs, x1.4 and 66 finite
buckets the last finite bound is about 72 minutes (past the longest injectable
delay). The service's own bounds for `send_request_latencies` are not documented:
clients read them off each point's `bucket_options`, as they must there too.
"""

from __future__ import annotations

import math
from typing import Any

SCALE = 1.0  # µs
GROWTH = 1.4
FINITE = 66
_LOG_GROWTH = math.log(GROWTH)


def bucket_of(value: float) -> int:
    if value < SCALE:
        return 0
    index = int(math.log(value / SCALE) / _LOG_GROWTH) + 1
    # Floating point near a bound: settle on the bucket whose range holds the value.
    if index > 1 and value < lower_bound(index):
        index -= 1
    elif value >= upper_bound(index):
        index += 1
    return min(index, FINITE + 1)


def lower_bound(index: int) -> float:
    return 0.0 if index == 0 else SCALE * GROWTH ** (index - 1)


def upper_bound(index: int) -> float:
    return math.inf if index > FINITE else SCALE * GROWTH**index


class Dist:
    """A distribution being built (values in µs)."""

    __slots__ = ("buckets", "count", "m2", "mean")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0  # sum of squared deviations from the mean
        self.buckets = [0] * (FINITE + 2)

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)
        self.buckets[bucket_of(value)] += 1

    def merge(self, other: Dist) -> Dist:
        """A new distribution holding both (neither changes)."""
        out = Dist()
        out.count = self.count + other.count
        if out.count:
            delta = other.mean - self.mean
            out.mean = self.mean + delta * other.count / out.count
            out.m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / out.count
        out.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        return out

    def percentile(self, p: float) -> float:
        """The p-th percentile (0-100), interpolated linearly within its bucket, as
        Monitoring's percentile aligners and reducers estimate it from buckets."""
        if not self.count:
            return 0.0
        rank = p / 100.0 * self.count
        seen = 0
        for index, n in enumerate(self.buckets):
            if not n:
                continue
            if seen + n >= rank:
                low, high = lower_bound(index), upper_bound(index)
                if math.isinf(high):
                    return low
                return low + (high - low) * max(0.0, rank - seen) / n
            seen += n
        return upper_bound(FINITE)

    def to_proto(self, out: Any) -> None:
        """Fill a `google.api.Distribution` (trailing empty buckets left out, as the
        service does: absent counts are zero)."""
        out.count = self.count
        out.mean = self.mean
        out.sum_of_squared_deviation = self.m2
        exponential = out.bucket_options.exponential_buckets
        exponential.num_finite_buckets = FINITE
        exponential.growth_factor = GROWTH
        exponential.scale = SCALE
        last = max((i for i, n in enumerate(self.buckets) if n), default=-1)
        out.bucket_counts.extend(self.buckets[: last + 1])
