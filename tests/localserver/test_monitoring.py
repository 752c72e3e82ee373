"""Cloud Monitoring's `ListTimeSeries` on the local server, read through the real
`google-cloud-monitoring` client: the by-region gauges, `send_request_count` and
`send_request_latencies`, filters, aligners and reducers, and the clear refusals."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from google.api import metric_pb2
from google.api_core import exceptions

from reconciler.localserver import CLIENT_REGION_KEY
from reconciler.localserver.monitoring import distribution as dist
from tests.waiting import wait_until

PROJECT = "projects/proj-alpha"
T = f"{PROJECT}/topics/orders"
S = f"{PROJECT}/subscriptions/orders-sub"
PUBSUB = "pubsub.googleapis.com/"
Kind = metric_pb2.MetricDescriptor  # GAUGE, DELTA, ... (the values TimeSeries carries)
ValueType = metric_pb2.MetricDescriptor


# The publish metrics over the last 10 minutes, in one window.
DELTA = {"alignment_period": {"seconds": 600}, "per_series_aligner": "ALIGN_DELTA"}


@pytest.fixture
def monitoring(monitoring_client: Any) -> Any:
    return monitoring_client


@pytest.fixture
def read(monitoring: Any) -> Callable[..., list[Any]]:
    """`read(metric, where="", **aggregation)`: the time series of one metric of the
    project over the last 10 minutes."""

    def run(metric: str, where: str = "", view: int = 0, **aggregation: Any) -> list[Any]:
        now = time.time()
        request: dict[str, Any] = {
            "name": PROJECT,
            "filter": f'metric.type = "{PUBSUB}{metric}"' + (f" AND {where}" if where else ""),
            "interval": {
                "end_time": {"seconds": int(now) + 1},
                "start_time": {"seconds": int(now) - 600},
            },
            "view": view,
        }
        if aggregation:
            request["aggregation"] = aggregation
        return list(monitoring.list_time_series(request=request))

    return run


def _create(
    publisher: Any, regions: list[str], *, retain_acked: bool = False, subscriber: Any = None
) -> None:
    publisher.create_topic(
        request={"name": T, "message_storage_policy": {"allowed_persistence_regions": regions}}
    )
    if subscriber is not None:
        subscriber.create_subscription(
            request={"name": S, "topic": T, "retain_acked_messages": retain_acked}
        )


def _publish(publisher: Any, region: str, data: list[bytes], topic: str = T) -> None:
    publisher.publish(
        topic=topic,
        messages=[{"data": d} for d in data],
        metadata=[(CLIENT_REGION_KEY, region)],
        retry=None,
    )


def _by_region(series: list[Any]) -> dict[str, int]:
    out = {}
    for ts in series:
        assert len(ts.points) == 1, ts
        out[ts.metric.labels["region"]] = ts.points[0].value.int64_value
    return out


def _pull_all(subscriber: Any, n: int) -> list[str]:
    ack_ids: list[str] = []
    while len(ack_ids) < n:
        got = subscriber.pull(request={"subscription": S, "max_messages": 100}, retry=None)
        ack_ids += [m.ack_id for m in got.received_messages]
    return ack_ids


# --------------------------------------------------------------------- by-region gauges

GAUGES = [
    # (metric, expected per region after 1 x 3 bytes in us-east1 and 2 x 5 bytes in
    # europe-west1, nothing acknowledged)
    ("num_unacked_messages_by_region", {"us-east1": 1, "europe-west1": 2}),
    ("unacked_bytes_by_region", {"us-east1": 3, "europe-west1": 10}),
    ("num_retained_acked_messages_by_region", {"us-east1": 0, "europe-west1": 0}),
    ("retained_acked_bytes_by_region", {"us-east1": 0, "europe-west1": 0}),
    ("oldest_retained_acked_message_age_by_region", {"us-east1": 0, "europe-west1": 0}),
]


@pytest.mark.parametrize(
    ("scope", "resource", "id_label"),
    [
        ("topic", "pubsub_topic", "topic_id"),
        ("subscription", "pubsub_subscription", "subscription_id"),
    ],
)
@pytest.mark.parametrize(("name", "expected"), GAUGES, ids=[g[0] for g in GAUGES])
def test_by_region_gauges_report_where_messages_are_stored(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
    scope: str,
    resource: str,
    id_label: str,
    name: str,
    expected: dict[str, int],
) -> None:
    _create(publisher_client, ["us-east1", "europe-west1"], subscriber=subscriber_client)
    _publish(publisher_client, "us-east1", [b"abc"])
    _publish(publisher_client, "europe-west1", [b"hello", b"world"])
    series = read(f"{scope}/{name}")
    assert _by_region(series) == expected
    for ts in series:
        assert ts.metric.type == f"{PUBSUB}{scope}/{name}"
        assert set(ts.metric.labels) == {"region"}
        assert ts.resource.type == resource
        want = "orders" if scope == "topic" else "orders-sub"
        assert dict(ts.resource.labels) == {"project_id": "proj-alpha", id_label: want}
        assert ts.metric_kind == Kind.GAUGE and ts.value_type == ValueType.INT64


def test_oldest_unacked_age_and_billable_bytes(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
    local_server: Any,
) -> None:
    _create(publisher_client, ["us-east1"], subscriber=subscriber_client)
    _publish(publisher_client, "us-east1", [b"12345"])
    [message] = local_server.messages(T)
    age = read("subscription/oldest_unacked_message_age_by_region")
    [point] = age[0].points
    published = message.publish_time.ToNanoseconds() / 1e9
    read_at = point.interval.end_time.timestamp()
    # The age is the reading's distance from the publish time, in whole seconds.
    assert point.value.int64_value == pytest.approx(read_at - published, abs=1.0)
    assert age[0].unit == "s"
    assert _by_region(read("subscription/billable_bytes_by_region")) == {"us-east1": 5}


def test_narrowing_the_policy_leaves_old_messages_in_their_region(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1", "europe-west1"], subscriber=subscriber_client)
    _publish(publisher_client, "us-east1", [b"a", b"b"])
    publisher_client.update_topic(
        request={
            "topic": {
                "name": T,
                "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]},
            },
            "update_mask": {"paths": ["message_storage_policy"]},
        }
    )
    _publish(publisher_client, "us-east1", [b"c"])  # received in us-east1, stored in Europe
    expected = {"us-east1": 2, "europe-west1": 1}
    assert _by_region(read("topic/num_unacked_messages_by_region")) == expected
    assert _by_region(read("subscription/num_unacked_messages_by_region")) == expected


def test_gauges_go_back_to_zero_after_acks_and_retained_ones_count(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(
        publisher_client,
        ["us-east1", "europe-west1"],
        retain_acked=True,
        subscriber=subscriber_client,
    )
    _publish(publisher_client, "us-east1", [b"abc"])
    _publish(publisher_client, "europe-west1", [b"hello", b"world"])
    subscriber_client.acknowledge(
        request={"subscription": S, "ack_ids": _pull_all(subscriber_client, 3)}
    )
    for scope in ("topic", "subscription"):
        assert _by_region(read(f"{scope}/num_unacked_messages_by_region")) == {
            "us-east1": 0,
            "europe-west1": 0,
        }
        assert _by_region(read(f"{scope}/oldest_unacked_message_age_by_region")) == {
            "us-east1": 0,
            "europe-west1": 0,
        }
        assert _by_region(read(f"{scope}/num_retained_acked_messages_by_region")) == {
            "us-east1": 1,
            "europe-west1": 2,
        }
        assert _by_region(read(f"{scope}/retained_acked_bytes_by_region")) == {
            "us-east1": 3,
            "europe-west1": 10,
        }


def test_topic_gauges_add_up_their_subscriptions(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1"], subscriber=subscriber_client)
    subscriber_client.create_subscription(name=f"{PROJECT}/subscriptions/audit", topic=T)
    _publish(publisher_client, "us-east1", [b"x", b"y"])
    assert _by_region(read("topic/num_unacked_messages_by_region")) == {"us-east1": 4}
    per_sub = read("subscription/num_unacked_messages_by_region")
    assert {ts.resource.labels["subscription_id"] for ts in per_sub} == {"orders-sub", "audit"}


def test_snapshot_metrics_have_no_series_without_snapshots(read: Callable[..., list[Any]]) -> None:
    assert read("snapshot/num_messages_by_region") == []


# -------------------------------------------------------------------- publish metrics


def test_send_request_count_by_response_code_with_injected_errors(
    publisher_client: Any,
    local_server: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1"])
    for _ in range(3):
        _publish(publisher_client, "us-east1", [b"ok"])
    local_server.faults.add("Publish", error="UNAVAILABLE", error_next=2)
    for _ in range(2):
        with pytest.raises(exceptions.ServiceUnavailable):
            _publish(publisher_client, "us-east1", [b"x"])
    with pytest.raises(exceptions.InvalidArgument):
        _publish(publisher_client, "us-east1", [b""])  # an empty message
    with pytest.raises(exceptions.NotFound):
        _publish(publisher_client, "us-east1", [b"x"], topic=f"{PROJECT}/topics/missing")
    series = read(
        "topic/send_request_count",
        **DELTA,
    )
    got = {
        (
            ts.resource.labels["topic_id"],
            ts.metric.labels["response_class"],
            ts.metric.labels["response_code"],
        ): ts.points[0].value.int64_value
        for ts in series
    }
    assert got == {
        ("orders", "success", "success"): 3,
        ("orders", "internal", "unavailable"): 2,
        ("orders", "invalid", "invalid_argument"): 1,
        ("missing", "invalid", "not_found"): 1,
    }
    for ts in series:
        assert ts.metric_kind == Kind.DELTA and ts.value_type == ValueType.INT64
        assert ts.resource.type == "pubsub_topic"
        [point] = ts.points
        assert (point.interval.end_time - point.interval.start_time).total_seconds() == 600
    only = read(
        "topic/send_request_count",
        'metric.labels.response_code = "unavailable" AND resource.labels.topic_id = "orders"',
        **DELTA,
    )
    assert [ts.points[0].value.int64_value for ts in only] == [2]


def test_latency_distribution_places_an_injected_delay_in_its_bucket(
    publisher_client: Any,
    local_server: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1"])
    _publish(publisher_client, "us-east1", [b"fast"])
    local_server.faults.add("Publish", delay=0.3)
    for _ in range(2):
        _publish(publisher_client, "us-east1", [b"slow"])
    [ts] = read(
        "topic/send_request_latencies",
        **DELTA,
    )
    assert ts.metric_kind == Kind.DELTA and ts.value_type == ValueType.DISTRIBUTION
    assert ts.unit == "us"
    assert dict(ts.metric.labels) == {"response_code": "success", "has_ordering": "false"}
    d = ts.points[0].value.distribution_value
    buckets = d.bucket_options.exponential_buckets
    assert (buckets.num_finite_buckets, buckets.growth_factor, buckets.scale) == (66, 1.4, 1.0)
    assert d.count == 3
    counts = list(d.bucket_counts) + [0] * (dist.FINITE + 2 - len(d.bucket_counts))
    delayed = dist.bucket_of(300_000)  # 300 ms in µs
    # The two delayed calls are at or above the delay's bucket; the other one below.
    assert sum(counts[delayed:]) == 2
    assert sum(counts[:delayed]) == 1
    assert dist.lower_bound(delayed) <= 300_000 < dist.upper_bound(delayed)
    assert d.mean >= 2 * 300_000 / 3
    p99 = read(
        "topic/send_request_latencies",
        alignment_period={"seconds": 600},
        per_series_aligner="ALIGN_PERCENTILE_99",
    )
    assert p99[0].value_type == ValueType.DOUBLE and p99[0].metric_kind == Kind.GAUGE
    assert p99[0].points[0].value.double_value >= dist.lower_bound(delayed)


def test_a_publish_the_client_gave_up_on_counts_as_deadline_exceeded(
    publisher_client: Any,
    local_server: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1"])
    hold = local_server.faults.hold("Publish")
    with pytest.raises(exceptions.DeadlineExceeded):
        publisher_client.publish(topic=T, messages=[{"data": b"x"}], retry=None, timeout=0.5)
    [held] = hold.wait_arrived(1)
    held.release()
    wait_until(lambda: bool(local_server.outcomes.recent()))
    series = read(
        "topic/send_request_count",
        **DELTA,
    )
    assert [
        (ts.metric.labels["response_code"], ts.metric.labels["response_class"]) for ts in series
    ] == [("deadline_exceeded", "internal")]


def test_a_cancelled_publish_counts_as_cancelled(
    publisher_client: Any,
    local_server: Any,
    read: Callable[..., list[Any]],
) -> None:
    from google.pubsub_v1.types import PublishRequest

    _create(publisher_client, ["us-east1"])
    hold = local_server.faults.hold("Publish")
    future = publisher_client.transport.publish.future(
        PublishRequest(topic=T, messages=[{"data": b"x"}]), timeout=60
    )
    [held] = hold.wait_arrived(1)
    assert future.cancel()
    # A call answered on the same connection after the cancellation: the server has
    # read the cancellation (frames of one connection arrive in order).
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=f"{PROJECT}/topics/other", retry=None)
    held.release()
    wait_until(lambda: bool(local_server.outcomes.recent()))
    series = read(
        "topic/send_request_count",
        **DELTA,
    )
    assert [ts.metric.labels["response_code"] for ts in series] == ["cancelled"]


# ------------------------------------------------------------- aggregation and views


def test_reduce_sum_by_region_across_topics(
    publisher_client: Any,
    subscriber_client: Any,
    read: Callable[..., list[Any]],
) -> None:
    for name in ("orders", "payments"):
        topic = f"{PROJECT}/topics/{name}"
        publisher_client.create_topic(name=topic)
        subscriber_client.create_subscription(
            name=f"{PROJECT}/subscriptions/{name}-sub", topic=topic
        )
        _publish(publisher_client, "us-east1", [b"a", b"b"], topic=topic)
        _publish(publisher_client, "europe-west1", [b"c"], topic=topic)
    series = read(
        "topic/num_unacked_messages_by_region",
        'resource.labels.topic_id = one_of("orders", "payments")',
        alignment_period={"seconds": 60},
        per_series_aligner="ALIGN_MAX",
        cross_series_reducer="REDUCE_SUM",
        group_by_fields=["metric.label.region"],
    )
    assert _by_region(series) == {"us-east1": 4, "europe-west1": 2}
    for ts in series:
        assert dict(ts.resource.labels) == {"project_id": "proj-alpha"}
    only = read(
        "topic/num_unacked_messages_by_region", 'resource.labels.topic_id = starts_with("pay")'
    )
    assert {ts.resource.labels["topic_id"] for ts in only} == {"payments"}


# ------------------------------------------------- the queries the product's readers make
# The residency report and the hedging advisor read these exact shapes.

MAX_60 = {"alignment_period": {"seconds": 60}, "per_series_aligner": "ALIGN_MAX"}


def _delta_sum_by(*fields: str) -> dict[str, Any]:
    return {**DELTA, "cross_series_reducer": "REDUCE_SUM", "group_by_fields": list(fields)}


def _int_key(ts: Any, *labels: str) -> tuple[tuple[str, ...], int]:
    found = {**ts.resource.labels, **ts.metric.labels}
    [point] = ts.points
    return tuple(found[label] for label in labels), point.value.int64_value


CONSUMER_QUERIES = [
    (
        "subscription/num_unacked_messages_by_region",
        'resource.labels.subscription_id = one_of("orders-a", "payments-b")',
        MAX_60,
        ("subscription_id", "region"),
        {
            ("orders-a", "us-east1"): 2,
            ("orders-a", "europe-west1"): 1,
            ("payments-b", "us-east1"): 1,
        },
    ),
    (
        "subscription/num_unacked_messages_by_region",
        'resource.labels.subscription_id = starts_with("payments") '
        'AND metric.labels.region = "us-east1"',
        MAX_60,
        ("subscription_id", "region"),
        {("payments-a", "us-east1"): 1, ("payments-b", "us-east1"): 1},
    ),
    (
        "topic/num_unacked_messages_by_region",
        'resource.labels.topic_id = "orders"',
        MAX_60,
        ("topic_id", "region"),
        {("orders", "us-east1"): 4, ("orders", "europe-west1"): 2},
    ),
    (
        "topic/num_unacked_messages_by_region",
        "",
        {
            **MAX_60,
            "cross_series_reducer": "REDUCE_SUM",
            "group_by_fields": ["metric.labels.region"],
        },
        ("region",),
        {("us-east1",): 6, ("europe-west1",): 2},
    ),
    (
        "topic/send_request_count",
        'resource.labels.topic_id = "payments"',
        DELTA,
        ("response_code",),
        {("success",): 1, ("unavailable",): 1},
    ),
    (
        "topic/send_request_count",
        "",
        {**DELTA, "per_series_aligner": "ALIGN_SUM"},
        ("topic_id", "response_code"),
        {("orders", "success"): 2, ("payments", "success"): 1, ("payments", "unavailable"): 1},
    ),
    (
        "topic/send_request_count",
        "",
        _delta_sum_by("resource.labels.topic_id"),
        ("topic_id",),
        {("orders",): 2, ("payments",): 2},
    ),
    (
        "topic/send_request_count",
        'resource.labels.topic_id = one_of("orders", "payments")',
        _delta_sum_by("metric.labels.response_code"),
        ("response_code",),
        {("success",): 3, ("unavailable",): 1},
    ),
]


@pytest.fixture
def two_topics(publisher_client: Any, subscriber_client: Any, local_server: Any) -> None:
    """orders (subscriptions orders-a, orders-b): 2 messages stored in us-east1 and 1 in
    europe-west1, in 2 successful Publish calls; payments (payments-a, payments-b): 1
    message in us-east1, 1 successful call and 1 refused UNAVAILABLE."""
    for name in ("orders", "payments"):
        topic = f"{PROJECT}/topics/{name}"
        publisher_client.create_topic(
            request={
                "name": topic,
                "message_storage_policy": {
                    "allowed_persistence_regions": ["us-east1", "europe-west1"]
                },
            }
        )
        for sub in ("a", "b"):
            subscriber_client.create_subscription(
                name=f"{PROJECT}/subscriptions/{name}-{sub}", topic=topic
            )
    orders, payments = f"{PROJECT}/topics/orders", f"{PROJECT}/topics/payments"
    _publish(publisher_client, "us-east1", [b"a", b"b"], topic=orders)
    _publish(publisher_client, "europe-west1", [b"c"], topic=orders)
    _publish(publisher_client, "us-east1", [b"d"], topic=payments)
    local_server.faults.add("Publish", error="UNAVAILABLE", error_next=1)
    with pytest.raises(exceptions.ServiceUnavailable):
        _publish(publisher_client, "us-east1", [b"e"], topic=payments)


@pytest.mark.parametrize(
    ("metric", "where", "aggregation", "labels", "expected"),
    CONSUMER_QUERIES,
    ids=[
        f"{q[0]}|{q[1]}|{q[2]['per_series_aligner']}+{q[2].get('cross_series_reducer', '')}"
        f"{q[2].get('group_by_fields', '')}"
        for q in CONSUMER_QUERIES
    ],
)
def test_the_queries_the_product_makes(
    two_topics: None,
    read: Callable[..., list[Any]],
    metric: str,
    where: str,
    aggregation: dict[str, Any],
    labels: tuple[str, ...],
    expected: dict[tuple[str, ...], int],
) -> None:
    series = read(metric, where, **aggregation)
    got = dict(_int_key(ts, *labels) for ts in series)
    assert got == expected
    assert len(series) == len(expected)  # one series per key: nothing folded twice


def test_latency_deltas_summed_across_series(
    two_topics: None, read: Callable[..., list[Any]]
) -> None:
    [everything] = read("topic/send_request_latencies", **_delta_sum_by())
    assert everything.value_type == ValueType.DISTRIBUTION
    assert everything.metric_kind == Kind.DELTA
    assert everything.points[0].value.distribution_value.count == 4
    by_code = read("topic/send_request_latencies", **_delta_sum_by("metric.labels.response_code"))
    counts = {
        ts.metric.labels["response_code"]: ts.points[0].value.distribution_value.count
        for ts in by_code
    }
    assert counts == {"success": 3, "unavailable": 1}
    [payments] = read(
        "topic/send_request_latencies",
        'resource.labels.topic_id = "payments"',
        **_delta_sum_by("resource.labels.topic_id"),
    )
    assert dict(payments.resource.labels) == {"project_id": "proj-alpha", "topic_id": "payments"}
    d = payments.points[0].value.distribution_value
    assert d.count == 2 and sum(d.bucket_counts) == 2
    [rate] = read(
        "topic/send_request_count",
        'resource.labels.topic_id = "orders"',
        alignment_period={"seconds": 600},
        per_series_aligner="ALIGN_RATE",
        cross_series_reducer="REDUCE_SUM",
        group_by_fields=["resource.labels.topic_id"],
    )
    assert rate.points[0].value.double_value == pytest.approx(2 / 600)


def test_rate_mean_and_headers_view(
    publisher_client: Any,
    local_server: Any,
    read: Callable[..., list[Any]],
) -> None:
    _create(publisher_client, ["us-east1"])
    for _ in range(6):
        _publish(publisher_client, "us-east1", [b"x"])
    [rate] = read(
        "topic/send_request_count",
        alignment_period={"seconds": 600},
        per_series_aligner="ALIGN_RATE",
    )
    assert rate.value_type == ValueType.DOUBLE and rate.metric_kind == Kind.GAUGE
    assert rate.points[0].value.double_value == pytest.approx(6 / 600)
    [headers] = read("topic/send_request_count", view=1)
    assert headers.metric.labels["response_code"] == "success" and not headers.points
    [raw] = read("topic/send_request_count")  # one point per minute of the service's sampling
    assert sum(p.value.int64_value for p in raw.points) == 6


def test_pages_of_series(
    publisher_client: Any,
    subscriber_client: Any,
    monitoring: Any,
) -> None:
    for i in range(5):
        topic = f"{PROJECT}/topics/topic-{i}"
        publisher_client.create_topic(name=topic)
        subscriber_client.create_subscription(name=f"{PROJECT}/subscriptions/sub-{i}", topic=topic)
        _publish(publisher_client, "us-east1", [b"x"], topic=topic)
    now = int(time.time())
    pager = monitoring.list_time_series(
        request={
            "name": PROJECT,
            "filter": f'metric.type = "{PUBSUB}topic/num_unacked_messages_by_region"',
            "interval": {"end_time": {"seconds": now + 1}},
            "page_size": 2,
        }
    )
    pages = [[ts.resource.labels["topic_id"] for ts in page.time_series] for page in pager.pages]
    assert pages == [["topic-0", "topic-1"], ["topic-2", "topic-3"], ["topic-4"]]


def test_an_interval_in_the_past_has_no_gauge_reading(
    publisher_client: Any,
    subscriber_client: Any,
    monitoring: Any,
) -> None:
    _create(publisher_client, ["us-east1"], subscriber=subscriber_client)
    _publish(publisher_client, "us-east1", [b"x"])
    an_hour_ago = int(time.time()) - 3600
    got = monitoring.list_time_series(
        request={
            "name": PROJECT,
            "filter": f'metric.type = "{PUBSUB}topic/num_unacked_messages_by_region"',
            "interval": {"end_time": {"seconds": an_hour_ago}},
        }
    )
    assert list(got) == []


# ------------------------------------------------------------------------ refusals

REFUSED = [
    (
        {"filter": f'metric.type = "{PUBSUB}topic/send_request_count" OR resource.type = "x"'},
        "OR is not supported (at character 64)",
    ),
    ({"filter": 'resource.type = "pubsub_topic"'}, "names no metric type"),
    ({"filter": f'metric.type = starts_with("{PUBSUB}topic/")'}, "must name one metric type"),
    (
        {"filter": f'metric.type = "{PUBSUB}topic/send_request_cuont"'},
        "did you mean 'pubsub.googleapis.com/topic/send_request_count'?",
    ),
    (
        {"filter": f'metric.type = "{PUBSUB}subscription/num_undelivered_messages"'},
        "is not served by the local server",
    ),
    (
        {
            "filter": f'metric.type = "{PUBSUB}topic/send_request_count" '
            'AND metric.labels.region = "x"'
        },
        "does not have (metric labels: response_class, response_code)",
    ),
    (
        {"filter": f'metric.type != "{PUBSUB}topic/send_request_count"'},
        "the operator != is not supported",
    ),
    (
        {
            "filter": f'metric.type = "{PUBSUB}topic/send_request_count" '
            'AND resource.labels.topic_id = has_substring("o")'
        },
        "the function has_substring() is not supported",
    ),
    (
        {"aggregation": {"alignment_period": {"seconds": 10}, "per_series_aligner": "ALIGN_DELTA"}},
        "alignment_period must be at least 60 seconds",
    ),
    ({"aggregation": {"cross_series_reducer": "REDUCE_SUM"}}, "needs a per_series_aligner"),
    (
        {
            "aggregation": {
                "alignment_period": {"seconds": 60},
                "per_series_aligner": "ALIGN_PERCENTILE_99",
            }
        },
        "ALIGN_PERCENTILE_99 is not supported for "
        "pubsub.googleapis.com/topic/send_request_count (DELTA INT64)",
    ),
    (
        {
            "aggregation": {
                "alignment_period": {"seconds": 60},
                "per_series_aligner": "ALIGN_DELTA",
                "cross_series_reducer": "REDUCE_STDDEV",
            }
        },
        "REDUCE_STDDEV is not supported",
    ),
    (
        {
            "aggregation": {
                "alignment_period": {"seconds": 60},
                "per_series_aligner": "ALIGN_DELTA",
                "cross_series_reducer": "REDUCE_SUM",
                "group_by_fields": ["metric.label.zone"],
            }
        },
        "has no metric label 'zone'",
    ),
    ({"order_by": "x"}, "order_by is not supported"),
    ({"name": "organizations/123"}, "expected projects/PROJECT_ID"),
    (
        {"interval": {"end_time": {"seconds": 100}, "start_time": {"seconds": 100}}},
        "is a DELTA metric",
    ),
    ({"interval": {"start_time": {"seconds": 100}}}, "interval.end_time is required"),
]


@pytest.mark.parametrize(("change", "message"), REFUSED, ids=[m for _, m in REFUSED])
def test_what_is_not_served_is_a_clear_invalid_argument(
    monitoring: Any, change: dict[str, Any], message: str
) -> None:
    now = int(time.time())
    request: dict[str, Any] = {
        "name": PROJECT,
        "filter": f'metric.type = "{PUBSUB}topic/send_request_count"',
        "interval": {"end_time": {"seconds": now}, "start_time": {"seconds": now - 600}},
        **change,
    }
    with pytest.raises(exceptions.InvalidArgument) as raised:
        list(monitoring.list_time_series(request=request))
    assert message in str(raised.value.message)


def test_the_monitoring_types_load_only_when_metrics_are_read() -> None:
    """A server never asked for metrics (every `--local` run) does not import the
    Monitoring client library (~0.3 s); the first ListTimeSeries does."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from reconciler.localserver import LocalServer\n"
        "from reconciler.backends.clients import publisher_client\n"
        "server = LocalServer().start()\n"
        "publisher_client(server.address).create_topic(name='projects/p-probe/topics/orders')\n"
        "print('BEFORE', 'google.cloud.monitoring_v3' in sys.modules)\n"
        "import urllib.parse, urllib.request\n"
        "query = urllib.parse.urlencode({'filter': 'metric.type = \"pubsub.googleapis.com/topic/"
        "send_request_count\"', 'interval.endTime': '2030-01-01T00:00:00Z', "
        "'interval.startTime': '2029-01-01T00:00:00Z'})\n"
        "url = f'http://{server.address}/v3/projects/p-probe/timeSeries?{query}'\n"
        "call = urllib.request.urlopen(url, timeout=60)\n"
        "print('STATUS', call.status)\n"
        "print('AFTER', 'google.cloud.monitoring_v3' in sys.modules)\n"
        "server.stop()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert "BEFORE False" in result.stdout, result.stdout + result.stderr
    assert "STATUS 200" in result.stdout and "AFTER True" in result.stdout, (
        result.stdout + result.stderr
    )
