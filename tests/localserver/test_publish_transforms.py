"""A topic's enabled message transforms applied on Publish, through the real
publisher and subscriber clients: a UDF that rewrites data and attributes, one that
filters (its message keeps an ID and is never delivered), one that throws and one
past its CPU bound (the whole Publish fails, nothing stored), a disabled one skipped,
two in order, Compression, and the transformed bytes kept across a --state restart
without the UDF running again. Without the JavaScript engine a Publish to a topic
with an enabled UDF is refused, never stored untransformed, and a Pull from a
subscription with one is refused, never delivered untransformed."""

from __future__ import annotations

import base64
import json
import queue
import zlib
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from rest_support import rest
from subscriber_support import queued_requests
from udf_support import no_engine_server

from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.backends.clients import subscriber_client as make_subscriber
from reconciler.localserver import LocalServer

PROJECT = "proj-alpha"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-pull"

REWRITE = """
function redact(message, metadata) {
  const order = JSON.parse(message.data);
  delete order.card;
  const attributes = {source: message.attributes.source, redacted: "yes"};
  return {data: JSON.stringify(order), attributes: attributes};
}"""
DROP_TESTS = "function drop(m) { return m.attributes.kind === 'test' ? null : m; }"
THROWS = """function boom(m) {
  if (m.data === 'bad') { throw new Error('no order id in ' + m.data); }
  return m;
}"""
SPINS = "function spin(m) { while (m.data === 'bad') {} return m; }"


def udf(name: str, code: str, disabled: bool = False) -> dict[str, Any]:
    return {"javascript_udf": {"function_name": name, "code": code}, "disabled": disabled}


def append(name: str, text: str) -> dict[str, Any]:
    return udf(name, f"function {name}(m) {{ return {{data: m.data + '{text}'}}; }}")


def topic_with(publisher: Any, subscriber: Any, transforms: list[Any]) -> None:
    publisher.create_topic(request={"name": TOPIC, "message_transforms": transforms})
    subscriber.create_subscription(request={"name": SUB, "topic": TOPIC})


def pulled(subscriber: Any) -> list[Any]:
    got = subscriber.pull(
        request={"subscription": SUB, "max_messages": 100, "return_immediately": True}
    )
    return [m.message for m in got.received_messages]


def test_a_udf_rewrites_data_and_attributes(publisher_client: Any, subscriber_client: Any) -> None:
    topic_with(publisher_client, subscriber_client, [udf("redact", REWRITE)])
    sent = {"data": b'{"id": 7, "card": "4111"}', "attributes": {"source": "web", "ip": "1.2.3.4"}}
    ids = publisher_client.publish(topic=TOPIC, messages=[sent]).message_ids
    [message] = pulled(subscriber_client)
    assert message.data == b'{"id":7}'
    assert dict(message.attributes) == {"source": "web", "redacted": "yes"}
    assert message.message_id == ids[0]


def test_a_filtered_message_has_an_id_and_is_never_delivered(
    publisher_client: Any, subscriber_client: Any
) -> None:
    topic_with(publisher_client, subscriber_client, [udf("drop", DROP_TESTS)])
    messages = [
        {"data": b"one", "attributes": {"kind": "real"}},
        {"data": b"two", "attributes": {"kind": "test"}},
        {"data": b"three", "attributes": {"kind": "real"}},
    ]
    ids = list(publisher_client.publish(topic=TOPIC, messages=messages).message_ids)
    assert len(ids) == 3 and len(set(ids)) == 3
    got = pulled(subscriber_client)
    assert [(m.data, m.message_id) for m in got] == [(b"one", ids[0]), (b"three", ids[2])]
    # Every message filtered: the Publish succeeds, nothing is stored.
    only = publisher_client.publish(topic=TOPIC, messages=[messages[1]]).message_ids
    assert len(only) == 1 and only[0] not in ids
    assert pulled(subscriber_client) == []


@pytest.mark.parametrize(
    ("transform", "words"),
    [
        (udf("boom", THROWS), "JavaScript UDF 'boom' failed: Error: no order id in bad"),
        (udf("spin", SPINS), "JavaScript UDF 'spin' failed: it ran past its 500 ms limit"),
    ],
)
def test_a_failing_udf_fails_the_whole_publish(
    publisher_client: Any, subscriber_client: Any, transform: Any, words: str
) -> None:
    topic_with(publisher_client, subscriber_client, [transform])
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.publish(topic=TOPIC, messages=[{"data": b"good"}, {"data": b"bad"}])
    text = str(info.value.message)
    assert f"Message 1 of the Publish request failed a message transform of {TOPIC}" in text
    assert words in text
    assert pulled(subscriber_client) == []  # not even the good one was stored


