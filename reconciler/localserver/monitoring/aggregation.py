"""Time series as `ListTimeSeries` returns them: raw, aligned per series, reduced across
series. The subset served (the residency report and the hedging advisor need no
more):

| metric | aligners | result |
| --- | --- | --- |
| GAUGE INT64 (by-region gauges) | ALIGN_MAX, ALIGN_MIN, ALIGN_SUM, ALIGN_NEXT_OLDER | GAUGE INT64 |
| | ALIGN_MEAN | GAUGE DOUBLE |
| DELTA INT64 (send_request_count) | ALIGN_DELTA, ALIGN_SUM | DELTA INT64 |
| | ALIGN_RATE | GAUGE DOUBLE (per second) |
| DELTA DISTRIBUTION (send_request_latencies) | ALIGN_DELTA, ALIGN_SUM | DELTA DISTRIBUTION |
| | ALIGN_MEAN, ALIGN_PERCENTILE_99/95/50/05 | GAUGE DOUBLE |

Reducers (after an aligner): REDUCE_NONE, REDUCE_SUM, REDUCE_MAX, REDUCE_MIN,
REDUCE_COUNT (kind kept), REDUCE_MEAN and, over distributions,
REDUCE_PERCENTILE_99/95/50/05 (GAUGE DOUBLE), grouped by `group_by_fields`
(`metric.label.KEY`, `resource.label.KEY`); a reduced series keeps its grouped
labels and `project_id`.

Aligned windows end at the interval's end time and every alignment period before
it: (end - k·P - P, end - k·P]. Windows without data have no point; points come
newest first, as the service returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reconciler.localserver.api.status import invalid
from reconciler.localserver.monitoring.distribution import Dist
from reconciler.localserver.monitoring.metric_catalog import Metric

NS = 1_000_000_000
RAW_PERIOD_NS = 60 * NS  # the service samples every 60 s: a raw DELTA point per minute
MIN_ALIGNMENT_S = 60

Value = int | float | Dist


@dataclass
class Point:
    start_ns: int
    end_ns: int
    value: Value


@dataclass
class Series:
    metric: Metric
    metric_labels: dict[str, str]
    resource_labels: dict[str, str]
    kind: str
    value_type: str
    unit: str
    points: list[Point] = field(default_factory=list)


@dataclass
class Samples:
    """What a source knows of one series: (time, value) pairs, values being a gauge's
    reading or one Publish call's contribution (1, or its latency in µs)."""

    metric: Metric
    metric_labels: dict[str, str]
    resource_labels: dict[str, str]
    samples: list[tuple[int, float]]


def _sum(values: list[Value]) -> Value:
    if isinstance(values[0], Dist):
        out = Dist()
        for v in values:
            assert isinstance(v, Dist)
            out = out.merge(v)
        return out
    return sum(values)  # type: ignore[arg-type]


def _mean(values: list[Value]) -> float:
    if isinstance(values[0], Dist):
        merged = _sum(values)
        assert isinstance(merged, Dist)
        return merged.mean
    return float(sum(values)) / len(values)  # type: ignore[arg-type]


def _percentile(p: float) -> Callable[[list[Value]], float]:
    def get(values: list[Value]) -> float:
        merged = _sum(values)
        assert isinstance(merged, Dist)
        return merged.percentile(p)

    return get


def _dist(values: Iterable[float]) -> Dist:
    out = Dist()
    for v in values:
        out.add(v)
    return out


