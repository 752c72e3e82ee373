"""The Cloud Monitoring metrics the local server serves: names, kinds, value types,
units, labels and monitored-resource types as the service defines them
(pubsub.googleapis.com/...), and what each one is computed from."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "pubsub.googleapis.com/"

RESOURCE_LABELS = {
    "pubsub_topic": ("project_id", "topic_id"),
    "pubsub_subscription": ("project_id", "subscription_id"),
    "pubsub_snapshot": ("project_id", "snapshot_id"),
}


@dataclass(frozen=True)
class Metric:
    type: str
    kind: str  # "GAUGE" or "DELTA"
    value_type: str  # "INT64" or "DISTRIBUTION"
    unit: str
    resource: str  # the monitored-resource type
    labels: tuple[str, ...]
    # What it is computed from: for the gauges (which, what) with which in "unacked",
    # "retained", "billable", "snapshot" (what a snapshot retains) and what in "count",
    # "bytes", "age" (a gauge without the `region` label reads all regions at once);
    # for the publish metrics ("publish", "count") or ("publish", "latency").
    source: tuple[str, str]

    @property
    def resource_labels(self) -> tuple[str, ...]:
        return RESOURCE_LABELS[self.resource]


def _by_region(scope: str, resource: str) -> list[Metric]:
    base = [
        ("num_unacked_messages_by_region", "1", ("unacked", "count")),
        ("unacked_bytes_by_region", "By", ("unacked", "bytes")),
        ("oldest_unacked_message_age_by_region", "s", ("unacked", "age")),
        ("num_retained_acked_messages_by_region", "1", ("retained", "count")),
        ("retained_acked_bytes_by_region", "By", ("retained", "bytes")),
        ("oldest_retained_acked_message_age_by_region", "s", ("retained", "age")),
    ]
    if scope == "subscription":
        base.append(("billable_bytes_by_region", "By", ("billable", "bytes")))
    return [
        Metric(f"{PREFIX}{scope}/{name}", "GAUGE", "INT64", unit, resource, ("region",), source)
        for name, unit, source in base
    ]


METRICS: dict[str, Metric] = {
    m.type: m
    for m in [
        *_by_region("topic", "pubsub_topic"),
        *_by_region("subscription", "pubsub_subscription"),
        Metric(
            f"{PREFIX}topic/send_request_count",
            "DELTA",
            "INT64",
            "1",
            "pubsub_topic",
            ("response_class", "response_code"),
            ("publish", "count"),
        ),
        Metric(
            f"{PREFIX}topic/send_request_latencies",
            "DELTA",
            "DISTRIBUTION",
            "us",
            "pubsub_topic",
            ("response_code", "has_ordering"),
            ("publish", "latency"),
        ),
        # What snapshots retain: the messages of each (its `unacked` figures), per
        # region and in all.
        *(
            Metric(
                f"{PREFIX}snapshot/{name}{suffix}",
                "GAUGE",
                "INT64",
                unit,
                "pubsub_snapshot",
                labels,
                ("snapshot", what),
            )
            for name, unit, what in (
                ("num_messages", "1", "count"),
                ("backlog_bytes", "By", "bytes"),
                ("oldest_message_age", "s", "age"),
            )
            for suffix, labels in (("_by_region", ("region",)), ("", ()))
        ),
    ]
}

# Classes of response codes (the service's `response_class` label): the caller's
# fault, the service's, or none.
_INVALID = frozenset(
    {
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "FAILED_PRECONDITION",
        "OUT_OF_RANGE",
        "RESOURCE_EXHAUSTED",
        "CANCELLED",
        "ABORTED",
    }
)


def response_code(code: str) -> str:
    """The `response_code` label for a gRPC status name: "success" for OK, else the
    name in lower case ("unavailable", "cancelled", ...)."""
    return "success" if code == "OK" else code.lower()


def response_class(code: str) -> str:
    """ "success", "invalid" (the request's or the caller's doing) or "internal"."""
    if code == "OK":
        return "success"
    return "invalid" if code in _INVALID else "internal"
