"""Retention, keys and schema settings planned and applied through the real clients on
the local server: created with the topic; an update of one field sends a mask naming
only it (besides `labels`, for reconcile's own marker); fields another tool set and
the spec omits are never sent nor cleared; `2d` equals the service's `172800s`; the
ingestion source and message transforms are shown, never changed."""

from __future__ import annotations

import json
from typing import Any

from apply_support import mutating_calls
from google.protobuf import duration_pb2
from google.pubsub_v1.types import Encoding, SchemaSettings, Topic

from tests.cli_support import reconcile
from tests.specs_support import Tree

KEY = "projects/apply-e2e/locations/us-east1/keyRings/ring/cryptoKeys/orders"
OTHER_KEY = "projects/apply-e2e/locations/us-east1/keyRings/ring/cryptoKeys/other"
AVRO = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}'


def _target(local_server: Any) -> list[str]:
    return ["--emulator", local_server.address]


def _schema(local_server: Any, tree: Tree, schema_id: str = "order") -> str:
    from reconciler.backends.clients import schema_client

    schema_client(local_server.address).create_schema(
        parent=f"projects/{tree.project}", schema={"type_": "AVRO", "definition": AVRO},
        schema_id=schema_id,
    )
    return f"projects/{tree.project}/schemas/{schema_id}"


def _plan_json(local_server: Any) -> list[dict[str, Any]]:
    made = reconcile("plan", "specs", *_target(local_server), "--format", "json")
    assert made.exit_code == 0, made.output
    changes: list[dict[str, Any]] = json.loads(made.stdout)["resource_changes"]
    return changes


def test_create_with_the_fields_then_no_changes(
    local_server: Any, tree: Tree, client: Any
) -> None:
    schema = _schema(local_server, tree)
    tree.write({"orders": {
        "messageRetentionDuration": "2d", "kmsKeyName": KEY,
        "schemaSettings": {"schema": schema, "encoding": "JSON"},
    }})
    applied = reconcile("apply", "specs", *_target(local_server), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    assert topic.message_retention_duration.total_seconds() == 172800
    assert topic.kms_key_name == KEY
    assert topic.schema_settings.schema == schema
    assert topic.schema_settings.encoding == Encoding.JSON
    local_server.counters.reset()
    again = reconcile("apply", "specs", *_target(local_server), "--auto-approve")
    assert "No changes" in again.output
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_an_update_of_one_field_names_only_it(
    local_server: Any, tree: Tree, client: Any
) -> None:
    schema = _schema(local_server, tree)
    spec = {"messageRetentionDuration": "2d", "kmsKeyName": KEY,
            "schemaSettings": {"schema": schema, "encoding": "JSON"}}
    tree.write({"orders": spec})
    assert reconcile("apply", "specs", *_target(local_server), "--auto-approve").exit_code == 0

    tree.write({"orders": {**spec, "messageRetentionDuration": "3d"}})
    (change,) = _plan_json(local_server)
    assert change["update_mask"] == ["message_retention_duration"]
    assert change["request"]["update_mask"] == ["labels", "message_retention_duration"]
    assert set(change["request"]["topic"]) == {"name", "message_retention_duration"}
    assert change["change"]["before"]["message_retention_duration"] == "172800s"
    assert change["change"]["after"]["message_retention_duration"] == "259200s"
    text = reconcile("plan", "specs", *_target(local_server))
    assert '~ message_retention_duration = "172800s" -> "259200s"' in text.stdout

    assert reconcile("apply", "specs", *_target(local_server), "--auto-approve").exit_code == 0
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    assert topic.message_retention_duration.total_seconds() == 259200
    assert topic.kms_key_name == KEY and topic.schema_settings.schema == schema

    tree.write({"orders": {**spec, "messageRetentionDuration": "3d", "kmsKeyName": OTHER_KEY}})
    (change,) = _plan_json(local_server)
    assert change["update_mask"] == ["kms_key_name"]
    assert reconcile("apply", "specs", *_target(local_server), "--auto-approve").exit_code == 0
    assert client.get_topic(topic=tree.address("orders")).kms_key_name == OTHER_KEY


def test_fields_another_tool_set_are_kept_by_an_update_of_another(
    local_server: Any, tree: Tree, client: Any
) -> None:
    schema = _schema(local_server, tree)
    client.create_topic(request=Topic(
        name=tree.address("orders"), labels={"team": "old"}, kms_key_name=KEY,
        message_retention_duration=duration_pb2.Duration(seconds=7200),
        schema_settings=SchemaSettings(schema=schema, encoding=Encoding.BINARY),
    ))
    # Only the retention is declared (as the service's 7200s, written 2h): equal.
    tree.write({"orders": {"labels": {"team": "old"}, "messageRetentionDuration": "2h"}})
    (change,) = _plan_json(local_server)
    assert change["update_mask"] == ["labels"]  # the adoption, nothing else
    before = change["change"]["before"]
    assert before["kms_key_name"] == KEY  # shown as it is, and kept
    assert change["change"]["after"]["kms_key_name"] == KEY
    assert "kms_key_name" not in change["request"]["topic"]

    tree.write({"orders": {"labels": {"team": "new"}, "messageRetentionDuration": "1d"}})
    (change,) = _plan_json(local_server)
    assert change["update_mask"] == ["labels", "message_retention_duration"]
    assert reconcile("apply", "specs", *_target(local_server), "--auto-approve").exit_code == 0
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    assert topic.labels["team"] == "new"
    assert topic.message_retention_duration.total_seconds() == 86400
    assert topic.kms_key_name == KEY  # never in a mask, never cleared
    assert topic.schema_settings.encoding == Encoding.BINARY


def test_ingestion_and_transforms_are_shown_not_changed(
    local_server: Any, tree: Tree, client: Any
) -> None:
    client.create_topic(request={
        "name": tree.address("orders"),
        "message_transforms": [{"javascript_udf": {
            "function_name": "redact", "code": "function redact(m, a) { return m; }"}}],
    })
    tree.write({"orders": {"labels": {"team": "payments"}}})
    made = reconcile("plan", "specs", *_target(local_server))
    assert made.exit_code == 0, made.output
    assert "# unmanaged: 1 message transform(s): javascript_udf redact" in made.stdout
    (change,) = _plan_json(local_server)
    assert change["unmanaged"] == ["1 message transform(s): javascript_udf redact"]
    assert change["update_mask"] == ["labels"]
    assert reconcile("apply", "specs", *_target(local_server), "--auto-approve").exit_code == 0
    assert len(client.get_topic(topic=tree.address("orders")).message_transforms) == 1