# How a window's numeric samples (in time order) become one INT64 value.
_FOLDS: dict[str, Callable[[list[float]], float]] = {
    "ALIGN_MAX": max,
    "ALIGN_MIN": min,
    "ALIGN_SUM": sum,
    "ALIGN_DELTA": sum,
    "ALIGN_NEXT_OLDER": lambda v: v[-1],
}
# The aligners served for each (kind, value type) of metric.
_ALIGNERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("GAUGE", "INT64"): ("ALIGN_MAX", "ALIGN_MIN", "ALIGN_SUM", "ALIGN_MEAN", "ALIGN_NEXT_OLDER"),
    ("DELTA", "INT64"): ("ALIGN_DELTA", "ALIGN_SUM", "ALIGN_RATE"),
    ("DELTA", "DISTRIBUTION"): (
        "ALIGN_DELTA",
        "ALIGN_SUM",
        "ALIGN_MEAN",
        "ALIGN_PERCENTILE_99",
        "ALIGN_PERCENTILE_95",
        "ALIGN_PERCENTILE_50",
        "ALIGN_PERCENTILE_05",
    ),
}
_REDUCERS = (
    "REDUCE_NONE",
    "REDUCE_SUM",
    "REDUCE_MAX",
    "REDUCE_MIN",
    "REDUCE_COUNT",
    "REDUCE_MEAN",
    "REDUCE_PERCENTILE_99",
    "REDUCE_PERCENTILE_95",
    "REDUCE_PERCENTILE_50",
    "REDUCE_PERCENTILE_05",
)


def check_aggregation(metric: Metric, aligner: str, reducer: str, period_s: float) -> None:
    """INVALID_ARGUMENT for what is not served, naming what is."""
    if aligner != "ALIGN_NONE":
        allowed = _ALIGNERS[(metric.kind, metric.value_type)]
        if aligner not in allowed:
            raise invalid(
                f"The aligner {aligner} is not supported for {metric.type} ({metric.kind} "
                f"{metric.value_type}); supported: {', '.join(allowed)}."
            )
        if period_s < MIN_ALIGNMENT_S:
            raise invalid(
                f"aggregation.alignment_period must be at least {MIN_ALIGNMENT_S} seconds "
                f"with {aligner} (got {period_s:g} s)."
            )
    if reducer not in _REDUCERS:
        raise invalid(
            f"The reducer {reducer} is not supported here; supported: {', '.join(_REDUCERS)}."
        )
    if reducer != "REDUCE_NONE" and aligner == "ALIGN_NONE":
        raise invalid(
            f"The reducer {reducer} needs a per_series_aligner (and an alignment_period): "
            "series are reduced point by point, once aligned."
        )
    aligned_type = aligned_value_type(metric, aligner)
    if reducer.startswith("REDUCE_PERCENTILE") and aligned_type != "DISTRIBUTION":
        raise invalid(
            f"{reducer} is supported over distributions only (the aligned values of "
            f"{metric.type} are {aligned_type}); align with ALIGN_DELTA or ALIGN_SUM."
        )
    if reducer in ("REDUCE_MAX", "REDUCE_MIN") and aligned_type == "DISTRIBUTION":
        raise invalid(f"{reducer} does not take distributions; use REDUCE_PERCENTILE_99 etc.")


def aligned_value_type(metric: Metric, aligner: str) -> str:
    if aligner in ("ALIGN_MEAN", "ALIGN_RATE") or aligner.startswith("ALIGN_PERCENTILE"):
        return "DOUBLE"
    return metric.value_type


