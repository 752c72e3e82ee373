"""Message transforms, ingestion sources and tags (issue 48, item 1) planned and
applied through the real clients on the local server: created with the topic; an
update sends a mask naming only the field that changed (besides `labels`, for
reconcile's own marker); an ingestion source's output-only `state` is never a change;
tags go in CreateTopic only, and a spec's tags on a topic that exists are a warning
at their line, never silent and never sent; an omitted field is never sent."""

from __future__ import annotations

import json
from typing import Any

from apply_support import mutating_calls
from google.pubsub_v1.types import Topic

from tests.cli_support import reconcile
from tests.specs_support import Tree

ENDPOINT = "projects/apply-e2e/locations/us-central1/endpoints/123"
UDF = {"functionName": "redact", "code": "function redact(m, x) { return m; }"}
TRANSFORMS = [
    {"javascriptUdf": UDF},
    {"aiInference": {"endpoint": ENDPOINT,
                     "unstructuredInference": {"parameters": {"temperature": 0.5}}}},
    {"compression": {"compressionAlgorithm": "ZLIB", "compressionMode": "COMPRESS"}},
]
KINESIS = {"awsKinesis": {
    "streamArn": "arn:aws:kinesis:us-east-1:111111111111:stream/orders",
    "consumerArn": "arn:aws:kinesis:us-east-1:111111111111:stream/orders/consumer/c:1",
    "awsRoleArn": "arn:aws:iam::111111111111:role/pubsub",
    "gcpServiceAccount": "ingest@apply-e2e.iam.gserviceaccount.com",
}}


def _target(local_server: Any) -> list[str]:
    return ["--emulator", local_server.address]


def _plan_json(local_server: Any) -> dict[str, Any]:
    made = reconcile("plan", "specs", *_target(local_server), "--format", "json")
    assert made.exit_code == 0, made.output
    plan: dict[str, Any] = json.loads(made.stdout)
    return plan


def _apply(local_server: Any) -> None:
    applied = reconcile("apply", "specs", *_target(local_server), "--auto-approve")
    assert applied.exit_code == 0, applied.output


def test_create_with_transforms_ingestion_and_tags_then_no_changes(
    local_server: Any, tree: Tree, client: Any
) -> None:
    tree.write({"orders": {
        "messageTransforms": TRANSFORMS,
        "ingestionDataSourceSettings": {**KINESIS, "platformLogsSettings": {"severity": "INFO"}},
        "tags": {"123/environment": "production"},
    }})
    (change,) = _plan_json(local_server)["resource_changes"]
    sent = change["request"]["topic"]
    assert change["request"]["method"] == "CreateTopic"
    assert sent["message_transforms"] == TRANSFORMS
    assert sent["ingestion_data_source_settings"]["awsKinesis"] == KINESIS["awsKinesis"]
    assert sent["tags"] == {"123/environment": "production"}
    _apply(local_server)
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    udf, inference, compression = topic.message_transforms
    assert (udf.javascript_udf.function_name, udf.javascript_udf.code) == (
        UDF["functionName"], UDF["code"])
    assert inference.ai_inference.endpoint == ENDPOINT
    assert inference.ai_inference.unstructured_inference.parameters["temperature"] == 0.5
    mode = compression.compression.compression_mode
    assert mode == compression.compression.CompressionMode.COMPRESS
    kinesis = topic.ingestion_data_source_settings.aws_kinesis
    assert kinesis.stream_arn == KINESIS["awsKinesis"]["streamArn"]
    assert kinesis.state == kinesis.State.ACTIVE  # output-only: set by the service
    assert topic.ingestion_data_source_settings.platform_logs_settings.severity == 3  # INFO

    local_server.counters.reset()
    again = reconcile("plan", "specs", *_target(local_server), "--detailed-exitcode")
    assert again.exit_code == 0, again.output  # `state: ACTIVE` is no change
    assert "No changes" in again.stdout
    # The tags cannot be read back: said at their line, every time.
    assert "tags-unverified" in again.output
    assert "topics.yaml:" in again.output
    assert mutating_calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def test_an_update_names_only_the_field_that_changed(
    local_server: Any, tree: Tree, client: Any
) -> None:
    spec = {"messageTransforms": TRANSFORMS, "ingestionDataSourceSettings": KINESIS}
    tree.write({"orders": spec})
    _apply(local_server)

    changed_udf = {"javascriptUdf": {**UDF, "code": "function redact(m, x) { return null; }"}}
    tree.write({"orders": {**spec, "messageTransforms": [changed_udf, *TRANSFORMS[1:]]}})
    (change,) = _plan_json(local_server)["resource_changes"]
    assert change["update_mask"] == ["message_transforms"]
    assert change["request"]["update_mask"] == ["labels", "message_transforms"]
    assert set(change["request"]["topic"]) == {"name", "message_transforms"}
    text = reconcile("plan", "specs", *_target(local_server)).stdout
    assert "message_transforms" in text
    _apply(local_server)
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    assert topic.message_transforms[0].javascript_udf.code == changed_udf["javascriptUdf"]["code"]
    assert topic.ingestion_data_source_settings.aws_kinesis.stream_arn  # kept

    storage = {"cloudStorage": {"bucket": "landing", "avroFormat": {}}}
    tree.write({"orders": {**spec, "messageTransforms": [changed_udf, *TRANSFORMS[1:]],
                           "ingestionDataSourceSettings": storage}})
    (change,) = _plan_json(local_server)["resource_changes"]
    assert change["update_mask"] == ["ingestion_data_source_settings"]
    _apply(local_server)
    settings = client.get_topic(topic=tree.address("orders")).ingestion_data_source_settings
    assert settings.cloud_storage.bucket == "landing"
    assert not settings.aws_kinesis.stream_arn  # a source replaces the other whole

    tree.write({"orders": {**spec, "messageTransforms": [], "ingestionDataSourceSettings":
                           storage}})
    (change,) = _plan_json(local_server)["resource_changes"]
    assert change["update_mask"] == ["message_transforms"]  # `[]` removes them all
    _apply(local_server)
    assert len(client.get_topic(topic=tree.address("orders")).message_transforms) == 0
    again = reconcile("plan", "specs", *_target(local_server), "--detailed-exitcode")
    assert again.exit_code == 0, again.output  # none live is what `[]` declares
    assert "No changes" in again.stdout


