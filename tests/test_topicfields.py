"""The table of topic fields (reconciler/topicfields.py) says what the service, the
spec format and the plan format say: each sent field is a field of
google.pubsub.v1.Topic under its proto and REST JSON names, each is a key of the
Topic and Defaults documents, and the plan's mask paths are the table's; and a live
topic keeps every field the table lists, however it was built."""

from __future__ import annotations

import typing

from google.pubsub_v1 import Topic

from reconciler.plan.model import MaskPath
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.documents import DefaultsSpec, TopicSpec
from reconciler.topic import ObservedTopic, SchemaSettings, StoragePolicy, TopicShape
from reconciler.topicfields import FIELDS, MASK_PATHS, SENT, SETTINGS
from reconciler.topicvalues import canonical_ingestion, canonical_transforms

NAME = "projects/p/topics/t"
TRANSFORMS_JSON = [
    {"javascriptUdf": {"functionName": "f", "code": "function f(m, x) { return m; }"}},
    {"aiInference": {"endpoint": "projects/p/locations/us-central1/endpoints/e",
                     "unstructuredInference": {"parameters": {"k": 1.5, "on": False}}},
     "disabled": True},
    {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}},
]
INGESTION_JSON = {"cloudStorage": {"bucket": "b", "textFormat": {"delimiter": ","}},
                  "platformLogsSettings": {"severity": "WARNING"}}


def test_every_sent_field_is_a_field_of_the_services_topic_by_both_names() -> None:
    fields = Topic.meta.pb.DESCRIPTOR.fields_by_name
    for entry in SENT:
        assert entry.proto in fields, entry
        assert fields[entry.proto].json_name == entry.rest, entry
        for part in entry.parts:
            members = fields[entry.proto].message_type.fields
            assert part in [f.json_name for f in members], (entry, part)


def test_every_field_is_declared_by_topic_and_defaults_documents_and_held_by_the_desired_state(
) -> None:
    for entry in FIELDS:
        for spec in (TopicSpec, DefaultsSpec):
            assert entry.attr in spec.__struct_fields__, (entry, spec)
            encoded = dict(zip(spec.__struct_fields__, spec.__struct_encode_fields__,
                               strict=True))
            assert encoded[entry.attr] == entry.spec, entry
        assert entry.desired in DesiredTopic.__dataclass_fields__, entry
        if entry.proto and not entry.create_only:  # tags: input-only, never read back
            assert entry.shape in TopicShape.__dataclass_fields__, entry


def test_the_plans_mask_paths_are_the_tables() -> None:
    assert typing.get_args(MaskPath) == MASK_PATHS
    assert MASK_PATHS == (
        "labels", "message_storage_policy", "message_retention_duration", "kms_key_name",
        "schema_settings", "message_transforms", "ingestion_data_source_settings",
    )


def test_a_live_topic_built_from_its_body_keeps_every_field_in_its_shape() -> None:
    schema = SchemaSettings("projects/p/schemas/s", "JSON", "a", "")
    full = TopicShape(
        {"b": "2", "a": "1"}, StoragePolicy.of(["us-east1"]), "600s",
        "projects/p/locations/l/keyRings/r/cryptoKeys/k", schema,
    )
    shape = ObservedTopic(NAME, body=full.body(NAME)).shape
    assert list(shape.labels) == ["a", "b"]  # sorted by key, as a plan shows them
    assert shape.policy == full.policy
    for entry in SETTINGS:
        assert getattr(shape, entry.shape) == getattr(full, entry.shape), entry
    assert shape.settings_json() == full.settings_json()


def test_the_settings_convert_to_the_plans_and_the_conditions_json() -> None:
    schema = SchemaSettings("projects/p/schemas/s", "BINARY")
    values = ("172800s", "projects/p/locations/l/keyRings/r/cryptoKeys/k", schema,
              canonical_transforms(TRANSFORMS_JSON), canonical_ingestion(INGESTION_JSON))
    shape = TopicShape({}, None, *values)
    assert shape.settings_json() == {
        "message_retention_duration": "172800s",
        "kms_key_name": "projects/p/locations/l/keyRings/r/cryptoKeys/k",
        "schema_settings": {"schema": "projects/p/schemas/s", "encoding": "BINARY",
                            "first_revision_id": "", "last_revision_id": ""},
        "message_transforms": TRANSFORMS_JSON,
        "ingestion_data_source_settings": INGESTION_JSON,
    }
    assert TopicShape.from_json(shape.body(NAME)) == shape
    rest = {e.rest: e.to_rest(v) for e, v in zip(SETTINGS, values, strict=True)}
    assert rest["schemaSettings"] == {"schema": "projects/p/schemas/s", "encoding": "BINARY"}
    assert rest["messageRetentionDuration"] == "172800s"
    assert rest["messageTransforms"] == TRANSFORMS_JSON
    assert rest["ingestionDataSourceSettings"] == INGESTION_JSON


def test_every_setting_goes_to_the_wire_and_back() -> None:
    from reconciler.backends.topicproto import observed, topic_to_proto

    schema = SchemaSettings("projects/p/schemas/s", "BINARY", "a", "b")
    shape = TopicShape({"a": "1"}, StoragePolicy.of(["us-east1"], True), "600.500s",
                       "projects/p/locations/l/keyRings/r/cryptoKeys/k", schema,
                       canonical_transforms(TRANSFORMS_JSON),
                       canonical_ingestion(INGESTION_JSON))
    back = observed(topic_to_proto(shape.body(NAME))).shape
    for entry in SETTINGS:
        assert getattr(back, entry.shape) == getattr(shape, entry.shape), entry
    assert (back.labels, back.policy) == (shape.labels, shape.policy)
