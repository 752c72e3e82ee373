"""Issue 50 item 1: dead-letter policies as the service applies them, through the real
Python client: delivery attempts (1 + nacks + expired deadlines, counted only while a
policy is set), the forward to the dead-letter topic after max_delivery_attempts with
the attributes the service adds, the source's message acknowledged; the same under
StreamingPull, exactly-once delivery, ordering keys and filters; the dead-letter
topic's storage policy and schema applied to the forward; the policy's checks."""

from __future__ import annotations

import json
import threading
from datetime import UTC
from typing import Any

import pytest
from dead_letter_support import DLT, DS, P, S, T, dead_letters, nack, pull, setup
from google.api_core import exceptions
from google.cloud import pubsub_v1


def test_nacked_up_to_max_attempts_is_forwarded_with_the_services_attributes(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    setup(publisher_client, subscriber_client)
    published = publisher_client.publish(
        topic=T, messages=[{"data": b"poison", "attributes": {"k": "v"}, "ordering_key": "o1"}]
    ).message_ids[0]
    attempts = []
    for _ in range(5):
        got = pull(subscriber_client)
        attempts += [m.delivery_attempt for m in got]
        nack(subscriber_client, got)
    assert attempts == [1, 2, 3, 4, 5]

    [dead] = dead_letters(subscriber_client, 1)
    original = local_server.messages(T)[0]
    sent = original.publish_time.ToDatetime(tzinfo=UTC)
    assert dead.message.data == b"poison" and dead.message.ordering_key == "o1"
    assert dict(dead.message.attributes) == {
        "k": "v",
        "CloudPubSubDeadLetterSourceDeliveryCount": "5",
        "CloudPubSubDeadLetterSourceSubscription": "orders-sub",
        "CloudPubSubDeadLetterSourceSubscriptionProject": "proj-alpha",
        "CloudPubSubDeadLetterSourceTopicPublishTime": sent.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{sent.microsecond // 1000:03d}Z",
    }
    assert dead.message.message_id != published  # a new message on the dead-letter topic
    assert dead.delivery_attempt == 0  # the dead-letter subscription has no policy
    assert pull(subscriber_client) == []  # acknowledged at the source
    stats = local_server.subscription_stats(S)
    assert sum(r.count for r in stats.unacked.values()) == 0


def test_expired_deadlines_count_and_the_forward_needs_no_furtherpull(
    publisher_client: Any, subscriber_client: Any
) -> None:
    setup(publisher_client, subscriber_client)
    publisher_client.publish(topic=T, messages=[{"data": b"slow"}])
    for _ in range(4):
        nack(subscriber_client, pull(subscriber_client))
    last = pull(subscriber_client)
    assert [m.delivery_attempt for m in last] == [5]
    nack(subscriber_client, last, seconds=1)  # the fifth lease runs out; nobody pulls again
    [dead] = dead_letters(subscriber_client, 1)
    assert dead.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert pull(subscriber_client) == []


def test_attempts_are_counted_only_while_a_policy_is_set(
    publisher_client: Any, subscriber_client: Any
) -> None:
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(name=DLT)
    subscriber_client.create_subscription(name=S, topic=T)
    publisher_client.publish(topic=T, messages=[{"data": b"m"}])
    got = pull(subscriber_client)
    assert [m.delivery_attempt for m in got] == [0]  # no policy: the field is 0
    nack(subscriber_client, got)
    # Set through the nested paths Google's dead-letter samples send.
    paths = ["dead_letter_policy.dead_letter_topic", "dead_letter_policy.max_delivery_attempts"]
    set_policy = subscriber_client.update_subscription(request={
        "subscription": {"name": S, "dead_letter_policy": {"dead_letter_topic": DLT}},
        "update_mask": {"paths": paths},
    })
    assert set_policy.dead_letter_policy.max_delivery_attempts == 5  # 0 reads the default
    got = pull(subscriber_client)
    assert [m.delivery_attempt for m in got] == [1]  # the nack before the policy is not counted
    nack(subscriber_client, got)
    removed = subscriber_client.update_subscription(request={
        "subscription": {"name": S}, "update_mask": {"paths": paths},
    })
    assert "dead_letter_policy" not in removed
    assert [m.delivery_attempt for m in pull(subscriber_client)] == [0]


@pytest.mark.parametrize(
    ("policy", "error", "message"),
    [
        ({"dead_letter_topic": DLT, "max_delivery_attempts": 4}, exceptions.OutOfRange,
         "The value for max_delivery_attempts is too small. You passed 4 in the request, but "
         "the minimum value is 5."),
        ({"dead_letter_topic": DLT, "max_delivery_attempts": 101}, exceptions.OutOfRange,
         "The value for max_delivery_attempts is too large. You passed 101 in the request, but "
         "the maximum value is 100."),
        ({"dead_letter_topic": f"{P}/topics/missing"}, exceptions.NotFound,
         "Dead letter topic not found"),
        ({"dead_letter_topic": "missing"}, exceptions.NotFound, "Dead letter topic not found"),
        ({"max_delivery_attempts": 7}, exceptions.NotFound, "Dead letter topic not found"),
    ],
)
def test_a_policy_the_service_refuses(
    local_server: Any, publisher_client: Any, subscriber_client: Any,
    policy: dict[str, Any], error: type[Exception], message: str,
) -> None:
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(name=DLT)
    with pytest.raises(error) as info:
        subscriber_client.create_subscription(
            request={"name": S, "topic": T, "dead_letter_policy": policy}
        )
    assert info.value.message == message
    subscriber_client.create_subscription(name=S, topic=T)
    with pytest.raises(error) as info:
        subscriber_client.update_subscription(request={
            "subscription": {"name": S, "dead_letter_policy": policy},
            "update_mask": {"paths": ["dead_letter_policy"]},
        })
    assert info.value.message == message
    assert "dead_letter_policy" not in subscriber_client.get_subscription(subscription=S)


def test_other_updates_go_on_once_the_dead_letter_topic_is_gone(
    publisher_client: Any, subscriber_client: Any
) -> None:
    """The topic is checked when the policy is set, not on every later update; a
    message whose attempts are used up stays in its subscription meanwhile."""
    setup(publisher_client, subscriber_client, messages=1)
    publisher_client.delete_topic(topic=DLT)
    updated = subscriber_client.update_subscription(request={
        "subscription": {"name": S, "labels": {"team": "pay"}},
        "update_mask": {"paths": ["labels"]},
    })
    assert dict(updated.labels) == {"team": "pay"}
    assert updated.dead_letter_policy.dead_letter_topic == DLT
    for _ in range(5):
        nack(subscriber_client, pull(subscriber_client))
    assert [m.delivery_attempt for m in pull(subscriber_client, wait=True)] == [6]


def test_streaming_pull_with_exactly_once_ordering_and_a_filter(
    local_server: Any,
    publisher_client: Any,
    subscriber_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The high-level streaming subscriber nacks every message it is given: the one
    the filter keeps is forwarded after 5 attempts; the one it excludes was
    acknowledged on arrival and never reaches the dead-letter topic."""
    setup(
        publisher_client, subscriber_client,
        enable_exactly_once_delivery=True, enable_message_ordering=True,
        filter='attributes.kind = "order"',
    )
    publisher_client.publish(topic=T, messages=[
        {"data": b"kept", "attributes": {"kind": "order"}, "ordering_key": "k"},
        {"data": b"excluded", "attributes": {"kind": "audit"}, "ordering_key": "k"},
    ])
    seen: list[tuple[bytes, int]] = []
    enough = threading.Event()

    def callback(message: Any) -> None:
        seen.append((message.data, message.delivery_attempt))
        if len(seen) >= 5:
            enough.set()
        message.nack_with_response().result(timeout=30)

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    streaming = pubsub_v1.SubscriberClient()
    future = streaming.subscribe(S, callback)
    try:
        assert enough.wait(60), seen
        [dead] = dead_letters(subscriber_client, 1)
    finally:
        future.cancel()
        future.result(timeout=30)
        streaming.close()
    assert seen == [(b"kept", n) for n in range(1, 6)]
    assert dead.message.data == b"kept" and dead.message.ordering_key == "k"
    assert pull(subscriber_client) == []


def test_the_dead_letter_topics_storage_policy_applies_to_the_forward(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    """The forward is published from the region the message is stored in
    (us-central1 here): a dead-letter topic that enforces in-transit regions without
    it refuses the forward, and the message stays in the source subscription; once
    its policy allows the region, the next failure forwards it."""
    setup(publisher_client, subscriber_client)
    publisher_client.update_topic(request={
        "topic": {"name": DLT, "message_storage_policy": {
            "allowed_persistence_regions": ["europe-west1"], "enforce_in_transit": True}},
        "update_mask": {"paths": ["message_storage_policy"]},
    })
    publisher_client.publish(topic=T, messages=[{"data": b"m"}])
    for _ in range(5):
        nack(subscriber_client, pull(subscriber_client))
    again = pull(subscriber_client, wait=True)  # refused: delivered again
    assert [m.delivery_attempt for m in again] == [6]
    assert local_server.subscription_stats(DS).unacked == {}  # nothing was forwarded
    publisher_client.update_topic(request={
        "topic": {"name": DLT, "message_storage_policy": {
            "allowed_persistence_regions": ["europe-west1"], "enforce_in_transit": False}},
        "update_mask": {"paths": ["message_storage_policy.enforce_in_transit"]},
    })
    nack(subscriber_client, again)
    [dead] = dead_letters(subscriber_client, 1)
    assert dead.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "6"
    assert local_server.subscription_stats(DS).regions == {"europe-west1"}  # rerouted


def test_the_dead_letter_topics_schema_applies_to_the_forward(
    publisher_client: Any, subscriber_client: Any, schema_client: Any
) -> None:
    schema = schema_client.create_schema(
        parent=P, schema_id="order", schema={"type_": "AVRO", "definition": json.dumps(
            {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})},
    )
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(request={
        "name": DLT, "schema_settings": {"schema": schema.name, "encoding": "JSON"}})
    subscriber_client.create_subscription(name=DS, topic=DLT)
    subscriber_client.create_subscription(request={
        "name": S, "topic": T,
        "dead_letter_policy": {"dead_letter_topic": DLT, "max_delivery_attempts": 5},
    })
    publisher_client.publish(topic=T, messages=[{"data": b"not json"}, {"data": b'{"id": "a"}'}])
    for _ in range(5):
        got = pull(subscriber_client)
        assert len(got) == 2
        nack(subscriber_client, got)
    [dead] = dead_letters(subscriber_client, 1)  # the one the schema accepts
    assert dead.message.data == b'{"id": "a"}'
    assert dead.message.attributes["googclient_schemaname"] == schema.name
    assert [m.message.data for m in pull(subscriber_client, wait=True)] == [b"not json"]