def raw(samples: Samples, now_ns: int) -> Series:
    """The series as stored: a gauge's reading, or one DELTA point per minute."""
    metric = samples.metric
    series = Series(
        metric,
        samples.metric_labels,
        samples.resource_labels,
        metric.kind,
        metric.value_type,
        metric.unit,
    )
    if metric.kind == "GAUGE":
        series.points = [Point(t, t, int(v)) for t, v in reversed(samples.samples)]
        return series
    minutes: dict[int, list[float]] = {}
    for t, v in samples.samples:
        minutes.setdefault(t // RAW_PERIOD_NS, []).append(v)
    for minute in sorted(minutes, reverse=True):
        start = minute * RAW_PERIOD_NS
        values = minutes[minute]
        value: Value = _dist(values) if metric.value_type == "DISTRIBUTION" else int(sum(values))
        series.points.append(Point(start, min(start + RAW_PERIOD_NS, now_ns), value))
    return series


def align(samples: Samples, aligner: str, period_ns: int, end_ns: int) -> Series:
    """One point per alignment window that holds samples (see the module docstring)."""
    metric = samples.metric
    windows: dict[int, list[float]] = {}
    for t, v in samples.samples:
        windows.setdefault((end_ns - t) // period_ns, []).append(v)
    value_type = aligned_value_type(metric, aligner)
    kind = "GAUGE"
    if aligner in ("ALIGN_DELTA", "ALIGN_SUM") and metric.kind == "DELTA":
        kind = "DELTA"
    unit = f"{metric.unit}/s" if aligner == "ALIGN_RATE" else metric.unit
    series = Series(metric, samples.metric_labels, samples.resource_labels, kind, value_type, unit)
    for k in sorted(windows):
        values = windows[k]
        window_end = end_ns - k * period_ns
        start = window_end - period_ns if kind == "DELTA" else window_end
        series.points.append(
            Point(start, window_end, _align_values(metric, aligner, values, period_ns))
        )
    return series


def _align_values(metric: Metric, aligner: str, values: list[float], period_ns: int) -> Value:
    if metric.value_type == "DISTRIBUTION":
        dist = _dist(values)
        if aligner == "ALIGN_MEAN":
            return dist.mean
        if aligner.startswith("ALIGN_PERCENTILE"):
            return dist.percentile(float(aligner.rsplit("_", 1)[1]))
        return dist
    if aligner == "ALIGN_RATE":
        return sum(values) / (period_ns / NS)
    if aligner == "ALIGN_MEAN":
        return float(sum(values)) / len(values)
    return int(_FOLDS[aligner](values))


def group_key_fields(metric: Metric, fields: Iterable[str]) -> list[tuple[str, str]]:
    """(scope, label) for each group_by field; INVALID_ARGUMENT for an unknown one."""
    out = []
    for name in fields:
        if name in ("metric.type", "resource.type"):
            continue
        for scope, labels in (("metric", metric.labels), ("resource", metric.resource_labels)):
            for word in ("label", "labels"):
                prefix = f"{scope}.{word}."
                if name.startswith(prefix):
                    label = name[len(prefix) :]
                    if label not in labels:
                        raise invalid(
                            f"group_by_fields: {metric.type} has no {scope} label {label!r} "
                            f"({scope} labels: {', '.join(labels)})."
                        )
                    out.append((scope, label))
                    break
            else:
                continue
            break
        else:
            raise invalid(
                f"group_by_fields: {name!r} is not supported (use metric.label.KEY or "
                "resource.label.KEY)."
            )
    return out


def reduce(series: list[Series], reducer: str, keys: list[tuple[str, str]]) -> list[Series]:
    """Cross-series reduction of aligned series, grouped by `keys`."""
    if reducer == "REDUCE_NONE" or not series:
        return series
    groups: dict[tuple[str, ...], list[Series]] = {}
    for s in series:
        key = tuple(
            (s.metric_labels if scope == "metric" else s.resource_labels).get(label, "")
            for scope, label in keys
        )
        groups.setdefault(key, []).append(s)
    out = []
    for key, members in groups.items():
        first = members[0]
        metric_labels = {
            label: v for (scope, label), v in zip(keys, key, strict=True) if scope == "metric"
        }
        resource_labels = {"project_id": first.resource_labels.get("project_id", "")}
        resource_labels.update(
            {label: v for (scope, label), v in zip(keys, key, strict=True) if scope == "resource"}
        )
        by_end: dict[int, list[Point]] = {}
        for s in members:
            for p in s.points:
                by_end.setdefault(p.end_ns, []).append(p)
        kind, value_type, fold = _reducer(reducer, first)
        reduced = Series(first.metric, metric_labels, resource_labels, kind, value_type, first.unit)
        for end in sorted(by_end, reverse=True):
            points = by_end[end]
            reduced.points.append(Point(points[0].start_ns, end, fold([p.value for p in points])))
        out.append(reduced)
    return out


def _reducer(reducer: str, first: Series) -> tuple[str, str, Callable[[list[Value]], Any]]:
    if reducer == "REDUCE_SUM":
        return first.kind, first.value_type, _sum
    if reducer == "REDUCE_MAX":
        return first.kind, first.value_type, max  # type: ignore[return-value]
    if reducer == "REDUCE_MIN":
        return first.kind, first.value_type, min  # type: ignore[return-value]
    if reducer == "REDUCE_COUNT":
        return first.kind, "INT64", len
    if reducer == "REDUCE_MEAN":
        return "GAUGE", "DOUBLE", _mean
    return "GAUGE", "DOUBLE", _percentile(float(reducer.rsplit("_", 1)[1]))
