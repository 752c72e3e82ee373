"""`reconcile import` of retention, keys and schema settings through the real clients
against the loopback server: everything it reads is written to the spec or named in
a comment as unmanaged; the tree validates and plans only the adoption; the files get
the user's umask; values every topic shares go into one Defaults document, and only
where no other spec would inherit it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT = "acme-settings"
P = f"projects/{PROJECT}"
KEY = f"{P}/locations/us-east1/keyRings/ring/cryptoKeys/orders"
AVRO = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture
def umask_027() -> Iterator[None]:
    previous = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(previous)


def test_settings_round_trip_and_plan_only_the_adoption(
    run_cli: Any, local_server: Any, publisher_client: Any, schema_client: Any,
    tmp_path: Path, umask_027: None,
) -> None:
    revision = schema_client.create_schema(
        parent=P, schema={"type_": "AVRO", "definition": json.dumps(AVRO)}, schema_id="order"
    ).revision_id
    publisher_client.create_topic(request={
        "name": f"{P}/topics/orders", "labels": {"team": "payments"},
        "message_retention_duration": {"seconds": 172800}, "kms_key_name": KEY,
        "schema_settings": {"schema": f"{P}/schemas/order", "encoding": "JSON",
                            "first_revision_id": revision},
    })
    publisher_client.create_topic(request={
        "name": f"{P}/topics/refunds", "labels": {"team": "payments"},
        "message_retention_duration": {"seconds": 5400},
        "ingestion_data_source_settings": {"aws_kinesis": {
            "stream_arn": "arn:aws:kinesis:us-east-1:1:stream/s\n# injected",
            "consumer_arn": "c", "aws_role_arn": "r", "gcp_service_account": "g",
        }},
        "message_transforms": [{"javascript_udf": {
            "function_name": "redact", "code": "function redact(m, a) { return m; }"}}],
    })
    out = tmp_path / "imported"
    addr = local_server.address
    imported = run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    assert imported.exit_code == 0, imported.stderr
    path = out / f"{PROJECT}.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # 0666 less the umask 027

    defaults, orders, refunds = _docs(path)
    assert defaults["kind"] == "Defaults"  # the project and the shared label, once
    assert defaults["spec"] == {"project": PROJECT, "labels": {"team": "payments"}}
    assert orders["metadata"] == {"name": "orders"}
    assert orders["spec"] == {
        "messageRetentionDuration": "2d",
        "kmsKeyName": KEY,
        "schemaSettings": {"schema": f"{P}/schemas/order", "encoding": "JSON",
                           "firstRevisionId": revision},
    }
    # The ingestion source and transforms are written as the spec declares them
    # (issue 48); the ARN's line break stays inside its quoted value, never a comment.
    assert refunds["spec"] == {
        "messageRetentionDuration": "90m",
        "ingestionDataSourceSettings": {"awsKinesis": {
            "streamArn": "arn:aws:kinesis:us-east-1:1:stream/s\n# injected",
            "consumerArn": "c", "awsRoleArn": "r", "gcpServiceAccount": "g"}},
        "messageTransforms": [{"javascriptUdf": {
            "functionName": "redact", "code": "function redact(m, a) { return m; }"}}],
    }
    text = path.read_text()
    assert "# unmanaged:" not in text
    assert not any(line.startswith("# injected") for line in text.splitlines())

    assert run_cli("validate", str(out)).exit_code == 0
    plan = run_cli("plan", str(out), "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    changes = json.loads(plan.stdout)["resource_changes"]
    assert sorted(rc["address"] for rc in changes) == [f"{P}/topics/orders",
                                                       f"{P}/topics/refunds"]
    assert all(rc["update_mask"] == ["labels"] for rc in changes)  # the adoption only
    applied = run_cli("apply", str(out), "--emulator", addr, "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    again = run_cli("plan", str(out), "--emulator", addr, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout
    assert "No changes. The live topics match the specs." in again.stdout
    refunds_now = publisher_client.get_topic(topic=f"{P}/topics/refunds")
    assert refunds_now.ingestion_data_source_settings.aws_kinesis.consumer_arn == "c"
    assert len(refunds_now.message_transforms) == 1


def test_no_defaults_document_where_other_specs_would_inherit_it(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    for topic in ("a-topic", "b-topic"):
        publisher_client.create_topic(request={
            "name": f"{P}/topics/{topic}", "message_retention_duration": {"seconds": 3600},
        })
    out = tmp_path / "specs"
    out.mkdir()
    (out / "hand-written.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: other-project, name: mine}\n"
    )
    addr = local_server.address
    assert run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    written = _docs(out / f"{PROJECT}.yaml")
    assert [d["kind"] for d in written] == ["Topic", "Topic"]
    assert all(d["spec"] == {"messageRetentionDuration": "1h"} for d in written)
    assert all(d["metadata"]["project"] == PROJECT for d in written)


def test_a_deleted_schema_is_named_not_written(
    run_cli: Any, local_server: Any, publisher_client: Any, schema_client: Any,
    tmp_path: Path,
) -> None:
    schema_client.create_schema(
        parent=P, schema={"type_": "AVRO", "definition": json.dumps(AVRO)}, schema_id="gone"
    )
    publisher_client.create_topic(request={
        "name": f"{P}/topics/orphan",
        "schema_settings": {"schema": f"{P}/schemas/gone", "encoding": "BINARY"},
    })
    schema_client.delete_schema(name=f"{P}/schemas/gone")
    out = tmp_path / "imported"
    addr = local_server.address
    assert run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    (orphan,) = _docs(out / f"{PROJECT}.yaml")
    assert "schemaSettings" not in orphan["spec"]
    assert "# unmanaged: schemaSettings (the topic's schema was deleted" in (
        out / f"{PROJECT}.yaml"
    ).read_text()
    assert run_cli("validate", str(out)).exit_code == 0

