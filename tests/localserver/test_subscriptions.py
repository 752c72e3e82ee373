"""Issue 22: the Subscriber service through the real `SubscriberClient`: subscription
admin with the service's checks, Pull, acks, deadlines and redelivery, retention,
detach, deleted topics, and the storage policy on every path."""

from __future__ import annotations

import queue
from typing import Any

import pytest
from google.api_core import exceptions
from subscriber_support import make_subscriber, queued_requests

from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.localserver import CLIENT_REGION_KEY, LocalServer
from reconciler.localserver.api import protos

P = "projects/proj-alpha"
T = f"{P}/topics/orders"
S = f"{P}/subscriptions/orders-sub"


@pytest.fixture
def topic(publisher_client: Any) -> str:
    publisher_client.create_topic(name=T)
    return T


def _region(region: str) -> list[tuple[str, str]]:
    return [(CLIENT_REGION_KEY, region)]


def _pull(sub: Any, name: str = S, n: int = 100, **kwargs: Any) -> list[Any]:
    request = {"subscription": name, "max_messages": n, **kwargs.pop("request", {})}
    return list(sub.pull(request=request, timeout=30, retry=None, **kwargs).received_messages)


# ------------------------------------------------------------------ admin


def test_create_get_update_list_delete(
    subscriber_client: Any, publisher_client: Any, topic: str
) -> None:
    sub = subscriber_client
    created = sub.create_subscription(
        request={"name": S, "topic": topic, "labels": {"team": "a"}}
    )
    assert created.ack_deadline_seconds == 10  # the default
    assert created.message_retention_duration.total_seconds() == 7 * 24 * 3600
    assert created.state.name == "ACTIVE"
    updated = sub.update_subscription(
        request={
            "subscription": {"name": S, "ack_deadline_seconds": 30, "labels": {"team": "b"}},
            "update_mask": {"paths": ["ack_deadline_seconds"]},
        }
    )
    assert updated.ack_deadline_seconds == 30
    assert dict(updated.labels) == {"team": "a"}  # not in the mask: unchanged
    assert sub.get_subscription(subscription=S).ack_deadline_seconds == 30
    assert [s.name for s in sub.list_subscriptions(project=P)] == [S]
    assert list(publisher_client.list_topic_subscriptions(topic=topic)) == [S]
    sub.delete_subscription(subscription=S)
    with pytest.raises(exceptions.NotFound, match="Subscription does not exist"):
        sub.get_subscription(subscription=S)
    assert list(publisher_client.list_topic_subscriptions(topic=topic)) == []


REFUSED = [
    ("ack deadline 5 s", {"ack_deadline_seconds": 5}, "ack_deadline_secs out of bounds"),
    ("ack deadline 601 s", {"ack_deadline_seconds": 601}, "ack_deadline_secs out of bounds"),
    ("retention 9 min", {"message_retention_duration": {"seconds": 540}},
     "message_retention_duration out of bounds"),
    ("retention 8 days", {"message_retention_duration": {"seconds": 8 * 86400}},
     "message_retention_duration out of bounds"),
    ("name starting goog", {"name": f"{P}/subscriptions/goog-sub"}, "must not start with 'goog'"),
    ("name too short", {"name": f"{P}/subscriptions/ab"}, "3 to 255 characters"),
    ("name with a digit first", {"name": f"{P}/subscriptions/1sub"}, "must start with a letter"),
    ("two delivery types", {"push_config": {"push_endpoint": "https://example.com/p"},
                            "cloud_storage_config": {"bucket": "b-1"}}, "At most one of"),
    ("bad BigQuery table", {"bigquery_config": {"table": "no-dots"}}, "PROJECT_ID.DATASET_ID"),
]


