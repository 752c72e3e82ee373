"""A topic's `schema_settings` as the service treats them: checked when a topic is
created or its settings updated, and each published message validated against the
revisions in the settings' range, newest first (the range's first and last
revisions included; an empty bound leaves that side open), the message tagged with
the revision that accepted it.

Words and codes are Google's emulator's where it answers (measured: "No schema name
provided", "Invalid schema encoding provided", "Schema could not be found", "First
revision could not be found", "First revision creation time is after last revision
creation time", "Schema associated with topic deleted."); a message that no revision
accepts gets the service's own answer (INVALID_ARGUMENT "Invalid data in message:
Message failed schema validation." with an ErrorInfo whose reason names the encoding
and type, and whose `revisionInfo` names the last revision tried and why it refused,
as public reports of the service show)."""

from __future__ import annotations

from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError, invalid, not_found
from reconciler.localserver.api.wire import data_only_head, length_delimited
from reconciler.localserver.schemas.definitions import (
    ENCODING_NAMES,
    MessageCheck,
    failure_reason,
    message_check,
)
from reconciler.topicrules import DELETED_SCHEMA

# The attributes a message published to a topic with a schema is delivered with.
NAME_ATTRIBUTE = "googclient_schemaname"
ENCODING_ATTRIBUTE = "googclient_schemaencoding"
REVISION_ATTRIBUTE = "googclient_schemarevisionid"
FAILED = "Invalid data in message: Message failed schema validation."


def has_schema(topic: Any) -> bool:
    return bool(topic.HasField("schema_settings") and topic.schema_settings.schema)


def check_settings(settings: Any, revisions_of: Any) -> None:
    """Refuse settings the service refuses: a schema must be named and exist (in any
    project: the guide allows a schema of another project), the encoding must be
    JSON or BINARY, and named revisions must exist in order. `revisions_of(name)`
    gives a schema's revisions (None: no such schema)."""
    if not settings.schema:
        raise invalid("No schema name provided")
    revisions = revisions_of(settings.schema) if settings.schema != DELETED_SCHEMA else None
    if revisions is None:
        raise not_found("Schema could not be found")
    if settings.encoding not in ENCODING_NAMES:
        raise invalid("Invalid schema encoding provided")
    by_id = {r.revision_id: r for r in revisions}
    first = last = None
    if settings.first_revision_id:
        first = by_id.get(settings.first_revision_id)
        if first is None:
            raise not_found("First revision could not be found")
    if settings.last_revision_id:
        last = by_id.get(settings.last_revision_id)
        if last is None:
            raise not_found("Last revision could not be found")
    if first is not None and last is not None and _time(first) > _time(last):
        raise invalid("First revision creation time is after last revision creation time")


def _time(revision: Any) -> int:
    return int(revision.revision_create_time.ToNanoseconds())


def in_range(settings: Any, revisions: list[Any]) -> list[Any]:
    """The revisions a message may match, newest first. A bound whose revision was
    deleted (`_deleted-schema-revision_`) or is empty leaves that side open."""
    by_id = {r.revision_id: r for r in revisions}
    first = by_id.get(settings.first_revision_id)
    last = by_id.get(settings.last_revision_id)
    low = _time(first) if first is not None else None
    high = _time(last) if last is not None else None
    chosen = [
        r for r in revisions
        if (low is None or _time(r) >= low) and (high is None or _time(r) <= high)
    ]
    return sorted(chosen, key=_time, reverse=True)


