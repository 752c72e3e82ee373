"""The service's request limits (Pub/Sub quotas and limits page, and the pubsub proto's
field documentation), checked as the service does: INVALID_ARGUMENT, with the
service's wording where it is known. Exactly-at-limit passes.

Publish: at most 1,000 messages and 10 MB (10,000,000 bytes, decimal: the serialized
PublishRequest, "The value for request_size is too large. You passed N in the
request, but the maximum value is 10000000.", and the limit Google's Python client
batches to) per request; per message at most 100 attributes, attribute keys of at
most 256 bytes, values of at most 1,024 bytes, and an ordering key of at most 1,024
bytes. Before any of that the API front end refuses a request payload over 10 MiB
(10,485,760 bytes: "Request payload size exceeds the limit: 10485760 bytes."), and an
Acknowledge or ModifyAckDeadline payload over 512 KiB (524,288 bytes) alike. A
payload is what travelled: the serialized request over gRPC, the JSON body over REST
(base64 makes a message's data a third larger there).
Subscriptions: ack deadline 10-600 s (0 means the default, 10 s); message retention
10 minutes to 7 days (a topic's range: reconciler/topicrules.py); Pull max_messages 1-1,000.
"""

from __future__ import annotations

import operator
from functools import lru_cache
from typing import Any

from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.api.wire import data_only_head, varint
from reconciler.names import MAX_LABELS, label_key_problem, label_value_problem

MAX_PUBLISH_MESSAGES = 1000
MAX_PUBLISH_BYTES = 10 * 1000 * 1000
MAX_PUBLISH_PAYLOAD = 10 * 1024 * 1024
MAX_ACK_PAYLOAD = 512 * 1024
MAX_ATTRIBUTES = 100
MAX_ATTRIBUTE_KEY_BYTES = 256
MAX_ATTRIBUTE_VALUE_BYTES = 1024
MAX_ORDERING_KEY_BYTES = 1024

MIN_ACK_DEADLINE_S = 10
MAX_ACK_DEADLINE_S = 600
DEFAULT_ACK_DEADLINE_S = 10
MAX_SUBSCRIPTION_RETENTION_S = 7 * 24 * 3600
DEFAULT_SUBSCRIPTION_RETENTION_S = 7 * 24 * 3600
MAX_PULL_MESSAGES = 1000


def _utf8_len(text: str) -> int:
    # A character is at most 4 bytes in UTF-8: short strings need no encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@lru_cache(maxsize=64)
def _uniform_layout(topic: str, count: int, size: int) -> tuple[bytes, int, Any, Any] | None:
    """How a request for `topic` of `count` messages of `size` bytes, each holding
    only non-empty data, is laid out: (its first bytes, the topic field; its length;
    one strided slice per byte of a message's head, and the bytes each must give).
    Kept for the last few topics and sizes: a publisher sends the same shape again."""
    head = data_only_head(size)
    if head is None:
        return None
    name = topic.encode("utf-8")
    start = b"\n" + varint(len(name)) + name if name else b""
    record = b"\x12" + varint(size) + head  # field 2 (messages), its length, the head
    stride = len(record) - len(head) + size
    first = len(start)
    slices = tuple(slice(first + i, None, stride) for i in range(len(record)))
    expected = tuple(record[i : i + 1] * count for i in range(len(record)))
    return start, first + count * stride, slices, expected


def _uniform_data_only(raw: bytes, topic: str, count: int, size: int) -> bool:
    """Whether `raw` is exactly the topic field and `count` messages of `size` bytes
    each holding only non-empty data (what a publisher of same-sized payloads sends):
    checked on the request's bytes with one strided slice per byte of a message's
    head, so neither a message object nor a Python step per message is needed."""
    layout = _uniform_layout(topic, count, size)
    if layout is None:
        return False
    start, length, slices, expected = layout
    return (
        len(raw) == length
        and raw.startswith(start)
        and all(map(operator.eq, map(raw.__getitem__, slices), expected))
    )


def _is_data_only(message: bytes) -> bool:
    head = data_only_head(len(message))
    return head is not None and message.startswith(head)


def _data_only(messages: list[bytes]) -> bool:
    """Whether every serialized message holds non-empty data and nothing else
    (`_is_data_only` of each, with no Python call per message)."""
    heads = list(map(data_only_head, map(len, messages)))
    return None not in heads and all(map(bytes.startswith, messages, heads))  # type: ignore[arg-type]


def check_payload(size: int, limit: int) -> None:
    """The API front end's bound on what a request's payload may weigh."""
    if size > limit:
        raise invalid(f"Request payload size exceeds the limit: {limit} bytes.")


