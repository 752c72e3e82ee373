"""The service's request limits (Pub/Sub quotas and limits page, and the pubsub proto's
field documentation), checked as the service does: INVALID_ARGUMENT, with the
service's wording where it is known. Exactly-at-limit passes.

Publish: at most 1,000 messages and 10 MiB (10,485,760 bytes, the serialized request)
per request; per message at most 100 attributes, attribute keys of at most 256 bytes,
values of at most 1,024 bytes, and an ordering key of at most 1,024 bytes.
Subscriptions: ack deadline 10-600 s (0 means the default, 10 s); message retention
10 minutes to 7 days (topics: up to 31 days); Pull max_messages 1-1,000.
"""

from __future__ import annotations

from typing import Any

from reconciler.localserver.status import invalid

MAX_PUBLISH_MESSAGES = 1000
MAX_PUBLISH_BYTES = 10 * 1024 * 1024
MAX_ATTRIBUTES = 100
MAX_ATTRIBUTE_KEY_BYTES = 256
MAX_ATTRIBUTE_VALUE_BYTES = 1024
MAX_ORDERING_KEY_BYTES = 1024

MIN_ACK_DEADLINE_S = 10
MAX_ACK_DEADLINE_S = 600
DEFAULT_ACK_DEADLINE_S = 10
MIN_RETENTION_S = 10 * 60
MAX_SUBSCRIPTION_RETENTION_S = 7 * 24 * 3600
MAX_TOPIC_RETENTION_S = 31 * 24 * 3600
DEFAULT_SUBSCRIPTION_RETENTION_S = 7 * 24 * 3600
MAX_PULL_MESSAGES = 1000


def _utf8_len(text: str) -> int:
    # A character is at most 4 bytes in UTF-8: short strings need no encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _lite_types() -> tuple[Any, Any]:
    """Two stand-ins for PublishRequest, parsed from a request's bytes in C
    (`plain_messages`): one whose messages declare only attributes and ordering_key
    (its size, once the rest is dropped, says whether any message has either; small,
    so cheap to size: upb sizes a message by serializing it), and one whose messages
    declare only `data`, as a proto2 `required` field (`IsInitialized` says whether
    every message has data, without serializing anything). Looking at each message
    from Python costs ~1 us a field."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    keyed = descriptor_pb2.FileDescriptorProto(
        name="reconcile_publish_lite.proto", package="reconcile.lite", syntax="proto3"
    )
    entry = descriptor_pb2.DescriptorProto(name="AttributesEntry")
    entry.options.map_entry = True
    for number, name in ((1, "key"), (2, "value")):
        entry.field.add(name=name, number=number, type=9, label=1)
    msg = keyed.message_type.add(name="Message")
    msg.nested_type.append(entry)
    msg.field.add(
        name="attributes",
        number=2,
        type=11,
        label=3,
        type_name=".reconcile.lite.Message.AttributesEntry",
    )
    msg.field.add(name="ordering_key", number=5, type=9, label=1)
    req = keyed.message_type.add(name="Request")
    req.field.add(name="messages", number=2, type=11, label=3, type_name=".reconcile.lite.Message")
    data = descriptor_pb2.FileDescriptorProto(
        name="reconcile_publish_data.proto", package="reconcile.data", syntax="proto2"
    )
    msg = data.message_type.add(name="Message")
    msg.field.add(name="data", number=1, type=12, label=2)  # bytes, required
    req = data.message_type.add(name="Request")
    req.field.add(name="messages", number=2, type=11, label=3, type_name=".reconcile.data.Message")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(keyed)
    pool.Add(data)
    return tuple(  # type: ignore[return-value]
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"reconcile.{n}.Request"))
        for n in ("lite", "data")
    )


_LITE: tuple[Any, Any] | None = None


def plain_messages(raw: bytes, count: int) -> bool:
    """True when, for certain, no message of the request `raw` has attributes or an
    ordering key and each has data: the common case, checked at C speed. False
    means "look at each message" (`check_publish` does)."""
    global _LITE
    if not raw:
        return False
    if _LITE is None:
        _LITE = _lite_types()
    keyed_type, data_type = _LITE
    try:
        if not data_type.FromString(raw).IsInitialized():  # some message without data
            return False
        keyed = keyed_type.FromString(raw)
    except Exception:  # the request itself parsed: let the slow path judge
        return False
    keyed.DiscardUnknownFields()
    return bool(keyed.ByteSize() == 2 * count)  # each message an empty entry: tag + 0


def check_publish(request_bytes: int, messages: Any, raw: bytes = b"") -> bool:
    """Every limit of one Publish request (its serialized size and its messages);
    whether any message has an ordering key."""
    count = len(messages)
    if not count:
        raise invalid("No messages to publish")
    if count > MAX_PUBLISH_MESSAGES:
        raise invalid(
            f"The value for message_count is too large. You passed {count} in the request, "
            f"but the maximum value is {MAX_PUBLISH_MESSAGES}."
        )
    if request_bytes > MAX_PUBLISH_BYTES:
        raise invalid(f"Request payload size exceeds the limit: {MAX_PUBLISH_BYTES} bytes.")
    if plain_messages(raw, count):
        return False
    ordering = False
    for i, message in enumerate(messages):
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


def duration_seconds(duration: Any) -> float:
    return float(duration.seconds) + float(duration.nanos) / 1e9
