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

from collections.abc import Iterable
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError, invalid, not_found
from reconciler.localserver.schemas.definitions import (
    ENCODING_NAMES,
    check_message,
    failure_reason,
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
    request is refused, as the service refuses it)."""
    settings = topic.schema_settings
    if settings.schema == DELETED_SCHEMA:
        raise not_found("Schema associated with topic deleted.")
    revisions = revisions_of(settings.schema)
    if revisions is None:  # deleted after the topic was read: as the service says
        raise not_found("Schema associated with topic deleted.")
    candidates = in_range(settings, revisions)
    request = protos.PublishRequest.FromString(raw)
    encoding = settings.encoding
    encoding_name = ENCODING_NAMES.get(encoding, "BINARY")
    for message in request.messages:
        revision = _matching(settings.schema, candidates, message.data, encoding)
        attributes = message.attributes
        attributes[NAME_ATTRIBUTE] = settings.schema
        attributes[ENCODING_ATTRIBUTE] = encoding_name
        attributes[REVISION_ATTRIBUTE] = revision.revision_id
    return bytes(request.SerializeToString())


def _matching(schema: str, candidates: Iterable[Any], data: bytes, encoding: int) -> Any:
    last: tuple[Any, str] | None = None
    for revision in candidates:
        problem = check_message(revision.type_, revision.definition, data, encoding)
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

