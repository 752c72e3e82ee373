"""UpdateTopic: the mask is required, names fields (nested ones through messages, not
map keys), and replaces only what it names."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions

T = "projects/proj-alpha/topics/orders"
KMS = "projects/proj-alpha/locations/us/keyRings/ring/cryptoKeys/key"


SCHEMA = "projects/proj-alpha/schemas/state"
AVSC = '{"type": "record", "name": "State", "fields": [{"name": "name", "type": "string"}]}'


def _full_topic(publisher_client: Any, schema_client: Any) -> Any:
    schema_client.create_schema(
        parent="projects/proj-alpha", schema={"type_": "AVRO", "definition": AVSC},
        schema_id="state",
    )
    return publisher_client.create_topic(
        request={
            "name": T,
            "labels": {"team": "pay", "owner": "ops"},
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
            "message_retention_duration": {"seconds": 3600},
            "kms_key_name": KMS,
            "schema_settings": {"schema": SCHEMA, "encoding": 1},
        }
    )


def _update(client: Any, topic: dict[str, Any], paths: list[str] | None) -> Any:
    request: dict[str, Any] = {"topic": {"name": T, **topic}}
    if paths is not None:
        request["update_mask"] = {"paths": paths}
    return client.update_topic(request=request)


MASK_MESSAGE = (
    "The update_mask in the UpdateTopicRequest must be set, and must contain a non-empty "
    "paths list."
)


@pytest.mark.parametrize("paths", [None, []])
def test_mask_required(publisher_client: Any, schema_client: Any, paths: list[str] | None) -> None:
    _full_topic(publisher_client, schema_client)
    with pytest.raises(exceptions.InvalidArgument) as info:
        _update(publisher_client, {"labels": {"a": "b"}}, paths)
    assert info.value.message == MASK_MESSAGE


def test_unknown_path_is_invalid(publisher_client: Any, schema_client: Any) -> None:
    _full_topic(publisher_client, schema_client)
    with pytest.raises(exceptions.InvalidArgument) as info:
        _update(publisher_client, {}, ["bogus"])
    assert info.value.message.startswith(
        "Invalid update_mask provided in the UpdateTopicRequest: bogus is not a known Topic field."
    )
    with pytest.raises(exceptions.InvalidArgument, match="is not a known Topic field"):
        _update(publisher_client, {}, ["messageStoragePolicy"])


@pytest.mark.parametrize(
    "path", ["labels.team", "message_storage_policy.bogus", "kms_key_name.x", "state"]
)
def test_a_path_that_is_no_topic_field_is_invalid(
    publisher_client: Any, schema_client: Any, path: str
) -> None:
    _full_topic(publisher_client, schema_client)
    with pytest.raises(exceptions.InvalidArgument) as info:
        _update(publisher_client, {"labels": {"team": "x"}}, [path])
    assert info.value.message == (
        f"Invalid update_mask provided in the UpdateTopicRequest: {path} is not a known Topic "
        "field. Note that field paths must be of the form 'schema_settings' rather than "
        "'schemaSetings'."
    )
    assert dict(publisher_client.get_topic(topic=T).labels)["team"] == "pay"


def test_a_nested_storage_policy_path_changes_that_part_only(
    publisher_client: Any, schema_client: Any
) -> None:
    before = _full_topic(publisher_client, schema_client)
    after = _update(
        publisher_client,
        {"message_storage_policy": {
            "allowed_persistence_regions": ["x"], "enforce_in_transit": True}},
        ["message_storage_policy.enforce_in_transit"],
    )
    policy = after.message_storage_policy
    assert list(policy.allowed_persistence_regions) == ["us-east1"] and policy.enforce_in_transit
    assert dict(after.labels) == dict(before.labels)
    with pytest.raises(exceptions.InvalidArgument, match=r"europe-west1-b.* is a zone"):
        _update(
            publisher_client,
            {"message_storage_policy": {"allowed_persistence_regions": ["europe-west1-b"]}},
            ["message_storage_policy.allowed_persistence_regions"],
        )
    assert publisher_client.get_topic(topic=T) == after


def test_labels_mask_replaces_only_labels(publisher_client: Any, schema_client: Any) -> None:
    before = _full_topic(publisher_client, schema_client)
    after = _update(
        publisher_client,
        {"labels": {"team": "core"}, "kms_key_name": "", "message_retention_duration": None},
        ["labels"],
    )
    assert dict(after.labels) == {"team": "core"}
    assert after.message_storage_policy == before.message_storage_policy
    assert after.kms_key_name == KMS
    assert after.message_retention_duration == before.message_retention_duration
    assert after.schema_settings == before.schema_settings
    assert publisher_client.get_topic(topic=T) == after


@pytest.mark.parametrize(
    ("path", "value", "check"),
    [
        (
            "message_retention_duration",
            {"seconds": 7200},
            lambda t: t.message_retention_duration.total_seconds() == 7200,
        ),
        ("kms_key_name", "", lambda t: t.kms_key_name == ""),
        ("schema_settings", None, lambda t: "schema_settings" not in t),
        (
            "message_transforms",
            [{"compression": {"compression_algorithm": "ZLIB", "compression_mode": "COMPRESS"},
              "disabled": True}],
            lambda t: len(t.message_transforms) == 1 and t.message_transforms[0].disabled,
        ),
    ],
)
def test_each_top_level_path_changes_only_itself(
    publisher_client: Any, schema_client: Any, path: str, value: Any, check: Any
) -> None:
    before = _full_topic(publisher_client, schema_client)
    topic = {} if value is None else {path: value}
    after = _update(publisher_client, {**topic, "labels": {"ignored": "yes"}}, [path])
    assert check(after)
    assert dict(after.labels) == dict(before.labels)
    assert after.message_storage_policy == before.message_storage_policy


def test_field_validation_on_update(publisher_client: Any, schema_client: Any) -> None:
    _full_topic(publisher_client, schema_client)
    out_of_bounds = "message_retention_duration out of bounds"
    with pytest.raises(exceptions.InvalidArgument, match=out_of_bounds):
        _update(
            publisher_client,
            {"message_retention_duration": {"seconds": 1}},
            ["message_retention_duration"],
        )
    with pytest.raises(exceptions.InvalidArgument, match="label key 'Team'"):
        _update(publisher_client, {"labels": {"Team": "x"}}, ["labels"])
    with pytest.raises(exceptions.InvalidArgument, match="Invalid kms_key_name"):
        _update(publisher_client, {"kms_key_name": "key"}, ["kms_key_name"])


def test_update_bad_name_is_invalid(publisher_client: Any, schema_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument, match=r"Invalid \[topics\] name"):
        publisher_client.update_topic(
            request={
                "topic": {"name": "projects/proj-alpha/topics/ab"},
                "update_mask": {"paths": ["labels"]},
            }
        )
