"""Cloud Monitoring time series as plain values, read through google-cloud-monitoring's
`MetricServiceClient` (the local server serves the same `ListTimeSeries`).

Metrics are advice, not inputs that decide a change: where they cannot be read (no
permission, Google's emulator serves no Monitoring API, a deadline) the reader raises
`MetricsUnavailable` with a reason a person can act on, so that callers show
"unknown (why)" and go on instead of failing.

    reader = backend.metrics()                       # MetricsReader or MetricsUnavailable
    reader.read(MetricQuery(project, metric_type, window_seconds=600,
                            resource={"topic_id": ("a", "b")},
                            aggregation=Aggregation(600, "ALIGN_MAX", "REDUCE_SUM",
                                                    ("metric.labels.region",))))
    -> list[Series]   (points newest first, as the API returns them)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions as gexc

from reconciler.backends.clients import close_client
from reconciler.backends.deadline import Deadline, call_options

PUBSUB_METRIC_PREFIX = "pubsub.googleapis.com/"
READ_PERMISSION = ("monitoring.timeSeries.list", "roles/monitoring.viewer")


class MetricsUnavailable(Exception):
    """Why a metric could not be read; `str()` is the reason, phrased to follow
    "unknown: ". `role` is the IAM role that would allow the read, when that is why."""

    def __init__(self, reason: str, role: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.role = role


@dataclass(frozen=True, slots=True)
class Aggregation:
    """One `Aggregation` of ListTimeSeries: the per-series aligner over
    `period_seconds`, then optionally a cross-series reducer grouped by fields."""

    period_seconds: int
    aligner: str
    reducer: str | None = None
    group_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MetricQuery:
    """A ListTimeSeries request over the last `window_seconds` (ending `end`, default
    now). `resource` and `labels` filter on resource and metric labels: a string is
    an equality, a tuple a `one_of(...)`."""

    project: str
    metric_type: str
    window_seconds: int
    resource: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    labels: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    aggregation: Aggregation | None = None
    end: float | None = None

    def filter_text(self) -> str:
        """The Monitoring filter: metric type, then each label condition, ANDed."""
        terms = [f"metric.type = {_quoted(self.metric_type)}"]
        terms += [_condition(f"resource.labels.{k}", v) for k, v in sorted(self.resource.items())]
        terms += [_condition(f"metric.labels.{k}", v) for k, v in sorted(self.labels.items())]
        return " AND ".join(terms)


@dataclass(frozen=True, slots=True)
class Distribution:
    """A distribution value as the service returned it, unchecked: `bucket_options`
    in the REST form (`{"exponentialBuckets": {"numFiniteBuckets": 66, ...}}`), the
    bounds never computed here (a consumer checks the value against the service's
    rules first: reconciler/hedging/histogram.py); `counts` one entry per bucket,
    a trailing run of zeros possibly left out."""

    count: int
    mean: float
    bucket_options: Mapping[str, Any]
    counts: tuple[int, ...]
    sum_of_squared_deviation: float = 0.0

    def rest(self) -> dict[str, Any]:
        """The value in the REST form (`distributionValue` of projects.timeSeries.list),
        the form an exported file holds."""
        return {
            "count": self.count,
            "mean": self.mean,
            "sumOfSquaredDeviation": self.sum_of_squared_deviation,
            "bucketOptions": dict(self.bucket_options),
            "bucketCounts": list(self.counts),
        }


@dataclass(frozen=True, slots=True)
class Point:
    start: float  # seconds since the epoch
    end: float
    value: int | float | Distribution


@dataclass(frozen=True, slots=True)
class Series:
    metric_type: str
    metric_labels: Mapping[str, str]
    resource_type: str
    resource_labels: Mapping[str, str]
    points: tuple[Point, ...]

    @property
    def latest(self) -> Point | None:
        return self.points[0] if self.points else None


class MetricsReader:
    """ListTimeSeries through a MetricServiceClient; every call ends within `timeout`."""

    def __init__(self, client: Any, timeout: float, endpoint: str) -> None:
        self._client = client
        self._deadline = Deadline(timeout, endpoint)
        self._options = call_options(timeout, client_retry=True)
        self.calls = 0

    def read(self, query: MetricQuery) -> list[Series]:
        """Every series the query selects (all pages), or MetricsUnavailable."""
        request = _request(query)
        started = time.monotonic()
        self.calls += 1
        try:
            return [
                _series(ts._pb)
                for ts in self._client.list_time_series(request=request, **self._options)
            ]
        except MetricsUnavailable:
            raise
        except Exception as exc:
            raise _unavailable(exc, query, self._deadline.expired(exc, started)) from None

    def close(self) -> None:
        close_client(self._client)


def open_reader(factory: Callable[[], tuple[Any, str]], timeout: float) -> MetricsReader:
    """A reader over the client `factory` builds (client, endpoint); a failure to
    build it (credentials, a missing library) is MetricsUnavailable."""
    try:
        client, endpoint = factory()
    except Exception as exc:
        raise MetricsUnavailable(
            f"cannot open the Cloud Monitoring client ({type(exc).__name__})"
        ) from None
    return MetricsReader(client, timeout, endpoint)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _condition(key: str, value: str | tuple[str, ...]) -> str:
    if isinstance(value, tuple):
        return f"{key} = one_of({', '.join(_quoted(v) for v in value)})"
    return f"{key} = {_quoted(value)}"


def _request(query: MetricQuery) -> dict[str, Any]:
    end = time.time() if query.end is None else query.end
    start = end - query.window_seconds
    request: dict[str, Any] = {
        "name": f"projects/{query.project}",
        "filter": query.filter_text(),
        "interval": {"start_time": _timestamp(start), "end_time": _timestamp(end)},
        "view": "FULL",
    }
    if query.aggregation is not None:
        agg = query.aggregation
        aggregation: dict[str, Any] = {
            "alignment_period": {"seconds": agg.period_seconds},
            "per_series_aligner": agg.aligner,
        }
        if agg.reducer is not None:
            aggregation["cross_series_reducer"] = agg.reducer
            aggregation["group_by_fields"] = list(agg.group_by)
        request["aggregation"] = aggregation
    return request


def _timestamp(seconds: float) -> dict[str, int]:
    whole = math.floor(seconds)
    return {"seconds": whole, "nanos": int((seconds - whole) * 1e9)}


def _seconds(ts: Any) -> float:
    return float(ts.seconds) + float(ts.nanos) / 1e9


def _series(pb: Any) -> Series:
    return Series(
        metric_type=pb.metric.type,
        metric_labels=dict(pb.metric.labels),
        resource_type=pb.resource.type,
        resource_labels=dict(pb.resource.labels),
        points=tuple(
            Point(_seconds(p.interval.start_time), _seconds(p.interval.end_time), _value(p.value))
            for p in pb.points
        ),
    )


def _value(value: Any) -> int | float | Distribution:
    kind = value.WhichOneof("value")
    if kind == "int64_value":
        return int(value.int64_value)
    if kind == "double_value":
        return float(value.double_value)
    if kind == "distribution_value":
        return _distribution(value.distribution_value)
    raise MetricsUnavailable(f"unexpected metric value type {kind!r}")


def _distribution(dist: Any) -> Distribution:
    return Distribution(
        count=int(dist.count),
        mean=float(dist.mean),
        bucket_options=_options(dist.bucket_options),
        counts=tuple(int(c) for c in dist.bucket_counts),
        sum_of_squared_deviation=float(dist.sum_of_squared_deviation),
    )


def _options(options: Any) -> dict[str, Any]:
    """BucketOptions in the REST form, each field as the message holds it."""
    kind = options.WhichOneof("options")
    if kind == "exponential_buckets":
        e = options.exponential_buckets
        return {"exponentialBuckets": {"numFiniteBuckets": int(e.num_finite_buckets),
                                       "growthFactor": float(e.growth_factor),
                                       "scale": float(e.scale)}}
    if kind == "linear_buckets":
        lin = options.linear_buckets
        return {"linearBuckets": {"numFiniteBuckets": int(lin.num_finite_buckets),
                                  "width": float(lin.width), "offset": float(lin.offset)}}
    if kind == "explicit_buckets":
        return {"explicitBuckets": {"bounds": [float(b) for b in options.explicit_buckets.bounds]}}
    return {}


def _unavailable(exc: Exception, query: MetricQuery, expired: bool) -> MetricsUnavailable:
    where = f"project {query.project}"
    if expired:
        return MetricsUnavailable(f"Cloud Monitoring did not answer in time for {where}")
    if isinstance(exc, gexc.PermissionDenied):
        permission, role = READ_PERMISSION
        return MetricsUnavailable(
            f"permission denied to read metrics in {where} (needs {permission}, e.g. role {role})",
            role=role,
        )
    if isinstance(exc, gexc.MethodNotImplemented):
        return MetricsUnavailable(
            f"the target serves no Cloud Monitoring API (e.g. Google's emulator) for {where}"
        )
    if isinstance(exc, gexc.Unauthenticated):
        return MetricsUnavailable(f"not authenticated to read metrics in {where}")
    if isinstance(exc, gexc.InvalidArgument):
        detail = getattr(exc, "message", None) or str(exc)
        return MetricsUnavailable(f"Cloud Monitoring refused the query for {where}: {detail}")
    code = getattr(getattr(exc, "grpc_status_code", None), "name", None) or type(exc).__name__
    return MetricsUnavailable(f"Cloud Monitoring failed for {where} ({code})")