@pytest.mark.parametrize(("label", "fields", "says"), REFUSED, ids=[r[0] for r in REFUSED])
def test_create_refuses_what_the_service_refuses(
    subscriber_client: Any, topic: str, label: str, fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(exceptions.InvalidArgument) as refused:
        subscriber_client.create_subscription(request={"name": S, "topic": topic, **fields})
    assert says in refused.value.message


def test_exactly_at_the_limits_passes(subscriber_client: Any, topic: str) -> None:
    for i, (ack, retention) in enumerate([(10, 600), (600, 7 * 86400)]):
        created = subscriber_client.create_subscription(
            request={
                "name": f"{S}-{i}",
                "topic": topic,
                "ack_deadline_seconds": ack,
                "message_retention_duration": {"seconds": retention},
            }
        )
        assert created.ack_deadline_seconds == ack


def test_admin_errors_have_the_service_codes(subscriber_client: Any, topic: str) -> None:
    sub = subscriber_client
    with pytest.raises(exceptions.NotFound, match="Subscription topic does not exist"):
        sub.create_subscription(request={"name": S, "topic": f"{P}/topics/missing"})
    sub.create_subscription(request={"name": S, "topic": topic})
    with pytest.raises(exceptions.AlreadyExists, match="Subscription already exists"):
        sub.create_subscription(request={"name": S, "topic": topic})
    with pytest.raises(exceptions.InvalidArgument, match="non-empty paths list"):
        sub.update_subscription(request={"subscription": {"name": S}, "update_mask": {}})
    immutable = "topic field in the Subscription is not mutable"
    with pytest.raises(exceptions.InvalidArgument, match=immutable):
        sub.update_subscription(
            request={"subscription": {"name": S, "topic": T}, "update_mask": {"paths": ["topic"]}}
        )
    with pytest.raises(exceptions.InvalidArgument, match="No max_messages specified"):
        _pull(sub, n=0)
    with pytest.raises(exceptions.InvalidArgument, match="at most 1000"):
        _pull(sub, n=1001)
    with pytest.raises(exceptions.InvalidArgument, match="Invalid ack id"):
        sub.acknowledge(request={"subscription": S, "ack_ids": ["garbage"]})
    with pytest.raises(exceptions.InvalidArgument, match="No ack ids specified"):
        sub.acknowledge(request={"subscription": S, "ack_ids": []})
    with pytest.raises(exceptions.InvalidArgument, match="maximum is 600"):
        sub.modify_ack_deadline(
            request={"subscription": S, "ack_ids": ["1-1"], "ack_deadline_seconds": 601}
        )
    with pytest.raises(exceptions.NotFound):
        _pull(sub, name=f"{P}/subscriptions/missing")


# --------------------------------------------------------------- delivery


def test_pull_ack_and_redelivery(subscriber_client: Any, publisher_client: Any, topic: str) -> None:
    sub = subscriber_client
    sub.create_subscription(request={"name": S, "topic": topic})
    ids = publisher_client.publish(topic=topic, messages=[{"data": b"one"}, {"data": b"two"}])
    got = _pull(sub)
    assert [(m.message.data, m.message.message_id) for m in got] == [
        (b"one", ids.message_ids[0]),
        (b"two", ids.message_ids[1]),
    ]
    assert all(m.message.publish_time for m in got)
    assert _pull(sub, request={"return_immediately": True}) == []  # both leased
    sub.acknowledge(request={"subscription": S, "ack_ids": [got[0].ack_id]})
    # A nack (deadline 0) hands the message back at once.
    sub.modify_ack_deadline(
        request={"subscription": S, "ack_ids": [got[1].ack_id], "ack_deadline_seconds": 0}
    )
    again = _pull(sub)
    assert [m.message.data for m in again] == [b"two"]
    # A short deadline that passes: the pull waits for it, then redelivers.
    sub.modify_ack_deadline(
        request={"subscription": S, "ack_ids": [again[0].ack_id], "ack_deadline_seconds": 1}
    )
    third = _pull(sub)
    assert [m.message.data for m in third] == [b"two"]
    assert third[0].ack_id != again[0].ack_id
    sub.acknowledge(request={"subscription": S, "ack_ids": [third[0].ack_id]})
    assert _pull(sub, request={"return_immediately": True}) == []


def test_retain_acked_messages_are_counted_apart(
    subscriber_client: Any, publisher_client: Any, local_server: Any, topic: str
) -> None:
    subscriber_client.create_subscription(
        request={"name": S, "topic": topic, "retain_acked_messages": True}
    )
    publisher_client.publish(topic=topic, messages=[{"data": b"a"}, {"data": b"bb"}])
    got = _pull(subscriber_client)
    subscriber_client.acknowledge(request={"subscription": S, "ack_ids": [got[0].ack_id]})
    stats = local_server.subscription_stats(S)
    assert {r: (s.count, s.bytes) for r, s in stats.unacked.items()} == {"us-central1": (1, 2)}
    assert {r: (s.count, s.bytes) for r, s in stats.retained_acked.items()} == {
        "us-central1": (1, 1)
    }


def test_detach_drops_the_backlog_and_refuses_pull(
    subscriber_client: Any, publisher_client: Any, local_server: Any, topic: str
) -> None:
    subscriber_client.create_subscription(request={"name": S, "topic": topic})
    publisher_client.publish(topic=topic, messages=[{"data": b"x"}])
    publisher_client.detach_subscription(request={"subscription": S})
    assert subscriber_client.get_subscription(subscription=S).detached
    assert list(publisher_client.list_topic_subscriptions(topic=topic)) == []
    with pytest.raises(exceptions.FailedPrecondition, match="detached"):
        _pull(subscriber_client)
    assert local_server.subscription_stats(S).unacked == {}
    with pytest.raises(exceptions.NotFound):
        publisher_client.detach_subscription(request={"subscription": f"{S}-missing"})


def test_deleting_the_topic_leaves_subscriptions_at_deleted_topic(
    subscriber_client: Any, publisher_client: Any, local_server: Any, topic: str
) -> None:
    subscriber_client.create_subscription(request={"name": S, "topic": topic})
    publisher_client.publish(topic=topic, messages=[{"data": b"kept"}])
    publisher_client.delete_topic(topic=topic)
    assert subscriber_client.get_subscription(subscription=S).topic == "_deleted-topic_"
    assert [m.message.data for m in _pull(subscriber_client)] == [b"kept"]
    publisher_client.create_topic(name=topic)  # a new topic of that name: not re-attached
    assert list(publisher_client.list_topic_subscriptions(topic=topic)) == []
    assert local_server.messages(topic) == []  # the old topic's messages went with it


def test_backlog_is_bounded_dropping_the_oldest(publisher_client: Any) -> None:
    with LocalServer(max_backlog=100) as server:

        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": S, "topic": T})
        for i in range(10):
            pub.publish(topic=T, messages=[{"data": f"{i}-{j}".encode()} for j in range(100)])
        assert server.subscription_stats(S).unacked["us-central1"].count == 100
        got = _pull(sub, n=1000)
        assert [m.message.data for m in got][:2] == [b"9-0", b"9-1"]  # the newest 100
        assert len(got) == 100


# ------------------------------------------------------- storage policy paths


def _policy_topic(pub: Any, name: str, regions: list[str], enforce: bool) -> str:
    pub.create_topic(
        request={
            "name": name,
            "message_storage_policy": {
                "allowed_persistence_regions": regions,
                "enforce_in_transit": enforce,
            },
        }
    )
    return name


def test_each_message_is_persisted_in_the_receiving_or_nearest_allowed_region(
    subscriber_client: Any, publisher_client: Any, local_server: Any
) -> None:
    pub, sub = publisher_client, subscriber_client
    topic = _policy_topic(pub, f"{P}/topics/placed", ["us-central1", "europe-west4"], False)
    sub.create_subscription(request={"name": S, "topic": topic})
    for region in ("us-east1", "europe-west1", "europe-west4", "asia-east1"):
        pub.publish(topic=topic, messages=[{"data": region.encode()}], metadata=_region(region))
    stats = local_server.subscription_stats(S).unacked
    # us-east1 -> us-central1 (the seed's example), Belgium -> the Netherlands, an
    # allowed region keeps its own, Taiwan -> the Netherlands (9,400 km; Iowa 12,000).
    assert {r: s.count for r, s in stats.items()} == {"us-central1": 1, "europe-west4": 3}
    # Narrowing the policy moves nothing already stored.
    pub.update_topic(
        request={
            "topic": {"name": topic, "message_storage_policy": {
                "allowed_persistence_regions": ["europe-west4"]}},
            "update_mask": {"paths": ["message_storage_policy"]},
        }
    )
    pub.publish(topic=topic, messages=[{"data": b"later"}], metadata=_region("us-east1"))
    stats = local_server.subscription_stats(S).unacked
    assert {r: s.count for r, s in stats.items()} == {"us-central1": 1, "europe-west4": 4}
    assert local_server.topic_stats(topic).unacked["europe-west4"].count == 4


def test_in_transit_enforced_on_pull_and_streaming_pull(
    subscriber_client: Any, publisher_client: Any
) -> None:
    """The same state, an allowed and a disallowed client region."""
    from google.pubsub_v1.types import StreamingPullRequest

    pub, sub = publisher_client, subscriber_client
    topic = _policy_topic(pub, f"{P}/topics/enforced", ["europe-west1"], True)
    sub.create_subscription(request={"name": S, "topic": topic})
    pub.publish(topic=topic, messages=[{"data": b"eu"}], metadata=_region("europe-west1"))
    with pytest.raises(exceptions.FailedPrecondition) as refused:
        _pull(sub, metadata=_region("us-east1"))
    assert refused.value.message == (
        f"Pull request received in region us-east1, which the message storage policy of "
        f"{topic} does not allow (enforce_in_transit is set; allowed regions: europe-west1)."
    )
    # A request that names no region is received in the default one, us-central1:
    # refused as one that names it (reconciler/orgpolicy/publishing.py).
    with pytest.raises(exceptions.FailedPrecondition) as undeclared:
        _pull(sub)
    assert undeclared.value.message.startswith(
        "Pull request received in region us-central1 (the default: the request declares no "
        "region in x-reconcile-client-region and the server has no --client-region), which "
    )
    first = StreamingPullRequest(subscription=S, stream_ack_deadline_seconds=30)
    with pytest.raises(exceptions.FailedPrecondition, match="StreamingPull request received"):
        for _ in sub.streaming_pull(requests=iter([first]), metadata=_region("us-east1")):
            pass
    got = _pull(sub, metadata=_region("europe-west1"))
    assert [m.message.data for m in got] == [b"eu"]
    sub.modify_ack_deadline(
        request={"subscription": S, "ack_ids": [got[0].ack_id], "ack_deadline_seconds": 0}
    )
    requests: queue.Queue[Any] = queue.Queue()
    requests.put(first)  # kept open: a request stream that ends may end the call empty
    stream = sub.streaming_pull(
        requests=queued_requests(requests), metadata=_region("europe-west1")
    )
    try:
        response = next(iter(stream))
    finally:
        requests.put(None)
    assert [m.message.data for m in response.received_messages] == [b"eu"]
    stream.cancel()


# ----------------------------------------------------------- exports and push


def test_export_pauses_under_in_transit_and_resumes_when_the_policy_allows(
    publisher_client: Any,
) -> None:
    where = {"bigquery:proj-alpha.sales": "europe-west4", "push:hooks.example.com": "us-east1"}
    with LocalServer(destination_locations=where) as server:
        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        topic = _policy_topic(pub, f"{P}/topics/exported", ["europe-west1"], True)
        bq = sub.create_subscription(
            request={
                "name": f"{P}/subscriptions/to-bq",
                "topic": topic,
                "bigquery_config": {"table": "proj-alpha.sales.orders"},
            }
        )
        push = sub.create_subscription(
            request={
                "name": f"{P}/subscriptions/to-push",
                "topic": topic,
                "push_config": {"push_endpoint": "https://hooks.example.com/in"},
            }
        )
        assert bq.bigquery_config.state.name == "IN_TRANSIT_LOCATION_RESTRICTION"
        assert push.state.name == "RESOURCE_ERROR"
        pub.publish(topic=topic, messages=[{"data": b"held"}], metadata=_region("europe-west1"))
        assert server.subscription_stats(f"{P}/subscriptions/to-bq").unacked[
            "europe-west1"
        ].count == 1  # delivery paused: held in the backlog
        pub.update_topic(
            request={
                "topic": {"name": topic, "message_storage_policy": {
                    "allowed_persistence_regions": ["europe-west1", "europe-west4"],
                    "enforce_in_transit": True}},
                "update_mask": {"paths": ["message_storage_policy"]},
            }
        )
        bq = sub.get_subscription(subscription=f"{P}/subscriptions/to-bq")
        assert bq.bigquery_config.state.name == "ACTIVE"
        assert server.subscription_stats(f"{P}/subscriptions/to-bq").unacked == {}  # delivered
        assert sub.get_subscription(subscription=f"{P}/subscriptions/to-push").state.name == (
            "RESOURCE_ERROR"  # us-east1 is still not allowed
        )
        server.set_destination_location("push:hooks.example.com", "europe-west4")
        assert sub.get_subscription(subscription=f"{P}/subscriptions/to-push").state.name == (
            "ACTIVE"
        )
        assert server.subscription_stats(f"{P}/subscriptions/to-push").unacked == {}


def test_publish_outcomes_are_recorded(
    publisher_client: Any, local_server: Any, topic: str
) -> None:
    publisher_client.publish(topic=topic, messages=[{"data": b"x"}])
    with pytest.raises(exceptions.InvalidArgument):
        publisher_client.publish(topic=topic, messages=[{"data": b""}], retry=None)
    outcomes = local_server.outcomes.recent(topic=topic)
    assert [(o.code, o.messages) for o in outcomes] == [("OK", 1), ("INVALID_ARGUMENT", 1)]
    assert all(o.latency_s > 0 for o in outcomes)
    assert local_server.outcomes.totals()[(topic, "OK")] == 1


def test_a_listing_answers_what_get_answers_after_every_change() -> None:
    """ListSubscriptions serves kept serialized views: each change to a subscription,
    its topic, its policy or a destination's location shows in the next page."""
    where = {"bigquery:proj-alpha.sales": "europe-west4"}
    with LocalServer(destination_locations=where) as server:
        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        topic = _policy_topic(pub, f"{P}/topics/exported", ["europe-west1"], False)
        names = [f"{P}/subscriptions/pulled", f"{P}/subscriptions/to-bq"]  # name order
        sub.create_subscription(request={
            "name": names[1], "topic": topic,
            "bigquery_config": {"table": "proj-alpha.sales.orders"},
        })
        sub.create_subscription(request={"name": names[0], "topic": topic})

        def listed() -> list[Any]:
            pager = sub.list_subscriptions(request={"project": P, "page_size": 1})
            return [type(s).pb(s) for s in pager]

        def got() -> list[Any]:
            return [type(s).pb(s) for s in (sub.get_subscription(subscription=n) for n in names)]

        assert listed() == got()
        bq_state = protos.BigQueryConfig.State
        assert listed()[1].bigquery_config.state == bq_state.Value("ACTIVE")
        sub.update_subscription(request={
            "subscription": {"name": names[0], "ack_deadline_seconds": 42},
            "update_mask": {"paths": ["ack_deadline_seconds"]},
        })
        assert listed()[0].ack_deadline_seconds == 42
        pub.update_topic(request={
            "topic": {"name": topic, "message_retention_duration": {"seconds": 3600},
                      "message_storage_policy": {
                          "allowed_persistence_regions": ["europe-west1"],
                          "enforce_in_transit": True}},
            "update_mask": {"paths": ["message_retention_duration", "message_storage_policy"]},
        })
        now = listed()
        assert now == got()
        assert now[0].topic_message_retention_duration.seconds == 3600
        assert now[1].bigquery_config.state == bq_state.Value("IN_TRANSIT_LOCATION_RESTRICTION")
        server.set_destination_location("bigquery:proj-alpha.sales", "europe-west1")
        assert listed()[1].bigquery_config.state == bq_state.Value("ACTIVE")
        pub.delete_topic(topic=topic)
        assert [s.topic for s in listed()] == ["_deleted-topic_"] * 2
        sub.delete_subscription(subscription=names[1])
        assert [s.name for s in listed()] == names[:1]
