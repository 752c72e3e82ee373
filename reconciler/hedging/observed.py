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
no successful publish is `NoLatencies`; a point that breaks Cloud Monitoring's
Distribution rules is `BadPoint` (checked by histogram.py, as a file's export is:
no advice is drawn from it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from reconciler.backends.metrics import (
    PUBSUB_METRIC_PREFIX,
    Aggregation,
    Distribution,
    MetricQuery,
    MetricsReader,
    Point,
    Series,
)
from reconciler.hedging import histogram
from reconciler.hedging.censored import Reconstruction, reconstruct
from reconciler.hedging.distribution import LatencyDistribution
from reconciler.hedging.histogram import HistogramError
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


class BadPoint(Exception):
    """A latency point the service returned breaks the Distribution rules: `where`
    names it (its response code and the end of its interval), `problem` the rule."""

    def __init__(self, where: str, problem: HistogramError) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


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
    for where, d in dists:
        out += to_latencies(d, where)
    cut = LatencyDistribution()
    for where, d in _of(latencies, CUT_SHORT):
        cut += to_latencies(d, where)
    calls, rate = _calls(requests)
    return Observed(topic, window_seconds, out, calls, cut, rate)


def _of(series: list[Series], codes: tuple[str, ...]) -> list[tuple[str, Distribution]]:
    """The distributions of the series with one of `codes`, each with where it is."""
    return [
        (_point_name(s, p), p.value)
        for s in series
        if s.metric_labels.get("response_code") in codes
        for p in s.points
        if isinstance(p.value, Distribution) and p.value.count
    ]


def _point_name(series: Series, point: Point) -> str:
    end = datetime.fromtimestamp(point.end, UTC).isoformat(timespec="seconds")
    code = series.metric_labels.get("response_code", "?")
    return f"the point of response_code {code} ending {end.replace('+00:00', 'Z')}"


def to_latencies(dist: Distribution, where: str = "the point") -> LatencyDistribution:
    """A µs distribution as milliseconds, once histogram.py has checked it (BadPoint
    if it breaks a rule); exponential bounds are spread geometrically within each
    bucket, narrowed to the distribution's own mean and variance (distribution.py)."""
    try:
        return histogram.read(dist.rest()).latencies(unit_ms=1e-3)
    except HistogramError as exc:
        raise BadPoint(where, exc) from None


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