def check_publish(raw: bytes, wire: Any, payload: int = 0) -> bool:
    """Every limit of one Publish request, given as its bytes `raw` and parsed as
    `protos.WirePublishRequest` (messages still serialized), and the size of its
    payload as it travelled (0: `raw` is what travelled); whether any message has an
    ordering key. The common case (messages with data only) is answered from the
    bytes; only a request with some other message parses its messages."""
    check_payload(payload or len(raw), MAX_PUBLISH_PAYLOAD)
    messages = wire.messages
    count = len(messages)
    if not count:
        raise invalid("No messages to publish")
    if count > MAX_PUBLISH_MESSAGES:
        raise invalid(
            f"The value for message_count is too large. You passed {count} in the request, "
            f"but the maximum value is {MAX_PUBLISH_MESSAGES}."
        )
    if len(raw) > MAX_PUBLISH_BYTES:
        raise invalid(
            f"The value for request_size is too large. You passed {len(raw)} in the request, "
            f"but the maximum value is {MAX_PUBLISH_BYTES}."
        )
    if _uniform_data_only(raw, wire.topic, count, len(messages[-1])):
        return False
    serialized = list(messages)
    if _data_only(serialized):
        return False
    from reconciler.localserver.api import protos  # lazy: the CLI imports this module

    parse = protos.PubsubMessage.FromString
    ordering = False
    for i, data in enumerate(serialized):
        if _is_data_only(data):
            continue
        try:
            message = parse(data)
        except Exception:
            raise invalid(f"Message {i} is not a valid PubsubMessage.") from None
        attributes = message.attributes
        if attributes:
            _check_attributes(i, attributes)
        elif not message.data:
            raise invalid("Some messages are empty")
        key = message.ordering_key
        if key:
            ordering = True
            if len(key) * 4 > MAX_ORDERING_KEY_BYTES and _utf8_len(key) > MAX_ORDERING_KEY_BYTES:
                raise invalid(
                    f"Message {i}: the ordering key is {_utf8_len(key)} bytes; the maximum "
                    f"is {MAX_ORDERING_KEY_BYTES} bytes."
                )
    return ordering


def _check_attributes(i: int, attributes: Any) -> None:
    if len(attributes) > MAX_ATTRIBUTES:
        raise invalid(
            f"Message {i} has {len(attributes)} attributes; the maximum is {MAX_ATTRIBUTES}."
        )
    for key, value in attributes.items():
        if not key:
            raise invalid(f"Message {i}: an attribute key must not be empty.")
        if len(key) * 4 > MAX_ATTRIBUTE_KEY_BYTES and _utf8_len(key) > MAX_ATTRIBUTE_KEY_BYTES:
            raise invalid(
                f"Message {i}: the attribute key {key[:32]!r}... is {_utf8_len(key)} bytes; "
                f"the maximum is {MAX_ATTRIBUTE_KEY_BYTES} bytes."
            )
        if (
            len(value) * 4 > MAX_ATTRIBUTE_VALUE_BYTES
            and _utf8_len(value) > MAX_ATTRIBUTE_VALUE_BYTES
        ):
            raise invalid(
                f"Message {i}: the value of attribute {key!r} is {_utf8_len(value)} bytes; "
                f"the maximum is {MAX_ATTRIBUTE_VALUE_BYTES} bytes."
            )


def message_problem(message: Any) -> str | None:
    """Why a PubsubMessage a transform made is one the service would not take (over
    10,000,000 bytes, or past an attribute limit), or None. Whether the service
    checks a transformed message again is not public; the server does (docs)."""
    size = message.ByteSize()
    if size > MAX_PUBLISH_BYTES:
        return f"it is {size} bytes; the maximum is {MAX_PUBLISH_BYTES} bytes"
    if message.attributes:
        try:
            _check_attributes(0, message.attributes)
        except ServiceError as err:
            return err.message.replace("Message 0: ", "", 1).replace("Message 0 ", "it ", 1)
    return None


def duration_seconds(duration: Any) -> float:
    return float(duration.seconds) + float(duration.nanos) / 1e9


def check_labels(labels: Any, kind: str) -> None:
    """A topic's, subscription's or snapshot's labels (`kind` names it) as the service
    checks them: at most 64, keys and values by the label rules."""
    if len(labels) > MAX_LABELS:
        raise invalid(f"A {kind} may have at most {MAX_LABELS} labels.")
    for key, value in labels.items():
        problem = label_key_problem(key) or label_value_problem(key, value)
        if problem:
            raise invalid(f"Invalid labels: {problem}.")
