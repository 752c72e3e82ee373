"""A topic's publish latencies as the service records them, for the advisor: Cloud
Monitoring's `topic/send_request_latencies` (DELTA DISTRIBUTION, µs) and
`topic/send_request_count` (DELTA INT64), read through the backend's one Monitoring
reader (reconciler/backends/metrics.py), never a second client.

    observe(reader, "projects/P/topics/T", window_seconds) -> Observed
        .latencies   LatencyDistribution (ms) of the successful Publish calls
        .cut_short   the same of the calls the client cancelled or whose deadline
                     passed: each the time it ran, an observation cut short
                     (censored.py rebuilds the tail from both)
        .calls       response code -> Publish calls in the window
        .rate        Publish calls per second over the minutes that had any

A metric that cannot be read raises the reader's `MetricsUnavailable`; a window with
no successful publish is `NoLatencies`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.backends.metrics import (
    PUBSUB_METRIC_PREFIX,
    Aggregation,
    Distribution,
    MetricQuery,
    MetricsReader,
    Series,
)
from reconciler.hedging.censored import Reconstruction, reconstruct
from reconciler.hedging.distribution import LatencyDistribution
from reconciler.names import split_topic_name

LATENCIES = f"{PUBSUB_METRIC_PREFIX}topic/send_request_latencies"
REQUESTS = f"{PUBSUB_METRIC_PREFIX}topic/send_request_count"
BY_CODE = ("metric.labels.response_code",)
SUCCESS = "success"
# A call the client abandoned; a deadline it set that passed.
CANCELLED = "cancelled"
DEADLINE_EXCEEDED = "deadline_exceeded"
CUT_SHORT = (CANCELLED, DEADLINE_EXCEEDED)
RATE_PERIOD_S = 60  # the service's sampling period, the shortest alignment it serves


class NoLatencies(Exception):
    """The window holds no successful Publish call of the topic."""


@dataclass(frozen=True)
class Observed:
    topic: str
    window_seconds: int
    latencies: LatencyDistribution
    calls: dict[str, int] = field(default_factory=dict)
    cut_short: LatencyDistribution = field(default_factory=LatencyDistribution)
    rate: float | None = None  # Publish calls per second while the topic was busy

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def fraction(self, code: str) -> float:
        total = self.total_calls
        return self.calls.get(code, 0) / total if total else 0.0

    @property
    def batch_rate(self) -> float | None:
        """Batches per second: `rate` counts every attempt (hedges too), a batch has
        one successful call."""
        if self.rate is None or not self.total_calls:
            return self.rate
        return self.rate * (self.calls.get(SUCCESS, 0) / self.total_calls or 1.0)

    def attempts(self) -> Reconstruction:
        """One attempt's latency, the cut-short calls read with the completed ones."""
        return reconstruct(self.latencies, self.cut_short)


def split_topic(topic: str) -> tuple[str, str]:
    """(project, topic ID) of `projects/P/topics/T`; ValueError saying what to write."""
    split = split_topic_name(topic)
    if split is None:
        raise ValueError(f"{topic!r} is not a topic name; write projects/PROJECT/topics/TOPIC")
    return split


def observe(reader: MetricsReader, topic: str, window_seconds: int) -> Observed:
    project, topic_id = split_topic(topic)
    resource = {"topic_id": topic_id}
    whole = Aggregation(window_seconds, "ALIGN_DELTA", "REDUCE_SUM", BY_CODE)
    latencies = reader.read(
        MetricQuery(project, LATENCIES, window_seconds, resource=resource, aggregation=whole)
    )
    per_minute = Aggregation(RATE_PERIOD_S, "ALIGN_DELTA", "REDUCE_SUM", BY_CODE)
    requests = reader.read(
        MetricQuery(project, REQUESTS, window_seconds, resource=resource, aggregation=per_minute)
    )
    dists = _of(latencies, (SUCCESS,))
    if not dists:
        raise NoLatencies(topic)
    out = LatencyDistribution()
    for d in dists:
        out += to_latencies(d)
    cut = LatencyDistribution()
    for d in _of(latencies, CUT_SHORT):
        cut += to_latencies(d)
    calls, rate = _calls(requests)
    return Observed(topic, window_seconds, out, calls, cut, rate)


def _of(series: list[Series], codes: tuple[str, ...]) -> list[Distribution]:
    return [
        p.value
        for s in series
        if s.metric_labels.get("response_code") in codes
        for p in s.points
        if isinstance(p.value, Distribution) and p.value.count
    ]


def to_latencies(dist: Distribution) -> LatencyDistribution:
    """A µs distribution (bounds: upper bound per bucket, the overflow's +inf) as
    milliseconds; exponential bounds are spread geometrically within each bucket,
    narrowed to the distribution's own mean and variance (distribution.py)."""
    finite = [b / 1000.0 for b in dist.bounds if math.isfinite(b)]
    out = LatencyDistribution.from_buckets(finite, dist.counts, _geometric(finite))
    return out.fitted(dist.mean / 1000.0, dist.sum_of_squared_deviation / 1e6)


def _geometric(bounds: Sequence[float]) -> bool:
    """Bounds growing by one factor (Monitoring's exponential buckets)."""
    if len(bounds) < 3 or bounds[0] <= 0:
        return False
    growth = bounds[1] / bounds[0]
    return growth > 1 and all(
        math.isclose(b / a, growth, rel_tol=1e-6) for a, b in itertools.pairwise(bounds)
    )


def _calls(series: list[Series]) -> tuple[dict[str, int], float | None]:
    calls: dict[str, int] = {}
    per_minute: dict[float, int] = {}
    for s in series:
        code = s.metric_labels.get("response_code", "unknown")
        for p in s.points:
            if isinstance(p.value, int) and p.value > 0:
                calls[code] = calls.get(code, 0) + p.value
                per_minute[p.end] = per_minute.get(p.end, 0) + p.value
    if not per_minute:
        return calls, None
    return calls, sum(per_minute.values()) / (len(per_minute) * RATE_PERIOD_S)
