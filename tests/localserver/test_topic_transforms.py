"""Message transforms, ingestion sources and tags through the real client: what the
service refuses (UDF without a function name or code, a sixth transform, duplicate
function names, code past 20 KB, a malformed model endpoint, a compression without
its mode, an ingestion source missing a required field, a tags mask), each at and
past its bound; what it returns (no tags, the source's output-only state ACTIVE); a
custom constraint reading these fields; and the export state the service sets when
the destination is not where an AI Inference model is deployed."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.orgpolicy.model import Policy

PROJECT = "proj-alpha"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-bq"
ENDPOINT = f"projects/{PROJECT}/locations/us-central1/endpoints/123"
MODEL = f"projects/{PROJECT}/locations/europe-west4/publishers/google/models/gemini"


def udf(name: str = "redact", code: str | None = None) -> dict[str, Any]:
    body = code if code is not None else f"function {name}(m, meta) {{ return m; }}"
    return {"javascript_udf": {"function_name": name, "code": body}}


def refusal(publisher_client: Any, **fields: Any) -> str:
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.create_topic(request={"name": TOPIC, **fields})
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=TOPIC)  # nothing was created
    return str(info.value.message)


T0 = "messageTransforms[0]"
REFUSED = [
    ([udf(f"f{i}") for i in range(6)],
     "The request exceeds the maximum number of enabled message transforms. Maximum enabled "
     "transforms: 5. Enabled transforms: 6"),
    ([udf("")], f"{T0}.javascriptUdf.functionName is required"),
    ([{"javascript_udf": {"function_name": "f"}}], f"{T0}.javascriptUdf.code is required"),
    ([udf("f"), udf("f")],
     "messageTransforms[1].javascriptUdf.functionName 'f' is also the function name of " + T0),
    ([udf("f", "x" * 20481)], f"{T0}.javascriptUdf.code is 20481 bytes"),
    ([{"ai_inference": {"endpoint": "us-central1/endpoints/123"}}],
     "is not a Vertex AI endpoint; expected projects/P/locations/L/endpoints/E"),
    ([{"ai_inference": {}}], f"{T0}.aiInference.endpoint is required"),
    ([{"compression": {"compression_algorithm": "ZLIB"}}],
     f"{T0}.compression.compressionMode is required"),
    ([{"disabled": True}], f"{T0} names no transform"),
]


@pytest.mark.parametrize(("transforms", "words"), REFUSED)
def test_transforms_the_service_refuses(
    publisher_client: Any, transforms: list[Any], words: str
) -> None:
    assert words in refusal(publisher_client, message_transforms=transforms)


def test_transforms_at_their_bounds_are_taken_and_returned(publisher_client: Any) -> None:
    transforms = [
        udf("disabled-sixth", "x") | {"disabled": True},  # only enabled ones count
        udf("f0", "x" * 20480),
        udf("f1"),
        {"ai_inference": {"endpoint": ENDPOINT}},
        {"ai_inference": {"endpoint": MODEL, "unstructured_inference": {"parameters": {"t": 1}}}},
        {"compression": {"compression_algorithm": "ZLIB", "compression_mode": "COMPRESS"}},
    ]
    created = publisher_client.create_topic(
        request={"name": TOPIC, "message_transforms": transforms}
    )
    assert len(created.message_transforms) == 6
    got = publisher_client.get_topic(topic=TOPIC)
    assert got == created
    assert got.message_transforms[4].ai_inference.endpoint == MODEL
    assert got.message_transforms[0].disabled
    # An update that breaks a rule is refused and leaves the topic as it was.
    with pytest.raises(exceptions.InvalidArgument, match="functionName 'f1' is also"):
        publisher_client.update_topic(request={
            "topic": {"name": TOPIC, "message_transforms": [udf("f1"), udf("f1")]},
            "update_mask": {"paths": ["message_transforms"]},
        })
    assert publisher_client.get_topic(topic=TOPIC) == created


def test_subscription_transforms_follow_the_same_rules(
    publisher_client: Any, subscriber_client: Any
) -> None:
    publisher_client.create_topic(name=TOPIC)
    with pytest.raises(exceptions.InvalidArgument, match=r"javascriptUdf\.code is required"):
        subscriber_client.create_subscription(request={
            "name": SUB, "topic": TOPIC,
            "message_transforms": [{"javascript_udf": {"function_name": "f"}}],
        })
    made = subscriber_client.create_subscription(
        request={"name": SUB, "topic": TOPIC, "message_transforms": [udf()]}
    )
    assert made.message_transforms[0].javascript_udf.function_name == "redact"


KINESIS = {
    "stream_arn": "arn:aws:kinesis:us-east-1:111:stream/s",
    "consumer_arn": "arn:aws:kinesis:us-east-1:111:stream/s/consumer/c:1",
    "aws_role_arn": "arn:aws:iam::111:role/r",
    "gcp_service_account": "ingest@proj-alpha.iam.gserviceaccount.com",
}


@pytest.mark.parametrize(
    ("source", "missing"),
    [
        ("aws_kinesis", "AwsKinesis ingestion settings: consumer_arn"),
        ("aws_msk", "AwsMsk ingestion settings: topic"),
        ("confluent_cloud", "ConfluentCloud ingestion settings: identity_pool_id"),
    ],
)
def test_an_ingestion_source_missing_a_required_field_is_refused(
    publisher_client: Any, source: str, missing: str
) -> None:
    bodies = {
        "aws_kinesis": {k: v for k, v in KINESIS.items() if k != "consumer_arn"},
        "aws_msk": {"cluster_arn": "arn:aws:kafka:us-east-1:111:cluster/c/u",
                    "aws_role_arn": "arn:aws:iam::111:role/r",
                    "gcp_service_account": KINESIS["gcp_service_account"]},
        "confluent_cloud": {"bootstrap_server": "pkc.example:9092", "cluster_id": "lkc-1",
                            "topic": "t", "gcp_service_account": KINESIS["gcp_service_account"]},
    }
    message = refusal(
        publisher_client, ingestion_data_source_settings={source: bodies[source]}
    )
    # Google's emulator's words (it refuses these three the same way)
    assert message == f"Missing required fields for {missing}"


def test_ingestion_state_is_output_only_and_the_source_can_change(publisher_client: Any) -> None:
    # The state a request sends is dropped: the source reads ACTIVE.
    created = publisher_client.create_topic(request={
        "name": TOPIC,
        "ingestion_data_source_settings": {
            "aws_kinesis": {**KINESIS, "state": "CONFLICTING_REGION_CONSTRAINTS"}},
    })
    assert created.ingestion_data_source_settings.aws_kinesis.state.name == "ACTIVE"
    # The whole settings are replaced, the kind of source included.
    updated = publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "ingestion_data_source_settings": {
            "cloud_storage": {"bucket": "landing", "match_glob": "**.json"},
            "platform_logs_settings": {"severity": "WARNING"}}},
        "update_mask": {"paths": ["ingestion_data_source_settings"]},
    })
    settings = updated.ingestion_data_source_settings
    assert "aws_kinesis" not in settings and settings.cloud_storage.bucket == "landing"
    assert settings.cloud_storage.state.name == "ACTIVE"
    assert publisher_client.get_topic(topic=TOPIC) == updated


def test_tags_are_input_only_and_immutable(publisher_client: Any) -> None:
    created = publisher_client.create_topic(
        request={"name": TOPIC, "tags": {"123/environment": "production"}}
    )
    assert not created.tags
    assert not publisher_client.get_topic(topic=TOPIC).tags
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.update_topic(request={
            "topic": {"name": TOPIC, "tags": {"123/environment": "test"}},
            "update_mask": {"paths": ["tags"]},
        })
    assert info.value.message == (
        "Invalid update_mask provided in the UpdateTopicRequest: the tags field in the "
        "Topic is not mutable."
    )


def test_a_custom_constraint_reads_the_model_location_and_the_source(
    local_server: Any, orgpolicy_client: Any, publisher_client: Any
) -> None:
    org = "organizations/4242"
    local_server.set_ancestry(f"projects/{PROJECT}", org)
    for name, condition, description in [
        ("custom.euModels",
         "!has(resource.messageTransforms) || resource.messageTransforms.all(t, "
         "!has(t.aiInference) || t.aiInference.endpoint.contains('/locations/europe-'))",
         "Models run in Europe."),
        ("custom.noKinesis", "!has(resource.ingestionDataSourceSettings) || "
         "!has(resource.ingestionDataSourceSettings.awsKinesis)",
         "No Kinesis ingestion."),
    ]:
        orgpolicy_client.create_custom_constraint(parent=org, custom_constraint={
            "name": f"{org}/customConstraints/{name}",
            "resource_types": ["pubsub.googleapis.com/Topic"],
            "method_types": ["CREATE", "UPDATE"], "condition": condition,
            "action_type": "ALLOW", "description": description,
        })
        local_server.put_policy(Policy.from_dict({
            "name": f"projects/{PROJECT}/policies/{name}", "spec": {"rules": [{"enforce": True}]},
        }))
    with pytest.raises(exceptions.FailedPrecondition, match="Models run in Europe"):
        publisher_client.create_topic(request={
            "name": TOPIC, "message_transforms": [{"ai_inference": {"endpoint": ENDPOINT}}]})
    with pytest.raises(exceptions.FailedPrecondition, match="No Kinesis ingestion"):
        publisher_client.create_topic(request={
            "name": TOPIC, "ingestion_data_source_settings": {"aws_kinesis": KINESIS}})
    made = publisher_client.create_topic(request={
        "name": TOPIC, "message_transforms": [{"ai_inference": {"endpoint": MODEL}}]})
    assert made.message_transforms[0].ai_inference.endpoint == MODEL


def held(server: Any) -> int:
    stats = server.subscription_stats(SUB)
    return sum(region.count for region in stats.unacked.values())


def test_an_export_away_from_the_model_reads_vertex_ai_location_restriction(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    publisher_client.create_topic(request={
        "name": TOPIC, "message_transforms": [{"ai_inference": {"endpoint": ENDPOINT}}]})
    local_server.set_destination_location("bigquery:proj-alpha.sales", "europe-west1")
    sub = subscriber_client.create_subscription(request={
        "name": SUB, "topic": TOPIC, "bigquery_config": {"table": "proj-alpha.sales.orders"}})
    assert sub.bigquery_config.state.name == "VERTEX_AI_LOCATION_RESTRICTION"
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"x"}])
    assert held(local_server) == 1  # held, not delivered
    # Where the model is, the export is active and what was held is delivered.
    local_server.set_destination_location("bigquery:proj-alpha.sales", "us-central1")
    got = subscriber_client.get_subscription(subscription=SUB)
    assert got.bigquery_config.state.name == "ACTIVE"
    publisher_client.publish(topic=TOPIC, messages=[{"data": b"y"}])
    assert held(local_server) == 0
    # A disabled transform sends nothing to its model.
    publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "message_transforms": [
            {"ai_inference": {"endpoint": MODEL}, "disabled": True}]},
        "update_mask": {"paths": ["message_transforms"]},
    })
    local_server.set_destination_location("bigquery:proj-alpha.sales", "asia-east1")
    got = subscriber_client.get_subscription(subscription=SUB)
    assert got.bigquery_config.state.name == "ACTIVE"


def test_a_storage_export_of_a_subscription_model_and_in_transit_first(
    local_server: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    """The subscription's own AI Inference transform decides too; a destination outside
    the in-transit regions reads IN_TRANSIT_LOCATION_RESTRICTION, judged first."""
    publisher_client.create_topic(request={"name": TOPIC, "message_storage_policy": {
        "allowed_persistence_regions": ["europe-west1"], "enforce_in_transit": True}})
    local_server.set_destination_location("storage:landing", "europe-west1")
    sub = subscriber_client.create_subscription(request={
        "name": SUB, "topic": TOPIC, "cloud_storage_config": {"bucket": "landing"},
        "message_transforms": [{"ai_inference": {"endpoint": MODEL}}]})
    assert sub.cloud_storage_config.state.name == "VERTEX_AI_LOCATION_RESTRICTION"
    local_server.set_destination_location("storage:landing", "europe-west4")  # the model's
    got = subscriber_client.get_subscription(subscription=SUB)
    assert got.cloud_storage_config.state.name == "IN_TRANSIT_LOCATION_RESTRICTION"
    local_server.set_destination_location("storage:landing", "asia-east1")  # both wrong
    got = subscriber_client.get_subscription(subscription=SUB)
    assert got.cloud_storage_config.state.name == "IN_TRANSIT_LOCATION_RESTRICTION"


def test_a_declared_ingestion_state_shows_on_every_read(
    local_server: Any, publisher_client: Any
) -> None:
    """The test hook stands for what the server cannot see (a Regional Access Boundary
    on the service account); a client cannot set it, every read shows it."""
    from tests.localserver.rest_support import rest

    client = publisher_client
    client.create_topic(request={
        "name": TOPIC, "ingestion_data_source_settings": {"aws_kinesis": KINESIS}})
    local_server.set_ingestion_state(TOPIC, "CONFLICTING_REGION_CONSTRAINTS")
    conflicting = "CONFLICTING_REGION_CONSTRAINTS"
    assert client.get_topic(topic=TOPIC).ingestion_data_source_settings.aws_kinesis.state.name \
        == conflicting
    listed = list(client.list_topics(project=f"projects/{PROJECT}"))
    assert listed[0].ingestion_data_source_settings.aws_kinesis.state.name == conflicting
    answer = rest(local_server.address, "GET", f"/v1/{TOPIC}")
    assert answer.status == 200
    assert answer.body["ingestionDataSourceSettings"]["awsKinesis"]["state"] == conflicting
    # A state the source's kind has not (Cloud Storage has no STREAM_NOT_FOUND) leaves
    # it ACTIVE; a source kind that has it shows it after an update.
    local_server.set_ingestion_state(TOPIC, "STREAM_NOT_FOUND")
    updated = client.update_topic(request={
        "topic": {"name": TOPIC, "ingestion_data_source_settings": {
            "cloud_storage": {"bucket": "landing"}}},
        "update_mask": {"paths": ["ingestion_data_source_settings"]},
    })
    assert updated.ingestion_data_source_settings.cloud_storage.state.name == "ACTIVE"
    local_server.set_ingestion_state(TOPIC, "BUCKET_NOT_FOUND")
    got = client.get_topic(topic=TOPIC)
    assert got.ingestion_data_source_settings.cloud_storage.state.name == "BUCKET_NOT_FOUND"
    local_server.set_ingestion_state(TOPIC, None)
    got = client.get_topic(topic=TOPIC)
    assert got.ingestion_data_source_settings.cloud_storage.state.name == "ACTIVE"
    with pytest.raises(ValueError, match="'SLEEPING' is not an ingestion source state"):
        local_server.set_ingestion_state(TOPIC, "SLEEPING")
    with pytest.raises(ValueError, match="is not a topic name"):
        local_server.set_ingestion_state("orders", "BUCKET_NOT_FOUND")
