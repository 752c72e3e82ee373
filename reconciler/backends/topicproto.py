"""The protobuf `Topic` <-> the managed shape (`reconciler.topic`): the only place that
reads or writes a topic's labels, storage policy, retention, key and schema settings on
the wire type, and that describes what it does not manage (ingestion source, message
transforms) for people."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import json_format
from google.pubsub_v1.types import Topic

from reconciler.backends.base import ObservedTopic
from reconciler.frozen import thawed  # json_format takes plain dicts and lists only
from reconciler.memo import MEMO_ENTRIES, MEMO_KEY_BYTES
from reconciler.topic import TopicShape, request_shape
from reconciler.topicfields import (
    INGESTION,
    KMS_KEY,
    RETENTION,
    SCHEMA_SETTINGS,
    SETTINGS,
    STORAGE_POLICY,
    TAGS,
    TRANSFORMS,
)
from reconciler.topicrules import NANOS, duration_text, parse_duration_ns
from reconciler.topicvalues import SchemaSettings

_POLICY_FIELD = STORAGE_POLICY.proto
_RETENTION_FIELD = RETENTION.proto
_SCHEMA_FIELD = SCHEMA_SETTINGS.proto
_INGESTION_FIELD = INGESTION.proto
_ENCODINGS = {0: "ENCODING_UNSPECIFIED", 1: "JSON", 2: "BINARY"}  # pubsub.proto Encoding
_ENCODING_NUMBERS = {name: number for number, name in _ENCODINGS.items()}


def shape_of(topic: Topic) -> TopicShape:
    """Labels and the storage policy as set on the topic (unset stays None)."""
    return observed(topic).shape


def topic_body(topic: Topic) -> dict[str, Any]:
    """The managed shape of a live topic as JSON (unmanaged fields are only in `raw`);
    an unset policy is None, a set one keeps its regions even when it lists none."""
    return observed(topic).body


def observed(topic: Topic) -> ObservedTopic:
    return observed_pb(Topic.pb(topic))


def observed_pb(pb: Any) -> ObservedTopic:
    """A live topic from its bare protobuf message (no proto-plus wrapper: a plan reads
    every live topic of every project)."""
    return ObservedTopic.from_row(topic_row(pb))


def topic_row(pb: Any) -> list[Any]:
    """A live topic's fields, read from its protobuf message as the plain values
    `ObservedTopic.from_row` takes (and the plan's read-ahead process sends as they
    are): the one place a live topic is read from the wire type. Its fingerprint is
    the sha256 of its deterministic serialization (every field, known to this client
    or not). Label keys and values and the regions are interned: those many topics
    share are then one string each, kept once in memory and sent once."""
    intern = sys.intern
    regions = None
    if pb.HasField(_POLICY_FIELD):
        msp = pb.message_storage_policy
        regions = [
            [intern(r) for r in sorted(set(msp.allowed_persistence_regions))],
            bool(msp.enforce_in_transit),
        ]
    retention = 0
    if pb.HasField(_RETENTION_FIELD):
        retention = int(pb.message_retention_duration.seconds)
    labels = {intern(k): intern(v) for k, v in sorted(pb.labels.items())}  # see ObservedTopic
    digest = hashlib.sha256(pb.SerializeToString(deterministic=True)).hexdigest()
    return [pb.name, labels, regions, digest, retention, settings_row(pb)]


def settings_row(pb: Any) -> list[Any] | None:
    """[retention in the service's form (`172800s`) or None, key name or None, schema
    settings as [schema, encoding, first, last] or None, what reconcile does not manage
    described, the same in the REST JSON shape custom constraints' conditions read
    (None when unset)]; None when the topic has none of them (most topics)."""
    retention = None
    if pb.HasField(_RETENTION_FIELD):
        d = pb.message_retention_duration
        retention = duration_text(d.seconds * NANOS + d.nanos)
    schema = None
    if pb.HasField(_SCHEMA_FIELD):
        ss = pb.schema_settings
        schema = [sys.intern(ss.schema), _ENCODINGS.get(ss.encoding, str(ss.encoding)),
                  ss.first_revision_id, ss.last_revision_id]
    extras: list[Any] = _NO_EXTRAS
    if pb.HasField(_INGESTION_FIELD) or len(pb.message_transforms):
        extras = _extras(pb)
    key = sys.intern(pb.kms_key_name) if pb.kms_key_name else None
    if retention is None and key is None and schema is None and not extras[0]:
        return None
    return [retention, key, schema, *extras]


_NO_EXTRAS: list[Any] = [[], None, None, None]
# The wire form of a topic's source and transforms -> `_extras`' answer. An estate's
# topics repeat a few transform lists: each distinct one goes through json_format once
# and is one object in every row that has it (so the read-ahead answer sends it once,
# marshal keeping shared objects shared, and `ObservedTopic.from_row` makes it
# canonical once). Never changed once made; bounded, emptied when full.
_EXTRAS_SEEN: dict[tuple[bytes | None, ...], list[Any]] = {}


def _extras(pb: Any) -> list[Any]:
    """[what is not managed, described; the same in the REST JSON shape; the
    transforms and the ingestion source in it (None when unset)]."""
    source = (pb.ingestion_data_source_settings.SerializeToString(deterministic=True)
              if pb.HasField(_INGESTION_FIELD) else None)
    wire = (source, *(t.SerializeToString(deterministic=True) for t in pb.message_transforms))
    extras = _EXTRAS_SEEN.get(wire)
    if extras is None:
        unmanaged_json = _unmanaged_json(pb)
        extras = [_unmanaged(pb), unmanaged_json, unmanaged_json.get(TRANSFORMS.rest),
                  unmanaged_json.get(INGESTION.rest)]
        if sum(len(part) for part in wire if part) <= MEMO_KEY_BYTES:  # a large UDF: once
            if len(_EXTRAS_SEEN) >= MEMO_ENTRIES:
                _EXTRAS_SEEN.clear()
            _EXTRAS_SEEN[wire] = extras
    return extras


def _unmanaged_json(pb: Any) -> dict[str, Any]:
    """The ingestion source and message transforms the topic sets, by their REST JSON
    names (`ingestionDataSourceSettings`, `messageTransforms`, in that order: the
    order of `_unmanaged`'s notes), as the service's REST JSON writes them: what a
    custom constraint's condition reads of them, and what a spec declaring them is
    compared with."""
    out: dict[str, Any] = {}
    if pb.HasField(_INGESTION_FIELD):
        out[INGESTION.rest] = json_format.MessageToDict(pb.ingestion_data_source_settings)
    if len(pb.message_transforms):
        out[TRANSFORMS.rest] = [json_format.MessageToDict(t) for t in pb.message_transforms]
    return out


def _unmanaged(pb: Any) -> list[str]:
    out = []
    if pb.HasField(_INGESTION_FIELD):
        source = pb.ingestion_data_source_settings.WhichOneof("source") or "unknown"
        out.append(f"ingestion data source ({source})")
    transforms = pb.message_transforms
    if len(transforms):
        kinds = ", ".join(
            (t.WhichOneof("transform") or "unknown")
            + (f" {t.javascript_udf.function_name}" if t.HasField("javascript_udf") else "")
            + ("" if not t.disabled else " (disabled)")
            for t in transforms
        )
        out.append(f"{len(transforms)} message transform(s): {kinds}")
    return out


def _set_retention(pb: Any, retention: str) -> None:
    seconds, nanos = divmod(parse_duration_ns(retention), NANOS)
    pb.message_retention_duration.seconds = seconds
    pb.message_retention_duration.nanos = nanos


def _set_kms_key(pb: Any, name: str) -> None:
    pb.kms_key_name = name


def _set_transforms(pb: Any, transforms: Any) -> None:
    for transform in transforms:
        json_format.ParseDict(thawed(transform), pb.message_transforms.add())


def _set_ingestion(pb: Any, settings: Any) -> None:
    json_format.ParseDict(thawed(settings), pb.ingestion_data_source_settings)


def _set_schema(pb: Any, settings: SchemaSettings) -> None:
    pb.schema_settings.schema = settings.schema
    pb.schema_settings.encoding = _ENCODING_NUMBERS[settings.encoding]
    pb.schema_settings.first_revision_id = settings.first_revision_id
    pb.schema_settings.last_revision_id = settings.last_revision_id


# How each of the table's settings is written on the wire type, by its proto name (a
# field added to topicfields.SETTINGS is added here, and read in `settings_row`).
_TO_PROTO: dict[str, Callable[[Any, Any], None]] = {
    RETENTION.proto: _set_retention,
    KMS_KEY.proto: _set_kms_key,
    SCHEMA_SETTINGS.proto: _set_schema,
    TRANSFORMS.proto: _set_transforms,
    INGESTION.proto: _set_ingestion,
}


def topic_to_proto(body: Mapping[str, Any]) -> Topic:
    """A plan request body as a Topic; a missing/None field is left unset."""
    labels, policy = request_shape(body)
    topic = Topic(name=body["name"], labels=labels or {})
    if policy is not None:
        topic.message_storage_policy.allowed_persistence_regions = list(policy.regions)
        topic.message_storage_policy.enforce_in_transit = policy.enforce_in_transit
    shape = TopicShape.from_json(body)
    pb = Topic.pb(topic)
    for entry in SETTINGS:
        value = getattr(shape, entry.shape)
        if value is not None:
            _TO_PROTO[entry.proto](pb, value)
    tags = body.get(TAGS.proto)
    if tags:  # CreateTopic only (input-only, immutable): never in an update's body
        pb.tags.update(dict(tags))
    return topic
