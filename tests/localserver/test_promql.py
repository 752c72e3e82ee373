"""Cloud Monitoring's PromQL instant query on the local server's REST face
(`GET /v1/projects/P/location/global/prometheus/api/v1/query`), read as any HTTP
client would: the by-region gauges with the very values `ListTimeSeries` gives the
real `google-cloud-monitoring` client, label matching, counting, and Prometheus'
error shape for what the subset does not serve."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import pytest
from rest_support import rest

from reconciler.localserver import CLIENT_REGION_KEY

PROJECT = "proj-alpha"
T = f"projects/{PROJECT}/topics/orders"
S = f"projects/{PROJECT}/subscriptions/orders-sub"
QUERY = f"/v1/projects/{PROJECT}/location/global/prometheus/api/v1/query"
SUB = "pubsub_googleapis_com:subscription_"
UNACKED = [f"{SUB}num_unacked_messages_by_region", f"{SUB}unacked_bytes_by_region",
           f"{SUB}oldest_unacked_message_age_by_region"]


def _query(server: Any, query: str, **params: str) -> Any:
    return rest(server.address, "GET", f"{QUERY}?{urlencode({'query': query, **params})}")


def _vector(server: Any, query: str, **params: str) -> dict[tuple[str, ...], float]:
    """(__name__ without its prefix, subscription or topic id, region) -> value."""
    answer = _query(server, query, **params)
    assert answer.status == 200, answer.body
    assert answer.body["status"] == "success"
    assert answer.body["data"]["resultType"] == "vector"
    out = {}
    for item in answer.body["data"]["result"]:
        labels = item["metric"]
        assert labels["project_id"] == PROJECT
        rid = labels.get("subscription_id") or labels["topic_id"]
        out[(labels["__name__"].split(":", 1)[1], rid, labels["region"])] = float(
            item["value"][1]
        )
    return out


@pytest.fixture
def stored(publisher_client: Any, subscriber_client: Any) -> None:
    """orders (us-east1, europe-west1) with orders-sub; 1 x 3 bytes from us-east1 and
    2 x 5 bytes from europe-west1, nothing acknowledged."""
    publisher_client.create_topic(request={
        "name": T, "message_storage_policy": {
            "allowed_persistence_regions": ["us-east1", "europe-west1"]},
    })
    subscriber_client.create_subscription(request={"name": S, "topic": T})
    for region, data in (("us-east1", [b"abc"]), ("europe-west1", [b"hello", b"world"])):
        publisher_client.publish(topic=T, messages=[{"data": d} for d in data],
                                 metadata=[(CLIENT_REGION_KEY, region)], retry=None)


def test_one_query_reads_three_gauges_with_the_values_list_time_series_gives(
    local_server: Any, stored: None, monitoring_client: Any,
) -> None:
    local_server.counters.reset()
    names = "|".join(UNACKED)
    got = _vector(local_server, f'{{__name__=~"{names}",project_id="{PROJECT}",'
                                f'subscription_id="orders-sub"}}')
    assert local_server.counters.for_project("PromQLQuery", PROJECT) == 1
    assert local_server.counters.get("ListTimeSeries") == 0
    counts = {k[2]: v for k, v in got.items() if k[0].startswith("subscription_num")}
    size = {k[2]: v for k, v in got.items() if k[0].startswith("subscription_unacked_bytes")}
    assert counts == {"us-east1": 1, "europe-west1": 2}
    assert size == {"us-east1": 3, "europe-west1": 10}
    assert len(got) == 6  # three gauges, two regions
    # The same readings through the gRPC face and the real Monitoring client.
    now = time.time()
    for name in UNACKED:
        metric = "pubsub.googleapis.com/subscription/" + name.split("subscription_", 1)[1]
        series = monitoring_client.list_time_series(request={
            "name": f"projects/{PROJECT}", "filter": f'metric.type = "{metric}"',
            "interval": {"end_time": {"seconds": int(now) + 1}},
        })
        grpc_values = {ts.metric.labels["region"]: ts.points[0].value.int64_value
                       for ts in series}
        short = name.split(":", 1)[1]
        promql_values = {k[2]: v for k, v in got.items() if k[0] == short}
        if "oldest" in name:  # an age: read a moment apart
            assert set(grpc_values) == set(promql_values)
            assert all(abs(grpc_values[r] - promql_values[r]) <= 2 for r in grpc_values)
        else:
            assert grpc_values == promql_values


def test_label_matchers_match_whole_values(local_server: Any, stored: None) -> None:
    gauge = f"{SUB}num_unacked_messages_by_region"
    assert _vector(local_server, f'{gauge}{{subscription_id=~"orders"}}') == {}  # anchored
    assert len(_vector(local_server, f'{gauge}{{subscription_id=~"orders.*"}}')) == 2
    assert set(_vector(local_server, f'{gauge}{{region!="us-east1"}}')) == {
        ("subscription_num_unacked_messages_by_region", "orders-sub", "europe-west1")}
    assert set(_vector(local_server, f'{gauge}{{region!~"us-.*|asia-.*"}}')) == {
        ("subscription_num_unacked_messages_by_region", "orders-sub", "europe-west1")}
    # The metrics scope is the project of the path: another project_id selects nothing.
    assert _vector(local_server, f'{gauge}{{project_id="proj-beta"}}') == {}
    # The topic gauges add up their subscriptions'; monitored_resource picks the type.
    topic = _vector(local_server, '{__name__=~"pubsub_googleapis_com:.*num_unacked.*",'
                                  'monitored_resource="pubsub_topic"}')
    assert topic == {("topic_num_unacked_messages_by_region", "orders", "us-east1"): 1,
                     ("topic_num_unacked_messages_by_region", "orders", "europe-west1"): 2}


@pytest.mark.parametrize(("matcher", "expected"), [
    ('topic_id=~"t\\\\.1|t-2"', {"t.1", "t-2"}),  # escaped literals: looked up
    ('topic_id=~"t.1|t-2"', {"t.1", "tx1", "t-2"}),  # "." is any character: searched
    ('topic_id="tx1"', {"tx1"}),
    ('topic_id=~"t\\\\.1|nope"', {"t.1"}),  # an id that is not there selects nothing
    ('topic_id=~"(t-2)"', {"t-2"}),
    ('topic_id=~"t\\\\d"', set()),  # a class, not a literal d
    ('topic_id=~"t.1",topic_id=~"tx1|t\\\\.1"', {"t.1", "tx1"}),
])
def test_ids_named_in_a_matcher_select_what_matching_selects(
    local_server: Any, publisher_client: Any, subscriber_client: Any, matcher: str,
    expected: set[str],
) -> None:
    """The server looks up the ids of an alternation of literals (what reconcile asks
    for) instead of matching every topic: the same answer either way."""
    for tid in ("t.1", "tx1", "t-2", "t-3"):
        name = f"projects/{PROJECT}/topics/{tid}"
        publisher_client.create_topic(name=name)
        subscriber_client.create_subscription(request={"name": f"{name}-s".replace(
            "/topics/", "/subscriptions/"), "topic": name})
        publisher_client.publish(topic=name, messages=[{"data": b"x"}],
                                 metadata=[(CLIENT_REGION_KEY, "us-east1")], retry=None)
    gauge = "pubsub_googleapis_com:topic_num_unacked_messages_by_region"
    assert {k[1] for k in _vector(local_server, f"{gauge}{{{matcher}}}")} == expected
    sub_gauge = f"{SUB}num_unacked_messages_by_region"
    on_subs = matcher.replace("topic_id", "subscription_id")
    assert _vector(local_server, f"{sub_gauge}{{{on_subs}}}") == {}  # no subscription's id
    if expected:
        sub_ids = "|".join(f"{t}-s".replace(".", "\\\\.") for t in sorted(expected))
        got = _vector(local_server, f'{sub_gauge}{{subscription_id=~"{sub_ids}"}}')
        assert {k[1] for k in got} == {f"{t}-s" for t in expected}


def test_a_time_in_the_past_has_no_gauge_reading(local_server: Any, stored: None) -> None:
    gauge = f"{SUB}num_unacked_messages_by_region"
    assert len(_vector(local_server, gauge, time=f"{time.time():.3f}")) == 2
    assert _vector(local_server, gauge, time=f"{time.time() - 3600:.0f}") == {}


@pytest.mark.parametrize("query", [
    "rate(pubsub_googleapis_com:topic_unacked_bytes_by_region[5m])",
    "sum(pubsub_googleapis_com:topic_unacked_bytes_by_region)",
    "pubsub_googleapis_com:topic_unacked_bytes_by_region > 0",
    "pubsub_googleapis_com:topic_unacked_bytes_by_region[5m]",
    "pubsub_googleapis_com:topic_unacked_bytes_by_region offset 5m",
    '{region=""}',
    '{region=~"("}',
    '{region="us-east1" topic_id="a"}',
    "",
])
def test_what_the_subset_does_not_serve_is_prometheus_bad_data(
    local_server: Any, query: str
) -> None:
    answer = _query(local_server, query)
    assert answer.status == 400
    assert answer.body["status"] == "error" and answer.body["errorType"] == "bad_data"
    assert answer.body["error"]


def test_an_injected_permission_denied_is_a_403(local_server: Any) -> None:
    local_server.faults.add(method="PromQLQuery", error="PERMISSION_DENIED")
    answer = _query(local_server, f"{SUB}num_unacked_messages_by_region")
    assert answer.status == 403 and answer.body["status"] == "error"
    assert local_server.counters.for_project("PromQLQuery", PROJECT) == 1


def test_the_command_line_accepts_a_fault_on_promql_queries() -> None:
    """`reconcile local-server --fault PromQLQuery:...` checks names against the same
    list the server's rules do (it was refused while rules added in code worked)."""
    from reconciler.localserver.faults.faultspec import parse_fault_spec
    from reconciler.localserver.server import method_names

    spec = parse_fault_spec("PromQLQuery:error=PERMISSION_DENIED", method_names())
    assert spec["method"] == "PromQLQuery"
