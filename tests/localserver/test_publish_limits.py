"""Issue 21 item 9: the service's Publish limits, answered INVALID_ARGUMENT; exactly at
the limit passes. Each request is sent as one exact Publish through the GAPIC
`PublisherClient.publish` (the batching client would split it)."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions
from google.pubsub_v1.types import PublishRequest, PubsubMessage

from reconciler.localserver.pubsub import limits

TOPIC = "projects/proj-alpha/topics/limits"


@pytest.fixture
def pub(publisher_client: Any) -> Any:
    publisher_client.create_topic(name=TOPIC)
    return publisher_client


def _send(pub: Any, messages: list[dict[str, Any]]) -> list[str]:
    response = pub.publish(request={"topic": TOPIC, "messages": messages}, retry=None, timeout=60)
    return list(response.message_ids)


def _sized_request(total: int) -> PublishRequest:
    """One message whose request serializes to exactly `total` bytes."""
    request = PublishRequest(topic=TOPIC, messages=[PubsubMessage(data=b"")])
    overhead = PublishRequest.pb(request).ByteSize()
    size = total - overhead
    while True:  # the varint lengths grow with the data: settle the exact size
        request = PublishRequest(topic=TOPIC, messages=[PubsubMessage(data=b"x" * size)])
        have = PublishRequest.pb(request).ByteSize()
        if have == total:
            return request
        size += total - have


CASES = [
    ("1,001 messages", [{"data": b"m"}] * 1001, "maximum value is 1000"),
    ("101 attributes", [{"data": b"m", "attributes": {f"k{i}": "v" for i in range(101)}}],
     "101 attributes; the maximum is 100"),
    ("257-byte key", [{"data": b"m", "attributes": {"k" * 257: "v"}}], "257 bytes"),
    ("1,025-byte value", [{"data": b"m", "attributes": {"k": "v" * 1025}}], "1025 bytes"),
    ("1,025-byte ordering key", [{"data": b"m", "ordering_key": "o" * 1025}], "1025 bytes"),
    ("257-byte key in 2-byte characters", [{"data": b"m", "attributes": {"é" * 129: "v"}}],
     "258 bytes"),
    ("empty message", [{"data": b""}], "Some messages are empty"),
    # The common case is checked in C on the request's bytes (`limits.plain_messages`):
    # one odd message among plain ones must still be found.
    ("an empty message after 99 plain ones", [{"data": b"m"}] * 99 + [{"data": b""}],
     "Some messages are empty"),
    ("a message with only a message_id", [{"data": b"m"}, {"message_id": "7"}],
     "Some messages are empty"),
    ("a long ordering key after plain ones", [{"data": b"m"}] * 5 + [{"data": b"m",
     "ordering_key": "o" * 1025}], "1025 bytes"),
    # Same-sized messages are checked from the request's bytes alone
    # (`limits._uniform_data_only`): an odd one of the very same size must be found.
    # 2,003 bytes each (`test_the_same_sized_cases_are_the_same_size`): data of 2,000
    # (1 + 2 + 2,000), or 972 and an ordering key of 1,025 (1 + 2 + 972 + 1 + 2 +
    # 1,025), or no data and a message_id of 2,000.
    ("a long ordering key among same-sized plain ones", [{"data": b"x" * 2000}] * 99
     + [{"data": b"x" * 972, "ordering_key": "o" * 1025}], "1025 bytes"),
    ("no data among same-sized plain ones", [{"data": b"x" * 2000}] * 3
     + [{"message_id": "i" * 2000}], "Some messages are empty"),
]


def test_the_same_sized_cases_are_the_same_size() -> None:
    for label, messages, _ in CASES:
        if "same-sized" in label:
            sizes = {PubsubMessage.pb(PubsubMessage(**m)).ByteSize() for m in messages}
            assert sizes == {2003}, label


@pytest.mark.parametrize(("label", "messages", "says"), CASES, ids=[c[0] for c in CASES])
def test_over_the_limit_is_invalid_argument(
    pub: Any, local_server: Any, label: str, messages: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(exceptions.InvalidArgument) as refused:
        _send(pub, messages)
    assert says in refused.value.message
    assert local_server.message_count(TOPIC) == 0  # nothing of the request was stored


def test_a_12_mb_request_reaches_the_check(pub: Any, local_server: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument) as refused:
        _send(pub, [{"data": b"x" * 1_000_000}] * 12)
    assert refused.value.message == "Request payload size exceeds the limit: 10485760 bytes."
    assert local_server.message_count(TOPIC) == 0


def test_exactly_at_every_limit_passes(pub: Any, local_server: Any) -> None:
    assert len(_send(pub, [{"data": b"m"}] * limits.MAX_PUBLISH_MESSAGES)) == 1000
    at_limit = {
        "data": b"m",
        "attributes": {f"{i:03d}" + "k" * 253: "v" * 1024 for i in range(100)},
        "ordering_key": "é" * 512,  # 1,024 bytes
    }
    assert len(next(iter(at_limit["attributes"])).encode()) == 256
    assert len(_send(pub, [at_limit])) == 1
    request = _sized_request(limits.MAX_PUBLISH_BYTES)
    assert PublishRequest.pb(request).ByteSize() == 10_000_000  # decimal, as the service
    assert len(pub.publish(request=request, retry=None, timeout=60).message_ids) == 1
    with pytest.raises(exceptions.InvalidArgument):  # one byte more is refused
        pub.publish(request=_sized_request(limits.MAX_PUBLISH_BYTES + 1), retry=None, timeout=60)
    assert local_server.message_count(TOPIC) == 1002


def test_attributes_without_data_pass_among_plain_messages(pub: Any, local_server: Any) -> None:
    ids = _send(pub, [{"data": b"m"}] * 5 + [{"attributes": {"kind": "marker"}}])
    assert len(ids) == 6
    stored = local_server.messages(TOPIC)
    assert [m.data for m in stored] == [b"m"] * 5 + [b""]
    assert dict(stored[-1].attributes) == {"kind": "marker"}


def test_same_sized_messages_with_attributes_are_stored_whole(
    pub: Any, local_server: Any
) -> None:
    """Same serialized size as the plain messages around it (1,027 bytes: data of
    1,024, or data of 1,016 and one attribute "k" = "v" in an 8-byte entry), so only
    the message's own bytes tell it apart."""
    odd = {"data": b"y" * 1016, "attributes": {"k": "v"}}
    assert PubsubMessage.pb(PubsubMessage(**odd)).ByteSize() == 1027
    ids = _send(pub, [{"data": b"x" * 1024}] * 3 + [odd] + [{"data": b"x" * 1024}])
    assert len(ids) == 5
    stored = local_server.messages(TOPIC)
    assert [len(m.data) for m in stored] == [1024] * 3 + [1016, 1024]
    assert [dict(m.attributes) for m in stored] == [{}] * 3 + [{"k": "v"}, {}]
    assert [m.message_id for m in stored] == ids