def test_a_disabled_transform_is_skipped_and_two_run_in_order(
    publisher_client: Any, subscriber_client: Any
) -> None:
    transforms = [
        append("first", "-a"),
        udf("boom", THROWS, disabled=True),
        append("second", "-b"),
    ]
    topic_with(publisher_client, subscriber_client, transforms)
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"x", "attributes": {"k": "v"}}])
    [message] = pulled(subscriber_client)
    assert message.data == b"x-a-b"
    assert dict(message.attributes) == {"k": "v"}  # attributes not returned: kept


def test_compression_on_the_topic_stores_compressed_data(
    publisher_client: Any, subscriber_client: Any
) -> None:
    compress = {"compression": {"compression_algorithm": "ZLIB", "compression_mode": "COMPRESS"}}
    topic_with(publisher_client, subscriber_client, [compress])
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"abc" * 100}])
    [message] = pulled(subscriber_client)
    assert message.data != b"abc" * 100
    assert zlib.decompress(message.data) == b"abc" * 100


def test_a_topic_with_no_enabled_transform_stores_messages_as_sent(
    publisher_client: Any, subscriber_client: Any
) -> None:
    topic_with(publisher_client, subscriber_client, [udf("boom", THROWS, disabled=True)])
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"as sent"}])
    assert [m.data for m in pulled(subscriber_client)] == [b"as sent"]


RANDOM = "function stamp(m) { return {data: m.data + ':' + Math.random()}; }"


def test_transformed_messages_survive_a_restart_as_stored(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        topic_with(pub, sub, [udf("stamp", RANDOM), udf("drop", DROP_TESTS)])
        ids = list(pub.publish(topic=TOPIC, messages=[
            {"data": b"kept", "attributes": {"kind": "real"}},
            {"data": b"gone", "attributes": {"kind": "test"}},
        ]).message_ids)
        before = [(m.data, m.message_id) for m in pulled(sub)]
        assert len(before) == 1 and before[0][0].startswith(b"kept:")
    with LocalServer(state_dir=tmp_path) as again:
        pub, sub = make_publisher(again.address), make_subscriber(again.address)
        # Unacknowledged, so delivered again: the bytes stored, not a new random
        # number (the UDF does not run on replay).
        assert [(m.data, m.message_id) for m in pulled(sub)] == before
        # The filtered message's ID is not given again.
        later = pub.publish(topic=TOPIC, messages=[{"data": b"later"}]).message_ids
        assert later[0] not in ids




def test_without_the_engine_a_udf_topic_refuses_publish() -> None:
    with no_engine_server() as address:
        pub, sub = make_publisher(address), make_subscriber(address)
        topic_with(pub, sub, [udf("redact", REWRITE)])
        with pytest.raises(exceptions.FailedPrecondition) as info:
            pub.publish(topic=TOPIC, messages=[{"data": b'{"id": 1}'}])
        assert "pip install 'pubsub-reconcile[udf]'" in str(info.value.message)
        assert pulled(sub) == []
        # A subscription's UDF: the message is stored, and Pull is refused rather
        # than deliver it untransformed.
        plain, smt = f"{TOPIC}-plain", f"{SUB}-smt"
        pub.create_topic(name=plain)
        sub.create_subscription(request={
            "name": smt, "topic": plain, "message_transforms": [udf("redact", REWRITE)]})
        pub.publish(topic=plain, messages=[{"data": b'{"id": 2}'}])
        with pytest.raises(exceptions.FailedPrecondition, match="optional JavaScript engine"):
            sub.pull(request={"subscription": smt, "max_messages": 1})
        requests: queue.Queue[Any] = queue.Queue()
        requests.put({"subscription": smt, "stream_ack_deadline_seconds": 10})
        stream = sub.streaming_pull(requests=queued_requests(requests))  # kept open
        try:
            with pytest.raises(exceptions.FailedPrecondition, match="optional JavaScript"):
                next(iter(stream))
        finally:
            requests.put(None)


ORDER_SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
TO_ORDER = "function wrap(m) { return {data: JSON.stringify({id: Number(m.data)})}; }"


def test_transforms_run_before_the_schema_check(
    publisher_client: Any, subscriber_client: Any, schema_client: Any
) -> None:
    schema = schema_client.create_schema(
        parent=f"projects/{PROJECT}", schema_id="order",
        schema={"type_": "AVRO", "definition": json.dumps(ORDER_SCHEMA)},
    )
    publisher_client.create_topic(request={
        "name": TOPIC, "message_transforms": [udf("wrap", TO_ORDER)],
        "schema_settings": {"schema": schema.name, "encoding": "JSON"},
    })
    subscriber_client.create_subscription(request={"name": SUB, "topic": TOPIC})
    # "7" alone is no Order; what the UDF makes of it is.
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"7"}])
    [message] = pulled(subscriber_client)
    assert json.loads(message.data) == {"id": 7}
    # What the UDF makes of "x" ({"id": null}) is no Order: the Publish is refused.
    with pytest.raises(exceptions.InvalidArgument, match="Message failed schema validation"):
        publisher_client.publish(topic=TOPIC, messages=[{"data": b"x"}])


