"""Where messages are stored, from Pub/Sub's by-region gauges: ONE PromQL instant
query per project (backends/promql.py) selecting every gauge a figure needs (messages,
bytes and oldest age of the unacknowledged messages, and with `retained` those of the
retained acknowledged ones), filtered to the topics (or subscriptions) asked about;
past a URL length the query reads the whole project and the others are dropped here:
one call either way. Unreadable metrics are a reason, not a failure:
`StoredMessages.unavailable`.

    read_stored(reader, project, scope, ids=None, retained=True) -> StoredMessages
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.backends.base import RegionStored, StoredMessages
from reconciler.backends.metrics import PUBSUB_METRIC_PREFIX, MetricsUnavailable
from reconciler.backends.promql import PromQLReader, selector
from reconciler.promqlnames import promql_name

ID_LABEL = {"topic": "topic_id", "subscription": "subscription_id"}
RESOURCE_TYPE = {"topic": "pubsub_topic", "subscription": "pubsub_subscription"}
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
# A query naming the ids is kept this short (its URL well under the 8 KB a server
# takes); a longer one reads the whole project instead.
MAX_URL_CHARS = 6000


def gauge_query(
    reader: PromQLReader, project: str, scope: str, families: Sequence[str],
    ids: Sequence[str] | None,
) -> str:
    """The instant vector selector of `families`' gauges in `project` (always matched:
    a metrics scope may hold other projects), of `ids` only when short enough."""
    names = [promql_name(f"{PUBSUB_METRIC_PREFIX}{scope}/{m}") for f in families
             for m in GAUGES[f]]
    labels: dict[str, str | tuple[str, ...]] = {
        "monitored_resource": RESOURCE_TYPE[scope], "project_id": project,
    }
    whole = selector(names, labels)
    if not ids:
        return whole
    named = selector(names, {**labels, ID_LABEL[scope]: tuple(sorted(set(ids)))})
    return named if reader.url_length(project, named) <= MAX_URL_CHARS else whole


def read_stored(
    reader: PromQLReader,
    project: str,
    scope: str,
    ids: Sequence[str] | None = None,
    retained: bool = True,
) -> StoredMessages:
    """The newest value of each gauge per (resource id, region), in one call; `ids`:
    only these topic (or subscription) ids (None: every one in the project);
    `retained`: also the retained-acknowledged gauges."""
    families = ["unacked", "retained"] if retained else ["unacked"]
    if ids is not None and not ids:
        return StoredMessages({}, {})
    keep = None if ids is None else set(ids)
    id_label = ID_LABEL[scope]
    by_name = {
        promql_name(f"{PUBSUB_METRIC_PREFIX}{scope}/{m}"): (family, m)
        for family in families for m in GAUGES[family]
    }
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {"unacked": {}, "retained": {}}
    try:
        samples = reader.query(project, gauge_query(reader, project, scope, families, ids))
    except MetricsUnavailable as exc:
        return StoredMessages({}, {}, unavailable=exc.reason, calls=1)
    for sample in samples:
        labels = sample.labels
        found = by_name.get(labels.get("__name__", ""))
        resource_id = labels.get(id_label)
        region = labels.get("region")
        if found is None or resource_id is None or region is None:
            continue
        if labels.get("project_id") != project:
            continue  # another project of the metrics scope
        family, metric = found
        out[family].setdefault(resource_id, {}).setdefault(region, {})[metric] = int(sample.value)
    return StoredMessages(
        _figures(out["unacked"], GAUGES["unacked"], keep),
        _figures(out["retained"], GAUGES["retained"], keep),
        calls=1,
    )


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
