"""Issue 40 item 4: subscription filters, the service's filter language applied to
what a subscription receives. The grammar table runs against the filter module; every
behaviour a client sees (refusals at create, delivery, the backlog figures, StreamingPull,
REST, a restart) runs through the real clients."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_support import rest

from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.backends.clients import subscriber_client as make_subscriber
from reconciler.localserver import LocalServer
from reconciler.localserver.pubsub.filters import (
    MAX_DEPTH,
    MAX_FILTER_BYTES,
    FilterError,
    compile_filter,
)
from tests.waiting import wait_until

P = "projects/proj-alpha"
T = f"{P}/topics/orders"
S = f"{P}/subscriptions/orders-sub"

# The attribute sets of Go's pstest filter tests (pubsub/pstest/filtering_test.go), so
# that both fakes answer the same table.
ATTRS = {
    1: {"lang": "en", "name": "com", "timezone": "UTC"},
    2: {"lang": "en", "name": "net", "timezone": "UTC"},
    3: {"lang": "en", "name": "org", "timezone": "UTC"},
    4: {"lang": "cn", "name": "com", "timezone": "UTC"},
    5: {"lang": "cn", "name": "net", "timezone": "UTC"},
    6: {"lang": "cn", "name": "org", "timezone": "UTC"},
    7: {"lang": "jp", "name": "co", "timezone": "UTC"},
    8: {"lang": "jp", "timezone": "UTC"},
    9: {"name": "com", "timezone": "UTC"},
    10: {"lang": "jp", "みんな": "dummy1"},
    11: {"みんな": "dummy2"},
    12: {"name": "com", "みんな": "dummy3"},
}
MATCHES = [
    ('attributes.name = "com"', [1, 4, 9, 12]),
    ('attributes.name != "com"', [2, 3, 5, 6, 7, 8, 10, 11]),  # absent counts as !=
    ('hasPrefix(attributes.name, "co")', [1, 4, 7, 9, 12]),
    ("attributes:name", [1, 2, 3, 4, 5, 6, 7, 9, 12]),
    ("NOT attributes:name", [8, 10, 11]),
    ('(NOT attributes:name) OR attributes.name = "co"', [7, 8, 10, 11]),
    ('NOT (attributes:name OR attributes.lang = "jp")', [11]),
    ('attributes.name = "com" AND -attributes:"lang"', [9, 12]),
    ('attributes:"みんな"', [10, 11, 12]),
    ('attributes.lang = "en" AND attributes.name != "org" AND attributes:timezone', [1, 2]),
    ('attributes.lang="cn"OR(attributes.name="co")', [4, 5, 6, 7]),
    ("attributes.\"name\" = 'net'", [2, 5]),
    ('attributes.name = "\\x63om"', [1, 4, 9, 12]),  # escapes in strings
    ('hasPrefix(attributes.name, "")', [1, 2, 3, 4, 5, 6, 7, 9, 12]),
    ("- - attributes:lang", [1, 2, 3, 4, 5, 6, 7, 8, 10]),
]


@pytest.mark.parametrize(("text", "want"), MATCHES, ids=[m[0] for m in MATCHES])
def test_the_language_keeps_what_the_service_keeps(text: str, want: list[int]) -> None:
    compiled = compile_filter(text)
    assert compiled is not None
    assert [k for k, attrs in ATTRS.items() if compiled.matches(attrs)] == want


REFUSED = [
    ("attributes:a AND attributes:b OR attributes:c", "AND and OR cannot be combined"),
    ('attributes.a = x', "a string literal"),
    ('attributes.a == "x"', "a string literal"),
    ('hasprefix(attributes.a, "x")', "the function is hasPrefix"),
    ("attributes:a and attributes:b", "boolean operators are written in capitals: AND"),
    ('data = "x"', "a condition on attributes"),
    ('attributes.a = "x', "not closed"),
    ('attributes.a = "\\q"', "unknown escape"),
    ("attributes:a)", "AND, OR or the end"),
    ("(attributes:a", "')'"),
    ("NOT", "the filter ends"),
    ("   ", "the filter ends"),
    ('hasPrefix(attributes.a)', "','"),
    ("attributes.a", "=, != after the attribute"),
    ('attributes.a = "\\ud800"', "names no Unicode character"),
]


@pytest.mark.parametrize(("text", "says"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_the_language_refuses(text: str, says: str) -> None:
    with pytest.raises(FilterError, match=says.replace("(", r"\(").replace(")", r"\)")):
        compile_filter(text)


def test_nesting_is_bounded() -> None:
    deep = "(" * MAX_DEPTH + "attributes:a" + ")" * MAX_DEPTH
    with pytest.raises(FilterError, match=f"more than {MAX_DEPTH} deep"):
        compile_filter(deep)
    fits = "(" * (MAX_DEPTH - 1) + "attributes:a" + ")" * (MAX_DEPTH - 1)
    assert compile_filter(fits) is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_compiles_or_is_refused_clearly(text: str) -> None:
    """Whatever a client sends: a filter, or a FilterError with a place in the text;
    never another exception, and a compiled filter always answers a boolean."""
    try:
        compiled = compile_filter(text)
    except FilterError as exc:
        assert 0 <= exc.offset <= max(len(text), MAX_FILTER_BYTES)
        return
    if compiled is not None:
        assert compiled.matches({"a": "b"}) in (True, False)


# --------------------------------------------------------------- through the clients


@pytest.fixture
def topic(publisher_client: Any) -> str:
    publisher_client.create_topic(name=T)
    return T


def _publish(pub: Any, attrs: list[dict[str, str]], topic: str = T) -> list[str]:
    response = pub.publish(
        topic=topic, messages=[{"data": b"m%d" % i, "attributes": a} for i, a in enumerate(attrs)]
    )
    return list(response.message_ids)


def _pull_data(sub: Any, name: str = S) -> list[bytes]:
    got = sub.pull(request={"subscription": name, "max_messages": 100, "return_immediately": True})
    return [m.message.data for m in got.received_messages]


def _gauge(monitoring: Any, metric: str) -> dict[str, int]:
    now = int(time.time())
    series = monitoring.list_time_series(
        request={
            "name": P,
            "filter": f'metric.type = "pubsub.googleapis.com/{metric}"',
            "interval": {"end_time": {"seconds": now + 1}},
        }
    )
    return {ts.metric.labels["region"]: ts.points[0].value.int64_value for ts in series}


def test_publish_ten_the_filter_excludes_four(
    subscriber_client: Any, publisher_client: Any, monitoring_client: Any, topic: str
) -> None:
    sub = subscriber_client
    sub.create_subscription(
        request={
            "name": S, "topic": topic, "filter": 'attributes.kind = "order"',
            "retain_acked_messages": True,
        }
    )
    other = f"{P}/subscriptions/everything"
    sub.create_subscription(request={"name": other, "topic": topic})
    kinds = ["order"] * 6 + ["refund", "audit", "order-x", ""]
    _publish(publisher_client, [{"kind": k} if k else {} for k in kinds])
    assert sorted(_pull_data(sub)) == sorted(b"m%d" % i for i in range(6))
    assert _pull_data(sub) == []  # the 4 others were acknowledged for the subscriber
    assert len(_pull_data(sub, other)) == 10  # an unfiltered one gets them all
    # The backlog figures: 6 unacked (leased, not yet acked) on the filtered one, the 4
    # excluded retained as acked; the topic adds up both subscriptions.
    unacked = _gauge(monitoring_client, "topic/num_unacked_messages_by_region")
    assert unacked == {"us-central1": 16}
    subs = monitoring_client.list_time_series(
        request={
            "name": P,
            "filter": 'metric.type = "pubsub.googleapis.com/subscription/'
            'num_unacked_messages_by_region" AND resource.labels.subscription_id = "orders-sub"',
            "interval": {"end_time": {"seconds": int(time.time()) + 1}},
        }
    )
    assert [ts.points[0].value.int64_value for ts in subs] == [6]
    retained = _gauge(monitoring_client, "subscription/num_retained_acked_messages_by_region")
    assert retained == {"us-central1": 4}


def test_streaming_pull_delivers_only_what_matches(
    subscriber_client: Any, publisher_client: Any, local_server: Any, topic: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.cloud import pubsub_v1

    subscriber_client.create_subscription(
        request={"name": S, "topic": topic, "filter": 'hasPrefix(attributes.region, "eu-")'}
    )
    _publish(publisher_client, [{"region": r} for r in ["eu-west", "us-east", "eu-north", "ap"]])
    received: list[bytes] = []
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.SubscriberClient()
    future = client.subscribe(S, lambda m: (received.append(m.data), m.ack()))
    try:
        wait_until(lambda: len(received) >= 2, what="the two matching messages")
        _publish(publisher_client, [{"region": "eu-south"}, {"region": "us"}])
        wait_until(lambda: len(received) >= 3, what="the third matching message")
    finally:
        future.cancel()
        client.close()
    assert sorted(received) == [b"m0", b"m0", b"m2"]  # the second publish's m0 is eu-south


def test_a_filter_the_language_refuses_is_invalid_argument_at_create(
    subscriber_client: Any, topic: str
) -> None:
    with pytest.raises(exceptions.InvalidArgument) as caught:
        subscriber_client.create_subscription(
            request={"name": S, "topic": topic, "filter": "attributes:a and attributes:b"}
        )
    assert caught.value.message == (
        "Invalid filter 'attributes:a and attributes:b': expected AND, OR or the end of the "
        "filter, found 'and' (boolean operators are written in capitals: AND) (at character 14)."
    )
    with pytest.raises(exceptions.NotFound):  # nothing was created
        subscriber_client.get_subscription(subscription=S)


def test_the_length_limit_is_256_bytes(subscriber_client: Any, topic: str) -> None:
    head = 'attributes.k = "'
    at_limit = head + "x" * (MAX_FILTER_BYTES - len(head) - 1) + '"'
    assert len(at_limit.encode()) == MAX_FILTER_BYTES
    created = subscriber_client.create_subscription(
        request={"name": S, "topic": topic, "filter": at_limit}
    )
    assert created.filter == at_limit
    # Bytes, not characters: 255 characters, two of them 2 bytes long.
    over = head + "éé" + "x" * (MAX_FILTER_BYTES - len(head) - 4) + '"'
    assert len(over) == MAX_FILTER_BYTES - 1 and len(over.encode()) == MAX_FILTER_BYTES + 1
    with pytest.raises(exceptions.InvalidArgument, match="257 bytes long; a filter is at most 256"):
        subscriber_client.create_subscription(
            request={"name": f"{P}/subscriptions/too-long", "topic": topic, "filter": over}
        )


def test_the_filter_cannot_be_updated(subscriber_client: Any, topic: str) -> None:
    subscriber_client.create_subscription(
        request={"name": S, "topic": topic, "filter": "attributes:a"}
    )
    with pytest.raises(exceptions.InvalidArgument, match="the filter field in the Subscription "
                                                         "is not mutable"):
        subscriber_client.update_subscription(
            request={
                "subscription": {"name": S, "filter": "attributes:b"},
                "update_mask": {"paths": ["filter"]},
            }
        )
    assert subscriber_client.get_subscription(subscription=S).filter == "attributes:a"


def test_rest_refuses_a_bad_filter_with_400(local_server: Any, publisher_client: Any) -> None:
    publisher_client.create_topic(name=T)
    answer = rest(local_server.address, "PUT", f"/v1/{S}",
                  {"topic": T, "filter": 'attributes.a = "x" OR'})
    assert answer.status == 400
    assert answer.body["error"]["status"] == "INVALID_ARGUMENT"
    assert "the filter ends where" in answer.body["error"]["message"]
    ok = rest(local_server.address, "PUT", f"/v1/{S}", {"topic": T, "filter": "attributes:a"})
    assert ok.status == 200 and ok.body["filter"] == "attributes:a"


def test_filtered_messages_stay_acknowledged_after_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"

    def serve() -> tuple[LocalServer, Any, Any]:
        server = LocalServer(state_dir=state).start()
        return server, make_publisher(server.address), make_subscriber(server.address)

    server, pub, sub = serve()
    try:
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": S, "topic": T, "filter": "NOT attributes:skip"})
        _publish(pub, [{}, {"skip": "1"}, {}, {"skip": ""}])
    finally:
        server.crash()  # as kill -9: only the journal survives
    server, pub, sub = serve()
    try:
        assert sorted(_pull_data(sub)) == [b"m0", b"m2"]
        assert sub.get_subscription(subscription=S).filter == "NOT attributes:skip"
    finally:
        server.stop()