def test_the_batching_publisher_and_rest_take_a_filtered_message_s_id(
    local_server: Any, publisher_client: Any, subscriber_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.cloud import pubsub_v1

    topic_with(publisher_client, subscriber_client, [udf("drop", DROP_TESTS)])
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.PublisherClient()
    futures = [
        client.publish(TOPIC, b"kept", kind="real"),
        client.publish(TOPIC, b"dropped", kind="test"),
    ]
    ids = [future.result(timeout=60) for future in futures]
    assert len(set(ids)) == 2
    answer = rest(local_server.address, "POST", f"/v1/{TOPIC}:publish", {"messages": [
        {"data": base64.b64encode(b"too").decode(), "attributes": {"kind": "test"}},
        {"data": base64.b64encode(b"rest").decode(), "attributes": {"kind": "real"}},
    ]})
    assert answer.status == 200 and len(answer.body["messageIds"]) == 2
    got = [(m.data, m.message_id) for m in pulled(subscriber_client)]
    assert got == [(b"kept", ids[0]), (b"rest", answer.body["messageIds"][1])]


META = "function meta(m, metadata) { return {data: JSON.stringify(metadata)}; }"


def test_a_topic_udf_sees_the_ordering_key_and_ai_inference_passes(
    publisher_client: Any, subscriber_client: Any
) -> None:
    model = f"projects/{PROJECT}/locations/us-central1/endpoints/123"
    topic_with(publisher_client, subscriber_client, [
        {"ai_inference": {"endpoint": model}},  # the server sends nothing to a model
        udf("meta", META),
    ])
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"x", "ordering_key": "k1"}])
    [message] = pulled(subscriber_client)
    # No ID or publish time yet: the message is not stored when the topic's UDF runs.
    assert json.loads(message.data) == {"ordering_key": "k1"}
    assert message.ordering_key == "k1"


# A message the transforms make is checked again against a message's limits (nothing
# public says whether the service does; docs/local-server.md): 9,999,995 bytes of data
# make a PubsubMessage of exactly 10,000,000 bytes (1 tag byte, a 4-byte length).
def grow(name: str, size: int) -> dict[str, Any]:
    return udf(name, f"function {name}(m) {{ return {{data: 'x'.repeat({size})}}; }}")


TAGS_101 = """function tags(m) {
  const attributes = {};
  for (let i = 0; i < 101; i++) { attributes['k' + i] = 'v'; }
  return {data: m.data, attributes: attributes};
}"""
DECOMPRESS = {"compression": {"compression_algorithm": "ZLIB", "compression_mode": "DECOMPRESS"}}


@pytest.mark.parametrize(
    ("transform", "sent", "words"),
    [
        (grow("grow", 9_999_996), b"x",
         "The transformed message is not one Pub/Sub takes: it is 10000001 bytes; the maximum "
         "is 10000000 bytes."),
        (udf("tags", TAGS_101), b"x",
         "The transformed message is not one Pub/Sub takes: it has 101 attributes; the maximum "
         "is 100."),
        # 20 MB of zeros in about 20 KB: stopped at the limit, never held whole
        (DECOMPRESS, zlib.compress(bytes(20_000_000)),
         "The message data decompresses to more than 10000000 bytes, more than a message may "
         "hold."),
    ],
    ids=["data", "attributes", "decompressed"],
)
def test_a_transformed_message_past_a_limit_fails_the_publish(
    publisher_client: Any, subscriber_client: Any, transform: Any, sent: bytes, words: str
) -> None:
    topic_with(publisher_client, subscriber_client, [transform])
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.publish(topic=TOPIC, messages=[{"data": sent}], timeout=120)
    assert words in str(info.value.message)
    assert pulled(subscriber_client) == []


def test_a_transformed_message_at_the_limit_is_stored(
    publisher_client: Any, subscriber_client: Any
) -> None:
    topic_with(publisher_client, subscriber_client, [grow("grow", 9_999_995)])
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"x"}], timeout=120)
    [message] = pulled(subscriber_client)
    assert message.data == b"x" * 9_999_995  # with its ID and publish time it is delivered
