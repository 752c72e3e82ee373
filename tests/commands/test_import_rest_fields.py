"""`reconcile import` of message transforms, ingestion sources and tags through the real
clients against the loopback server (issue 48, item 1): each group written as the
spec declares it, so that after the adoption the next plan is "No changes"; an
ingestion source's output-only `state` is not written; tags cannot be (a live topic
never shows them), which the file says; a transform whose parameters look like a
secret is named in a comment, never written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

PROJECT = "acme-extras"
P = f"projects/{PROJECT}"
SA = f"ingest@{PROJECT}.iam.gserviceaccount.com"
ENDPOINT = f"{P}/locations/us-central1/publishers/google/models/gemini-2.0-flash"
SOURCES: dict[str, dict[str, Any]] = {
    "kinesis": {"aws_kinesis": {
        "stream_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/s",
        "consumer_arn": "arn:aws:kinesis:us-east-1:111111111111:stream/s/consumer/c:1",
        "aws_role_arn": "arn:aws:iam::111111111111:role/r", "gcp_service_account": SA}},
    "storage": {"cloud_storage": {
        "bucket": "landing", "text_format": {"delimiter": ","}, "match_glob": "**.csv",
        "minimum_object_create_time": {"seconds": 1767225600}}},
    "eventhubs": {"azure_event_hubs": {
        "resource_group": "rg", "namespace": "ns", "event_hub": "hub", "client_id": "cid",
        "tenant_id": "tid", "subscription_id": "sid", "gcp_service_account": SA}},
    "msk": {"aws_msk": {
        "cluster_arn": "arn:aws:kafka:us-east-1:111111111111:cluster/c/1", "topic": "orders",
        "aws_role_arn": "arn:aws:iam::111111111111:role/r", "gcp_service_account": SA}},
    "confluent": {"confluent_cloud": {
        "bootstrap_server": "pkc-1.us-east1.gcp.confluent.cloud:9092", "cluster_id": "lkc-1",
        "topic": "orders", "identity_pool_id": "pool-1", "gcp_service_account": SA},
        "platform_logs_settings": {"severity": "WARNING"}},
}


def _docs(path: Path) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(path.read_text())
            if d and d["kind"] == "Topic"}


def test_every_group_round_trips_to_no_changes(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    publisher_client.create_topic(request={
        "name": f"{P}/topics/transformed", "message_transforms": [
            {"javascript_udf": {"function_name": "redact",
                                "code": "function redact(m, x) {\n  return m;\n}\n"}},
            {"ai_inference": {"endpoint": ENDPOINT, "unstructured_inference": {
                "parameters": {"max_tokens": 64, "style": "terse"}}},
             "disabled": True},
            {"compression": {"compression_algorithm": "ZLIB", "compression_mode": "COMPRESS"}},
        ]})
    for name, settings in SOURCES.items():
        publisher_client.create_topic(request={
            "name": f"{P}/topics/{name}", "ingestion_data_source_settings": settings})
    publisher_client.create_topic(request={
        "name": f"{P}/topics/tagged", "tags": {"123/environment": "production"}})

    out = tmp_path / "imported"
    addr = local_server.address
    imported = run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    assert imported.exit_code == 0, imported.stderr
    path = out / f"{PROJECT}.yaml"
    docs = _docs(path)
    transforms = docs["transformed"]["spec"]["messageTransforms"]
    assert [sorted(t) for t in transforms] == [
        ["javascriptUdf"], ["aiInference", "disabled"], ["compression"]]
    assert transforms[0]["javascriptUdf"]["code"] == "function redact(m, x) {\n  return m;\n}\n"
    assert transforms[1]["aiInference"]["unstructuredInference"]["parameters"] == {
        "max_tokens": 64, "style": "terse"}
    kinesis = docs["kinesis"]["spec"]["ingestionDataSourceSettings"]["awsKinesis"]
    assert kinesis["consumerArn"].endswith("consumer/c:1")
    assert "state" not in kinesis  # output-only
    storage = docs["storage"]["spec"]["ingestionDataSourceSettings"]["cloudStorage"]
    assert storage["minimumObjectCreateTime"] == "2026-01-01T00:00:00Z"
    assert docs["confluent"]["spec"]["ingestionDataSourceSettings"][
        "platformLogsSettings"] == {"severity": "WARNING"}
    for name in ("eventhubs", "msk"):
        assert docs[name]["spec"]["ingestionDataSourceSettings"]
    assert "tags" not in docs["tagged"].get("spec", {})
    text = path.read_text()
    assert "# Tags are not written: a topic's tags are input-only" in text
    assert "# unmanaged:" not in text  # every group is in the spec now

    assert run_cli("validate", str(out)).exit_code == 0
    plan = run_cli("plan", str(out), "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    changes = json.loads(plan.stdout)["resource_changes"]
    assert len(changes) == 2 + len(SOURCES)
    assert all(rc["update_mask"] == ["labels"] for rc in changes)  # the adoption only
    applied = run_cli("apply", str(out), "--emulator", addr, "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    again = run_cli("plan", str(out), "--emulator", addr, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout
    assert "No changes. The live topics match the specs." in again.stdout
    live = publisher_client.get_topic(topic=f"{P}/topics/transformed")
    assert len(live.message_transforms) == 3 and live.message_transforms[1].disabled


def test_parameters_that_look_like_secrets_are_named_never_written(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    publisher_client.create_topic(request={
        "name": f"{P}/topics/leaky", "message_transforms": [
            {"ai_inference": {"endpoint": ENDPOINT, "unstructured_inference": {
                "parameters": {"apiKey": "sk-do-not-print"}}}}]})
    out = tmp_path / "imported"
    addr = local_server.address
    imported = run_cli("import", "--project", PROJECT, "--out", str(out), "--emulator", addr)
    assert imported.exit_code == 0, imported.stderr
    text = (out / f"{PROJECT}.yaml").read_text()
    assert "sk-do-not-print" not in text + imported.stdout + imported.stderr
    assert "# unmanaged: messageTransforms (their parameters name 'apiKey'" in text
    assert "messageTransforms:" not in text
    for form in ("text", "json"):
        plan = run_cli("plan", str(out), "--emulator", addr, "--format", form)
        assert plan.exit_code == 0, plan.stderr
        assert "sk-do-not-print" not in plan.stdout + plan.stderr
    (change,) = json.loads(plan.stdout)["resource_changes"]
    (transform,) = change["change"]["before"]["message_transforms"]
    shown = transform["aiInference"]["unstructuredInference"]["parameters"]["apiKey"]
    assert shown.startswith("<redacted sha256:")  # the live value, never printed
    applied = run_cli("apply", str(out), "--emulator", addr, "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    assert "sk-do-not-print" not in applied.stdout + applied.stderr
    live = publisher_client.get_topic(topic=f"{P}/topics/leaky")
    assert live.message_transforms[0].ai_inference.unstructured_inference.parameters[
        "apiKey"] == "sk-do-not-print"  # unmanaged: never sent, never changed
