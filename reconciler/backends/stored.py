"""Where messages are stored, from Pub/Sub's by-region gauges: at most one
ListTimeSeries per metric type per project (filtered to the topics asked about, up to
100 of them; the whole project beyond): the message count first, then bytes and
oldest age only for the topics it shows holding messages (no call when none does),
read through the one Monitoring reader (backends/metrics.py). Unreadable metrics are
a reason, not a failure: `StoredMessages.unavailable`.

    read_stored(reader, project, scope, ids=None, retained=True) -> StoredMessages
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.backends.base import RegionStored, StoredMessages
from reconciler.backends.metrics import (
    PUBSUB_METRIC_PREFIX,
    Aggregation,
    MetricQuery,
    MetricsReader,
    MetricsUnavailable,
)

# The gauges are sampled every 60 s and visible after up to 120 s: read the newest
# point of the last few minutes.
WINDOW_SECONDS = 300
ID_LABEL = {"topic": "topic_id", "subscription": "subscription_id"}
GAUGES = {
    "unacked": (
        "num_unacked_messages_by_region",
        "unacked_bytes_by_region",
        "oldest_unacked_message_age_by_region",
    ),
    "retained": (
        "num_retained_acked_messages_by_region",
        "retained_acked_bytes_by_region",
        "oldest_retained_acked_message_age_by_region",
    ),
}
# A filter names at most this many topics (the service bounds a filter's length); for
# more, the gauge is read for the whole project and the others are dropped here: one
# call per metric type either way.
MAX_IDS_PER_FILTER = 100


def read_stored(
    reader: MetricsReader,
    project: str,
    scope: str,
    ids: Sequence[str] | None = None,
    retained: bool = True,
) -> StoredMessages:
    """The newest value of each gauge per (resource id, region); `ids`: only these
    topic (or subscription) ids (None: every one in the project); `retained`: also
    the retained-acknowledged gauges. The message count is read first; bytes and
    oldest age only for the ids it shows holding messages (none: no further call)."""
    before = reader.calls
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {"unacked": {}, "retained": {}}
    wanted = ["unacked", "retained"] if retained else ["unacked"]
    keep = None if ids is None else set(ids)
    try:
        for which in wanted:
            count, *rest = GAUGES[which]
            _read_one(reader, project, scope, count, _named(keep), out[which])
            holding = {
                rid for rid, regions in out[which].items()
                if (keep is None or rid in keep)
                and any(v.get(count, 0) > 0 for v in regions.values())
            }
            if holding:
                for metric in rest:
                    _read_one(reader, project, scope, metric, _named(holding), out[which])
    except MetricsUnavailable as exc:
        return StoredMessages({}, {}, unavailable=exc.reason, calls=reader.calls - before)
    return StoredMessages(
        _figures(out["unacked"], GAUGES["unacked"], keep),
        _figures(out["retained"], GAUGES["retained"], keep),
        calls=reader.calls - before,
    )


def _named(ids: set[str] | None) -> tuple[str, ...] | None:
    """The ids a filter names; None (the whole project) for none or too many."""
    if ids is None or len(ids) > MAX_IDS_PER_FILTER:
        return None
    return tuple(sorted(ids))


def _read_one(
    reader: MetricsReader,
    project: str,
    scope: str,
    metric: str,
    ids: tuple[str, ...] | None,
    into: dict[str, dict[str, dict[str, int]]],
) -> None:
    id_label = ID_LABEL[scope]
    query = MetricQuery(
        project,
        f"{PUBSUB_METRIC_PREFIX}{scope}/{metric}",
        WINDOW_SECONDS,
        resource={} if ids is None else {id_label: ids},
        aggregation=Aggregation(WINDOW_SECONDS, "ALIGN_MAX"),
    )
    for series in reader.read(query):
        point = series.latest
        resource_id = series.resource_labels.get(id_label)
        region = series.metric_labels.get("region")
        if point is None or resource_id is None or region is None:
            continue
        value = point.value
        if isinstance(value, int | float):
            into.setdefault(resource_id, {}).setdefault(region, {})[metric] = int(value)


def _figures(
    raw: dict[str, dict[str, dict[str, int]]], names: tuple[str, str, str],
    keep: set[str] | None,
) -> dict[str, dict[str, RegionStored]]:
    count, size, age = names
    out: dict[str, dict[str, RegionStored]] = {}
    for resource_id, regions in raw.items():
        if keep is not None and resource_id not in keep:
            continue
        for region, values in regions.items():
            messages = values.get(count, 0)
            if messages <= 0:
                continue  # nothing stored there (the gauge reads 0 once acknowledged)
            out.setdefault(resource_id, {})[region] = RegionStored(
                region, messages, values.get(size), values.get(age)
            )
    return out