def test_message_ids_across_powers_of_ten_are_consecutive(pub: Any, local_server: Any) -> None:
    """The reply is written as bytes from the first ID and the count
    (`wire.publish_response`); batches that cross 10, 100 and 1,000 get every ID once,
    the same IDs the stored messages carry."""
    got: list[str] = []
    for count in (7, 5, 90, 1, 850, 100):
        ids = _send(pub, [{"data": b"m"}] * count)
        assert len(ids) == count
        got += ids
    first = int(got[0])
    assert got == [str(i) for i in range(first, first + len(got))]
    assert first + len(got) > 1000
    assert [m.message_id for m in local_server.messages(TOPIC)] == got


def test_a_message_that_is_not_a_pubsub_message_is_refused(pub: Any, local_server: Any) -> None:
    """The gRPC face parses the request with its messages left as bytes; bytes that
    frame as a message but do not parse as a PubsubMessage are INVALID_ARGUMENT, naming
    the message, and nothing of the request is stored."""
    import grpc

    from reconciler.localserver.api.wire import varint

    good = PubsubMessage.pb(PubsubMessage(data=b"m")).SerializeToString()
    bad = b"\x0a\x05ab"  # data claims 5 bytes, holds 2
    topic = TOPIC.encode()
    body = b"\x0a" + varint(len(topic)) + topic
    for message in (good, bad):
        body += b"\x12" + varint(len(message)) + message
    channel = grpc.insecure_channel(local_server.address)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary("/google.pubsub.v1.Publisher/Publish")(body, timeout=30)
    finally:
        channel.close()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == "Message 1 is not a valid PubsubMessage."
    assert local_server.message_count(TOPIC) == 0
