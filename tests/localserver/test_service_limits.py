"""The service's documented limits, each at the limit (accepted) and one over it
(INVALID_ARGUMENT), through Google's Python clients on gRPC and on REST (the REST
client's JSON body is computed with the client's own transcoding, so a payload can be
sized to the byte).

Sources (docs/local-server.md cites them): Pub/Sub's resource limits (1,000 messages
and 10 MB per Publish, 100 attributes, keys of 256 bytes, values of 1,024 bytes,
ordering keys of 1 KB); the service's own refusals ("The value for request_size is too
large ... the maximum value is 10000000.", "Request payload size exceeds the limit:
10485760 bytes." and "...: 524288 bytes." for Acknowledge and ModifyAckDeadline);
Google's resource-name rules (IDs of 3 to 255 characters) and label rules (64 labels,
keys and values of at most 63 characters)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.pubsub_v1.types import (
    AcknowledgeRequest,
    ModifyAckDeadlineRequest,
    PublishRequest,
    PubsubMessage,
)

from reconciler.localserver.pubsub import limits

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/limits"
SUB = f"{P}/subscriptions/limits-sub"
CALL = {"retry": None, "timeout": 120}


@dataclass
class Clients:
    transport: str
    publisher: Any
    subscriber: Any


@pytest.fixture(params=["grpc", "rest"])
def clients(request: pytest.FixtureRequest, local_server: Any) -> Iterator[Clients]:
    from google.pubsub_v1 import PublisherClient, SubscriberClient

    from reconciler.backends.clients import publisher_client, subscriber_client

    if request.param == "grpc":
        made = Clients("grpc", publisher_client(local_server.address),
                       subscriber_client(local_server.address))
    else:
        options = ClientOptions(api_endpoint=f"http://{local_server.address}")
        made = Clients(
            "rest",
            *(cls(transport="rest", client_options=options, credentials=AnonymousCredentials())
              for cls in (PublisherClient, SubscriberClient)),
        )
    made.publisher.create_topic(name=TOPIC, **CALL)
    made.subscriber.create_subscription(name=SUB, topic=TOPIC, **CALL)
    yield made
    made.publisher.transport.close()
    made.subscriber.transport.close()


def _publish(c: Clients, messages: list[dict[str, Any]]) -> int:
    return len(c.publisher.publish(topic=TOPIC, messages=messages, **CALL).message_ids)


def _at_and_over(c: Clients, local_server: Any, at: Callable[[], Any], over: Callable[[], Any],
                 says: str) -> None:
    """`at()` is accepted; `over()` is INVALID_ARGUMENT saying `says`, and stores nothing."""
    at()
    stored = local_server.message_count(TOPIC)
    with pytest.raises(exceptions.BadRequest) as refused:
        over()
    assert refused.value.code == 400
    assert says in refused.value.message
    assert local_server.message_count(TOPIC) == stored


def test_messages_per_publish(clients: Clients, local_server: Any) -> None:
    _at_and_over(
        clients, local_server,
        lambda: _publish(clients, [{"data": b"m"}] * 1000),
        lambda: _publish(clients, [{"data": b"m"}] * 1001),
        "You passed 1001 in the request, but the maximum value is 1000.",
    )


def test_attributes_per_message(clients: Clients, local_server: Any) -> None:
    def attrs(n: int) -> list[dict[str, Any]]:
        return [{"data": b"m", "attributes": {f"k{i}": "v" for i in range(n)}}]

    _at_and_over(clients, local_server, lambda: _publish(clients, attrs(100)),
                 lambda: _publish(clients, attrs(101)), "101 attributes; the maximum is 100")


def test_attribute_key_size(clients: Clients, local_server: Any) -> None:
    def key(n: int) -> list[dict[str, Any]]:
        return [{"data": b"m", "attributes": {"é" * (n // 2) + "k" * (n % 2): "v"}}]

    _at_and_over(clients, local_server, lambda: _publish(clients, key(256)),
                 lambda: _publish(clients, key(257)), "257 bytes; the maximum is 256 bytes")


def test_attribute_value_size(clients: Clients, local_server: Any) -> None:
    def value(n: int) -> list[dict[str, Any]]:
        return [{"data": b"m", "attributes": {"k": "v" * n}}]

    _at_and_over(clients, local_server, lambda: _publish(clients, value(1024)),
                 lambda: _publish(clients, value(1025)), "1025 bytes; the maximum is 1024 bytes")


def test_ordering_key_size(clients: Clients, local_server: Any) -> None:
    def ordered(n: int) -> list[dict[str, Any]]:
        return [{"data": b"m", "ordering_key": "é" * (n // 2) + "o" * (n % 2)}]

    _at_and_over(clients, local_server, lambda: _publish(clients, ordered(1024)),
                 lambda: _publish(clients, ordered(1025)), "1025 bytes; the maximum is 1024 bytes")


# -- sizes to the byte ------------------------------------------------------------


def _grpc_size(request: Any) -> int:
    return int(type(request).pb(request).ByteSize())


def _rest_size(request: Any, options: list[dict[str, str]]) -> int:
    """The JSON body Google's REST client sends for `request` (its own transcoding)."""
    from google.api_core.rest_helpers import transcode_request

    _, body, _ = transcode_request(options, request, rest_numeric_enums=True)
    return len(body.encode("utf-8"))