def validate_request(topic: Any, revisions_of: Any, raw: bytes) -> bytes:
    """The Publish request `raw` (checked for the service's limits) with every
    message tagged by the revision that accepted it, serialized; ServiceError when
    the topic's schema is gone or some message matches no revision (the whole
    request is refused, as the service refuses it).

    The hot path: each revision's check is looked up once for the request, not per
    message, and the tags are written onto each message's bytes as they came
    (`_Tags`), not by parsing and serializing the request again."""
    settings = topic.schema_settings
    if settings.schema == DELETED_SCHEMA:
        raise not_found("Schema associated with topic deleted.")
    revisions = revisions_of(settings.schema)
    if revisions is None:  # deleted after the topic was read: as the service says
        raise not_found("Schema associated with topic deleted.")
    encoding = settings.encoding
    checks = [
        (revision, message_check(revision.type_, revision.definition, encoding))
        for revision in in_range(settings, revisions)
    ]
    wire = protos.WirePublishRequest.FromString(raw)
    tags = _Tags(settings.schema, ENCODING_NAMES.get(encoding, "BINARY"))
    # Most messages match the newest revision in range: that case takes no call but
    # the check itself.
    newest, check = checks[0] if checks else (None, None)
    tail = tags.tail(newest) if newest is not None else b""
    mark = _Tags.MARK
    tagged = []
    for serialized in wire.messages:
        data = _data_of(serialized)
        if check is not None and check(data) is None and mark not in serialized:
            tagged.append(serialized + tail)
        else:
            tagged.append(tags.add(serialized, _matching(settings.schema, checks, data, encoding)))
    return bytes(protos.WirePublishRequest(topic=wire.topic, messages=tagged).SerializeToString())


def _data_of(message: bytes) -> bytes:
    """A serialized PubsubMessage's `data`: read from its bytes when it holds its
    data alone (most do), else parsed."""
    head = data_only_head(len(message))
    if head is not None and message.startswith(head):
        return message[len(head) :]
    return bytes(protos.PubsubMessage.FromString(message).data)


class _Tags:
    """The three attributes a message published to a schema's topic is delivered
    with, written once per revision as serialized map entries and appended to each
    message's bytes: a map entry read later wins over an earlier one of the same
    key, so the tags replace any a publisher set. A message that already names one
    of them is rewritten whole instead, so that it keeps one entry per key."""

    MARK = b"googclient_schema"

    def __init__(self, schema: str, encoding: str) -> None:
        self.schema = schema
        self.encoding = encoding
        self._common = _entry(NAME_ATTRIBUTE, schema) + _entry(ENCODING_ATTRIBUTE, encoding)
        self._by_revision: dict[str, bytes] = {}

    def tail(self, revision: Any) -> bytes:
        """The serialized entries of the three attributes for `revision`."""
        revision_id = revision.revision_id
        tail = self._by_revision.get(revision_id)
        if tail is None:
            tail = self._by_revision[revision_id] = self._common + _entry(
                REVISION_ATTRIBUTE, revision_id
            )
        return tail

    def add(self, message: bytes, revision: Any) -> bytes:
        """`message` (serialized) tagged as accepted by `revision`."""
        if self.MARK not in message:
            return message + self.tail(revision)
        parsed = protos.PubsubMessage.FromString(message)
        attributes = parsed.attributes
        attributes[NAME_ATTRIBUTE] = self.schema
        attributes[ENCODING_ATTRIBUTE] = self.encoding
        attributes[REVISION_ATTRIBUTE] = revision.revision_id
        return bytes(parsed.SerializeToString())


def _entry(key: str, value: str) -> bytes:
    """One `attributes` map entry of a PubsubMessage (field 2: key 1, value 2)."""
    entry = length_delimited(1, key.encode()) + length_delimited(2, value.encode())
    return length_delimited(2, entry)


def _matching(schema: str, checks: list[tuple[Any, MessageCheck]], data: bytes,
              encoding: int) -> Any:
    last: tuple[Any, str] | None = None
    for revision, check in checks:
        problem = check(data)
        if problem is None:
            return revision
        last = (revision, problem)
    detail = (
        f"last checked revision: revision_id={last[0].revision_id} failed with status: "
        f"{last[1]}"
        if last is not None
        else "no revision is in the topic's range"
    )
    kind = last[0].type_ if last is not None else 0
    info = protos.ErrorInfo(
        reason=failure_reason(kind, encoding),
        domain="pubsub.googleapis.com",
        metadata={
            "message": "Message failed schema validation",
            "revisionInfo": "Could not validate message with any schema revision for schema: "
            f"{schema}, {detail}",
        },
    )
    raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, FAILED, (info,))