def test_omitted_fields_are_never_sent_and_tags_on_a_live_topic_are_a_warning(
    local_server: Any, tree: Tree, client: Any
) -> None:
    client.create_topic(request={
        "name": tree.address("orders"), "labels": {"team": "payments"},
        "message_transforms": [{"javascript_udf": {
            "function_name": "redact", "code": UDF["code"]}}],
        "ingestion_data_source_settings": {"cloud_storage": {"bucket": "b"}},
    })
    tree.write({"orders": {"labels": {"team": "payments"},
                           "tags": {"123/environment": "production"}}})
    plan = _plan_json(local_server)
    (change,) = plan["resource_changes"]
    assert change["update_mask"] == ["labels"]  # the adoption only
    assert set(change["request"]["topic"]) == {"name"}
    assert sorted(change["unmanaged"]) == [
        "1 message transform(s): javascript_udf redact", "ingestion data source (cloud_storage)"
    ]
    (warning,) = [d for d in plan["diagnostics"] if d["code"] == "tags-unverified"]
    assert warning["severity"] == "warning"
    assert warning["line"] == 10  # the tags, in specs/topics.yaml
    assert warning["file"].endswith("topics.yaml")
    assert "cannot verify them" in warning["message"]
    _apply(local_server)
    topic: Topic = client.get_topic(topic=tree.address("orders"))
    assert len(topic.message_transforms) == 1
    assert topic.ingestion_data_source_settings.cloud_storage.bucket == "b"


def test_transforms_holding_a_secret_are_replaced_without_showing_it(
    local_server: Any, tree: Tree, client: Any
) -> None:
    client.create_topic(request={
        "name": tree.address("orders"), "message_transforms": [{"ai_inference": {
            "endpoint": ENDPOINT,
            "unstructured_inference": {"parameters": {"api_key": "sk-never-shown"}}}}],
    })
    tree.write({"orders": {"messageTransforms": TRANSFORMS[2:]}})
    (change,) = _plan_json(local_server)["resource_changes"]
    assert change["update_mask"] == ["labels", "message_transforms"]  # adopted, replaced
    text = reconcile("plan", "specs", *_target(local_server), "--out", "p.plan")
    assert text.exit_code == 0, text.output
    assert "sk-never-shown" not in text.output + json.dumps(change)
    # The redacted `before` still tells apply whether the topic moved since the plan.
    applied = reconcile("apply", "p.plan", *_target(local_server))
    assert applied.exit_code == 0, applied.output
    assert "sk-never-shown" not in applied.output
    (only,) = client.get_topic(topic=tree.address("orders")).message_transforms
    assert only.compression.compression_algorithm == only.compression.CompressionAlgorithm.ZLIB
