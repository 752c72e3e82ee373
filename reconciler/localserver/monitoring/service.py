"""`google.monitoring.v3.MetricService/ListTimeSeries` over the server's own state: the
by-region gauges of topics and subscriptions (`metric_catalog`), computed when read
from the backlogs (what `LocalServer.subscription_stats` / `topic_stats` give), and
the publish metrics `topic/send_request_count` and `topic/send_request_latencies`
from the recorded outcome of each Publish call (`api.outcomes`: response code, latency
with injected delay included; the last 10,000 calls).

Gauges have no history here: one reading, taken at the request's end time (or now,
if that is later), when the end time is at most a sampling period (60 s) ago;
intervals that end earlier get no gauge points. The filter language, aligners and
reducers served are those of `tsfilter` and `aggregation`; anything else is an
INVALID_ARGUMENT that names what is supported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

from google.api import metric_pb2

from reconciler.localserver.api import protos
from reconciler.localserver.api.outcomes import PublishOutcomes
from reconciler.localserver.api.paging import decode_token, encode_token, token_offset
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import invalid, suggestion
from reconciler.localserver.monitoring import aggregation, tsfilter
from reconciler.localserver.monitoring.aggregation import NS, Samples, Series
from reconciler.localserver.monitoring.distribution import Dist
from reconciler.localserver.monitoring.metric_catalog import (
    METRICS,
    Metric,
    response_class,
    response_code,
)
from reconciler.localserver.pubsub.backlog import BacklogStats, RegionStats
from reconciler.localserver.pubsub.state import ServerState

GAUGE_FRESH_NS = 60 * NS  # a reading is as recent as the service's 60 s sampling
MAX_PAGE = 100_000
_ALL = 1 << 62
_TOKEN_PREFIX = "series:"


class MonitoringService:
    def __init__(self, state: ServerState, outcomes: PublishOutcomes) -> None:
        self.state = state
        self.outcomes = outcomes

    # ------------------------------------------------------------------------ RPC

    def list_time_series(self, request: Any, call: CallInfo) -> Any:
        project = _project(request.name)
        flt = tsfilter.parse(request.filter)
        metric = _metric(flt.metric_type)
        _check_labels(metric, flt)
        start_ns, end_ns = _interval(request, metric)
        agg = request.aggregation
        aligner = _enum_name(agg, "per_series_aligner")
        reducer = _enum_name(agg, "cross_series_reducer")
        period_ns = agg.alignment_period.seconds * NS + agg.alignment_period.nanos
        aggregation.check_aggregation(metric, aligner, reducer, period_ns / NS)
        keys = aggregation.group_key_fields(metric, agg.group_by_fields)
        if request.HasField("secondary_aggregation") and request.secondary_aggregation.ListFields():
            raise invalid("secondary_aggregation is not supported by the local server.")
        if request.order_by:
            raise invalid("order_by is not supported by the local server.")
        if request.page_size < 0:
            raise invalid("page_size must not be negative.")
        now_ns = time.time_ns()
        samples: list[Samples] = []
        if flt.resource_type_matches(metric.resource):
            samples = self._samples(project, metric, flt, start_ns, end_ns, now_ns)
        if aligner == "ALIGN_NONE":
            series = [aggregation.raw(s, now_ns) for s in samples]
        else:
            series = [aggregation.align(s, aligner, period_ns, end_ns) for s in samples]
        series = aggregation.reduce([s for s in series if s.points], reducer, keys)
        series.sort(
            key=lambda s: (sorted(s.resource_labels.items()), sorted(s.metric_labels.items()))
        )
        return _page(request, series, headers_only=request.view == 1)

    def rpcs(self) -> list[Rpc]:
        return [
            Rpc(
                "ListTimeSeries",
                self.list_time_series,
                protos.ListTimeSeriesRequest,
                protos.ListTimeSeriesResponse,
                lambda r: r.name,
            )
        ]

    # -------------------------------------------------------------------- sources

    def _samples(
        self,
        project: str,
        metric: Metric,
        flt: tsfilter.Filter,
        start_ns: int,
        end_ns: int,
        now_ns: int,
    ) -> list[Samples]:
        which, _ = metric.source
        if which == "publish":
            return self._publish_samples(project, metric, flt, start_ns, end_ns)
        reading_ns = min(end_ns, now_ns)
        if end_ns < now_ns - GAUGE_FRESH_NS or (start_ns < end_ns and start_ns > now_ns):
            return []  # no reading then: gauges have no history here
        out = []
        kept = self.backlogs(project, metric.resource, lambda r: _labels_match(flt, None, r))
        for resource_labels, stats in kept:
            for labels, value in readings(stats, metric, now_ns):
                if _labels_match(flt, labels, resource_labels):
                    out.append(Samples(metric, labels, resource_labels, [(reading_ns, value)]))
        return out

    def backlogs(
        self, project: str, resource_type: str, keep: Callable[[dict[str, str]], bool],
        only: Collection[str] | None = None,
    ) -> list[tuple[dict[str, str], BacklogStats]]:
        """(resource labels, backlog figures) of each topic ("pubsub_topic"),
        subscription ("pubsub_subscription") or snapshot ("pubsub_snapshot": what it
        retains, as unacked figures) of the project whose resource labels `keep`
        accepts (figures computed only for those), in name order; `only`: none but
        these ids (looked up, not searched for). ListTimeSeries and the PromQL face
        both read these."""
        subs = self.state.subs
        out = []
        if resource_type == "pubsub_snapshot":
            for snapshot_id, retained in subs.snapshots.stats(project, only):
                labels = {"project_id": project, "snapshot_id": snapshot_id}
                if keep(labels):
                    out.append((labels, retained))
            return out
        if resource_type == "pubsub_topic":
            prefix = f"projects/{project}/topics/"
            if only is None:
                topics, _ = self.state.list_topics(project, "", _ALL)
                names = [t.name for t in topics]
            else:
                names = [prefix + i for i in sorted(only)
                         if self.state.get_topic(prefix + i) is not None]
            for name in names:
                labels = {"project_id": project, "topic_id": name[len(prefix):]}
                if keep(labels):
                    out.append((labels, subs.topic_stats(name)))
            return out
        listed = subs.names_in_project(project) if only is None else [
            f"projects/{project}/subscriptions/{i}" for i in sorted(only)
        ]
        for name in listed:
            labels = {"project_id": project, "subscription_id": name.rsplit("/", 1)[1]}
            if keep(labels):
                stats = subs.subscription_stats(name)
                if stats is not None:
                    out.append((labels, stats))
        return out

    def _publish_samples(
        self, project: str, metric: Metric, flt: tsfilter.Filter, start_ns: int, end_ns: int
    ) -> list[Samples]:
        latency = metric.source[1] == "latency"
        prefix = f"projects/{project}/topics/"
        by_series: dict[tuple[str, ...], Samples] = {}
        for o in self.outcomes.recent(since_ns=start_ns + 1):
            if o.end_ns > end_ns or not o.topic.startswith(prefix):
                continue
            topic_id = o.topic[len(prefix) :]
            if not topic_id or "/" in topic_id:
                continue
            code = response_code(o.code)
            if latency:
                labels = {"response_code": code, "has_ordering": str(o.has_ordering).lower()}
            else:
                labels = {"response_class": response_class(o.code), "response_code": code}
            key = (topic_id, *labels.values())
            found = by_series.get(key)
            if found is None:
                resource_labels = {"project_id": project, "topic_id": topic_id}
                if not _labels_match(flt, labels, resource_labels):
                    continue
                found = by_series[key] = Samples(metric, labels, resource_labels, [])
            found.samples.append((o.end_ns, o.latency_s * 1e6 if latency else 1))
        return list(by_series.values())


# --------------------------------------------------------------------- request checks


def _project(name: str) -> str:
    parts = name.split("/")
    if len(parts) != 2 or parts[0] != "projects" or not parts[1]:
        raise invalid(
            f"Invalid name {name!r}: expected projects/PROJECT_ID (the local server keeps "
            "no metrics scopes of folders or organizations)."
        )
    return parts[1]


def _metric(metric_type: str) -> Metric:
    metric = METRICS.get(metric_type)
    if metric is None:
        raise invalid(
            f"The metric type {metric_type!r} is not served by the local server"
            f"{suggestion(metric_type, METRICS)} (served: {', '.join(sorted(METRICS))})."
        )
    return metric


def _check_labels(metric: Metric, flt: tsfilter.Filter) -> None:
    for m in flt.labels:
        labels = metric.labels if m.scope == "metric" else metric.resource_labels
        if m.label not in labels:
            raise invalid(
                f"The filter restricts the {m.scope} label {m.label!r}, which {metric.type} "
                f"does not have ({m.scope} labels: {', '.join(labels)})."
            )


def _interval(request: Any, metric: Metric) -> tuple[int, int]:
    if not request.HasField("interval") or not request.interval.HasField("end_time"):
        raise invalid("interval.end_time is required.")
    end_ns = request.interval.end_time.ToNanoseconds()
    if request.interval.HasField("start_time"):
        start_ns = request.interval.start_time.ToNanoseconds()
    else:
        start_ns = end_ns
    if start_ns > end_ns:
        raise invalid("interval.start_time must not be later than interval.end_time.")
    if metric.kind == "DELTA" and start_ns == end_ns:
        raise invalid(
            f"{metric.type} is a DELTA metric: give an interval with a start_time before "
            "its end_time."
        )
    return start_ns, end_ns


def _enum_name(message: Any, field: str) -> str:
    number = getattr(message, field)
    return str(message.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number[number].name)


def _labels_match(
    flt: tsfilter.Filter, metric_labels: dict[str, str] | None, resource_labels: dict[str, str]
) -> bool:
    """Whether the filter's label restrictions hold (metric ones skipped when
    `metric_labels` is None: resources are filtered before their series exist)."""
    for m in flt.labels:
        if m.scope == "metric":
            if metric_labels is not None and not m.matches(metric_labels.get(m.label)):
                return False
        elif not m.matches(resource_labels.get(m.label)):
            return False
    return True


def readings(stats: BacklogStats, metric: Metric, now_ns: int) -> list[tuple[dict[str, str], int]]:
    """A gauge's readings of one resource: (metric labels, value) per region it ever
    held messages in, or one reading of all regions for a gauge without `region`."""
    which, what = metric.source
    if "region" not in metric.labels:
        return [({}, gauge_value(stats, None, which, what, now_ns))]
    return [
        ({"region": region}, gauge_value(stats, region, which, what, now_ns))
        for region in sorted(stats.regions)
    ]


def gauge_value(
    stats: BacklogStats, region: str | None, which: str, what: str, now_ns: int
) -> int:
    """One gauge's value in `region` (None: all regions together)."""
    if which == "billable":
        held = [stats.unacked.get(region or ""), stats.retained_acked.get(region or "")]
        return sum(r.bytes for r in held if r is not None)
    table = stats.retained_acked if which == "retained" else stats.unacked
    figures = RegionStats()
    for key, found in table.items():
        if region is None or key == region:
            figures.merge(found)
    if what == "count":
        return figures.count
    if what == "bytes":
        return figures.bytes
    if figures.oldest_publish_ns is None:
        return 0
    return max(0, (now_ns - figures.oldest_publish_ns) // NS)


# ------------------------------------------------------------------------- response


def _page(request: Any, series: list[Series], *, headers_only: bool) -> Any:
    offset = 0
    if request.page_token:
        text = decode_token(request.page_token, _TOKEN_PREFIX)[len(_TOKEN_PREFIX) :]
        offset = token_offset(request.page_token, text)
    size = min(request.page_size or MAX_PAGE, MAX_PAGE)
    response = protos.ListTimeSeriesResponse()
    for s in series[offset : offset + size]:
        _fill(response.time_series.add(), s, headers_only)
    if offset + size < len(series):
        response.next_page_token = encode_token(f"{_TOKEN_PREFIX}{offset + size}")
    if series:
        response.unit = series[0].unit
    return response


def _fill(out: Any, series: Series, headers_only: bool) -> None:
    out.metric.type = series.metric.type
    out.metric.labels.update(series.metric_labels)
    out.resource.type = series.metric.resource
    out.resource.labels.update(series.resource_labels)
    out.metric_kind = metric_pb2.MetricDescriptor.MetricKind.Value(series.kind)
    out.value_type = metric_pb2.MetricDescriptor.ValueType.Value(series.value_type)
    out.unit = series.unit
    if headers_only:
        return
    for p in series.points:
        point = out.points.add()
        point.interval.end_time.FromNanoseconds(p.end_ns)
        point.interval.start_time.FromNanoseconds(p.start_ns)
        if series.value_type == "DISTRIBUTION":
            assert isinstance(p.value, Dist)
            p.value.to_proto(point.value.distribution_value)
        elif series.value_type == "DOUBLE":
            point.value.double_value = float(p.value)  # type: ignore[arg-type]
        else:
            point.value.int64_value = int(p.value)  # type: ignore[arg-type]
