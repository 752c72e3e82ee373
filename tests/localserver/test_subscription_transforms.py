"""A subscription's enabled message transforms applied at delivery, through the real
subscriber clients (unary Pull and the high-level streaming `subscribe()`): the UDF
sees the stored message's ID, a filtered message is acknowledged and never sent, a
failing one is not sent and stays unacknowledged, and another subscription of the
same topic gets the message as published."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

PROJECT = "proj-alpha"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-smt"
PLAIN = f"projects/{PROJECT}/subscriptions/orders-plain"

TAG = """
function tag(message, metadata) {
  if (message.attributes.kind === 'test') { return null; }
  if (message.data === 'bad') { throw new Error('cannot tag ' + message.data); }
  return {data: message.data.toUpperCase(),
          attributes: {seen_id: metadata.message_id, kind: message.attributes.kind || ''}};
}"""


@pytest.fixture
def subscribed(publisher_client: Any, subscriber_client: Any) -> None:
    publisher_client.create_topic(name=TOPIC)
    transforms = [{"javascript_udf": {"function_name": "tag", "code": TAG}}]
    subscriber_client.create_subscription(
        request={"name": SUB, "topic": TOPIC, "message_transforms": transforms}
    )
    subscriber_client.create_subscription(request={"name": PLAIN, "topic": TOPIC})


def pulled(subscriber: Any, name: str) -> list[Any]:
    got = subscriber.pull(
        request={"subscription": name, "max_messages": 100, "return_immediately": True}
    )
    return list(got.received_messages)


def unacked(server: Any, name: str) -> int:
    stats = server.subscription_stats(name)
    return sum(region.count for region in stats.unacked.values())


def test_pull_delivers_what_the_transform_makes(
    local_server: Any, publisher_client: Any, subscriber_client: Any, subscribed: None
) -> None:
    messages = [
        {"data": b"one", "attributes": {"kind": "real"}},
        {"data": b"two", "attributes": {"kind": "test"}},
        {"data": b"bad"},
    ]
    ids = list(publisher_client.publish(topic=TOPIC, messages=messages).message_ids)
    got = pulled(subscriber_client, SUB)
    assert [(r.message.data, r.message.message_id) for r in got] == [(b"ONE", ids[0])]
    assert dict(got[0].message.attributes) == {"seen_id": ids[0], "kind": "real"}
    # The filtered one is acknowledged; the failed one is held, unacknowledged.
    assert unacked(local_server, SUB) == 2
    subscriber_client.acknowledge(subscription=SUB, ack_ids=[got[0].ack_id])
    assert unacked(local_server, SUB) == 1
    assert pulled(subscriber_client, SUB) == []  # "bad" is leased, never sent
    # The other subscription of the topic gets every message as published.
    plain = pulled(subscriber_client, PLAIN)
    assert [r.message.data for r in plain] == [b"one", b"two", b"bad"]


def test_subscribe_streams_transformed_messages(
    local_server: Any, publisher_client: Any, subscribed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.cloud import pubsub_v1

    published = [{"data": f"m{i}".encode(), "attributes": {"kind": "real"}} for i in range(5)]
    published.append({"data": b"skip", "attributes": {"kind": "test"}})
    publisher_client.publish(topic=TOPIC, messages=published)
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.SubscriberClient()
    seen: list[bytes] = []
    lock = threading.Lock()
    all_in = threading.Event()

    def callback(message: Any) -> None:
        message.ack()
        with lock:
            seen.append(message.data)
            if len(seen) >= 5:
                all_in.set()

    future = client.subscribe(SUB, callback)
    try:
        assert all_in.wait(60), f"{len(seen)} of 5 received"
    finally:
        future.cancel()
        future.result(timeout=60)
        client.close()
    assert sorted(seen) == [f"M{i}".encode() for i in range(5)]
    end = time.monotonic() + 60
    while unacked(local_server, SUB):  # the filtered one acknowledged by the server
        assert time.monotonic() < end, "acks did not settle"
        local_server.state.subs.wait_change(SUB, 0.2)


def test_a_failing_message_reaches_the_dead_letter_topic(
    publisher_client: Any, subscriber_client: Any
) -> None:
    dead = f"projects/{PROJECT}/topics/orders-dead"
    dead_sub = f"projects/{PROJECT}/subscriptions/orders-dead-sub"
    publisher_client.create_topic(name=TOPIC)
    publisher_client.create_topic(name=dead)
    subscriber_client.create_subscription(name=dead_sub, topic=dead)
    subscriber_client.create_subscription(request={
        "name": SUB, "topic": TOPIC,
        "message_transforms": [{"javascript_udf": {"function_name": "tag", "code": TAG}}],
        "dead_letter_policy": {"dead_letter_topic": dead, "max_delivery_attempts": 5},
    })
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"bad"}, {"data": b"good"}])
    for _ in range(5):  # each failure is a delivery attempt (nacked at once)
        got_here = pulled(subscriber_client, SUB)
        # "good" passes the transform; its subscriber nacks it: no SMT failure
        assert [m.message.data for m in got_here] == [b"GOOD"]
        subscriber_client.modify_ack_deadline(request={
            "subscription": SUB, "ack_ids": [got_here[0].ack_id], "ack_deadline_seconds": 0})
    got: list[Any] = []
    for _ in range(10):  # the forwards run on the server's own thread
        got += subscriber_client.pull(
            request={"subscription": dead_sub, "max_messages": 10}, timeout=30
        ).received_messages
        if len(got) == 2:
            break
    by_data = {m.message.data: m.message for m in got}
    assert sorted(by_data) == [b"bad", b"good"]
    forwarded = by_data[b"bad"]  # as stored: the SMT made nothing of it
    assert forwarded.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    # Why the transform failed, in the attribute the service adds for it
    assert "cannot tag bad" in forwarded.attributes["CloudPubSubDeadLetterSourceSMTErrorMessage"]
    nacked = by_data[b"good"]  # nacked by its subscriber: stored as published, no SMT error
    assert nacked.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert "CloudPubSubDeadLetterSourceSMTErrorMessage" not in nacked.attributes