def _publish_options() -> list[dict[str, str]]:
    from google.pubsub_v1.services.publisher.transports.rest_base import (
        _BasePublisherRestTransport,
    )

    return _BasePublisherRestTransport._BasePublish._get_http_options()  # type: ignore[no-any-return]


def _ack_options(method: str) -> list[dict[str, str]]:
    from google.pubsub_v1.services.subscriber.transports.rest_base import (
        _BaseSubscriberRestTransport,
    )

    base = getattr(_BaseSubscriberRestTransport, f"_Base{method}")
    return base._get_http_options()  # type: ignore[no-any-return]


def _publish_sized(total: int, size_of: Callable[[Any], int], pieces: int) -> PublishRequest:
    """A Publish of `pieces` messages of equal data whose size (by `size_of`) is
    exactly `total`: the data as large as leaves room for 512 to 1,024 bytes of an
    attribute on the last message, then that attribute sized to the byte."""

    def make(data: int, pad: int) -> PublishRequest:
        messages = [PubsubMessage(data=b"x" * data) for _ in range(pieces)]
        messages[-1].attributes["p"] = "q" * pad
        return PublishRequest(topic=TOPIC, messages=messages)

    data = _largest(lambda d: size_of(make(d, 512)) <= total, total // pieces)
    pad = _largest(lambda n: size_of(make(data, n)) <= total, 1024)
    made = make(data, pad)
    assert size_of(made) == total, (size_of(made), total)
    return made


def _largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in 0..high for which `fits(n)` (which holds for 0 and, once
    false, stays false)."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _publish_size(transport: str) -> tuple[int, Callable[[Any], int], str]:
    """The limit a Publish's size meets first on `transport`, how that size is
    measured, and what the refusal says."""
    if transport == "grpc":
        return limits.MAX_PUBLISH_BYTES, _grpc_size, "but the maximum value is 10000000."

    def json_size(request: Any) -> int:
        return _rest_size(request, _publish_options())

    return limits.MAX_PUBLISH_PAYLOAD, json_size, "Request payload size exceeds the limit: 10485760"


def _publish_at_and_over(clients: Clients, local_server: Any, pieces: int) -> Callable[[Any], int]:
    """A Publish of `pieces` messages exactly at the size limit of the transport is
    accepted; one byte more is refused. How the size is measured, for more probes."""
    limit, size_of, says = _publish_size(clients.transport)
    at, over = _publish_sized(limit, size_of, pieces), _publish_sized(limit + 1, size_of, pieces)
    _at_and_over(
        clients, local_server,
        lambda: clients.publisher.publish(request=at, **CALL),
        lambda: clients.publisher.publish(request=over, **CALL),
        says,
    )
    return size_of


def test_publish_request_size_is_decimal(clients: Clients, local_server: Any) -> None:
    """gRPC: the serialized request, at most 10,000,000 bytes (the 10,100,050 bytes the
    server used to accept are refused). REST: the JSON body, at most 10 MiB, is what
    binds first (a message's data is a third larger in base64)."""
    size_of = _publish_at_and_over(clients, local_server, pieces=1)
    if clients.transport == "grpc":
        with pytest.raises(exceptions.BadRequest, match="You passed 10100050 in the request"):
            clients.publisher.publish(request=_publish_sized(10_100_050, size_of, 1), **CALL)


def test_message_size(clients: Clients, local_server: Any) -> None:
    """The 10 MB limit is on the request: one message may take nearly all of it (the
    test above), or many smaller ones together; a byte more is refused either way."""
    _publish_at_and_over(clients, local_server, pieces=100)


def _ack_sized(total: int, size_of: Callable[[Any], int], method: str) -> Any:
    """An Acknowledge or ModifyAckDeadline request of well-formed ack IDs ("0000042-1")
    whose size is exactly `total`: as many as fit with room for a last one of up to 19
    digits, then that one sized to the byte."""

    def make(count: int, digits: int) -> Any:
        ids = [f"{i:07d}-1" for i in range(count)] + ["1" * max(digits, 1) + "-1"]
        if method == "Acknowledge":
            return AcknowledgeRequest(subscription=SUB, ack_ids=ids)
        return ModifyAckDeadlineRequest(subscription=SUB, ack_ids=ids, ack_deadline_seconds=10)

    count = _largest(lambda n: size_of(make(n, 1)) <= total, total // 9)
    digits = _largest(lambda d: size_of(make(count, d)) <= total, 19)
    made = make(count, digits)
    assert size_of(made) == total, (size_of(made), total)
    return made


@pytest.mark.parametrize("method", ["Acknowledge", "ModifyAckDeadline"])
def test_acknowledge_and_modify_ack_deadline_payload(clients: Clients, method: str) -> None:
    """512 KiB (524,288 bytes) per Acknowledge or ModifyAckDeadline payload: about
    47,000 of this server's short ack IDs over gRPC (Google's clients send at most
    2,500 at a time); over REST the JSON body is what is measured."""
    if clients.transport == "grpc":
        size_of: Callable[[Any], int] = _grpc_size
    else:
        def size_of(r: Any) -> int:
            return _rest_size(r, _ack_options(method))

    call = getattr(clients.subscriber, "acknowledge" if method == "Acknowledge"
                   else "modify_ack_deadline")
    call(request=_ack_sized(limits.MAX_ACK_PAYLOAD, size_of, method), **CALL)  # unknown IDs: fine
    with pytest.raises(exceptions.BadRequest) as refused:
        call(request=_ack_sized(limits.MAX_ACK_PAYLOAD + 1, size_of, method), **CALL)
    assert "Request payload size exceeds the limit: 524288 bytes." in refused.value.message


@pytest.mark.parametrize("kind", ["topics", "subscriptions"])
def test_resource_id_length(clients: Clients, kind: str) -> None:
    def create(length: int) -> Any:
        name = f"{P}/{kind}/{'a' * length}"
        if kind == "topics":
            return clients.publisher.create_topic(name=name, **CALL)
        return clients.subscriber.create_subscription(name=name, topic=TOPIC, **CALL)

    assert create(255).name.endswith("a" * 255)
    assert create(3).name.endswith("/aaa")
    for length in (256, 2):
        with pytest.raises(exceptions.BadRequest, match="must be 3 to 255 characters"):
            create(length)


@pytest.mark.parametrize("kind", ["topics", "subscriptions"])
@pytest.mark.parametrize(
    ("at", "over", "says"),
    [
        ({f"k{i}": "v" for i in range(64)}, {f"k{i}": "v" for i in range(65)}, "64 labels"),
        ({"k" * 63: "v"}, {"k" * 64: "v"}, "must be 1 to 63 characters long (it has 64)"),
        ({"k": "v" * 63}, {"k": "v" * 64}, "64 characters; the limit is 63"),
    ],
    ids=["count", "key", "value"],
)
def test_labels(
    clients: Clients, kind: str, at: dict[str, str], over: dict[str, str], says: str
) -> None:
    def create(labels: dict[str, str], name: str) -> Any:
        if kind == "topics":
            return clients.publisher.create_topic(
                request={"name": f"{P}/topics/{name}", "labels": labels}, **CALL)
        return clients.subscriber.create_subscription(
            request={"name": f"{P}/subscriptions/{name}", "topic": TOPIC, "labels": labels},
            **CALL)

    assert dict(create(at, "at-limit").labels) == at
    with pytest.raises(exceptions.BadRequest) as refused:
        create(over, "over-limit")
    assert says in refused.value.message
