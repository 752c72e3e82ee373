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


def check_publish(request_bytes: int, messages: Any) -> None:
    """Every limit of one Publish request (its serialized size and its messages)."""
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
    for i, message in enumerate(messages):
        attributes = message.attributes
        if attributes:
            _check_attributes(i, attributes)
        elif not message.data:
            raise invalid("Some messages are empty")
        key = message.ordering_key
        if key and len(key) * 4 > MAX_ORDERING_KEY_BYTES:
            size = _utf8_len(key)
            if size > MAX_ORDERING_KEY_BYTES:
                raise invalid(
                    f"Message {i}: the ordering key is {size} bytes; the maximum is "
                    f"{MAX_ORDERING_KEY_BYTES} bytes."
                )


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
