"""Google's Python samples for ingestion sources and SMTs (tests/interop/pubsub_samples.py,
copied unchanged from googleapis/python-pubsub) run against the local server and
against Google's emulator, with the values and the checks of Google's own sample tests
(`publisher_test.py`, `subscriber_test.py`): what each prints, then what GetTopic or
GetSubscription returns of what it created. On the local server the SMT sample's UDF
also runs on a published message (Google's emulator stores transforms without running
them: docs/local-server.md). Skipped, with the reason printed, only where gcloud or its
emulator component is absent (the suite's `google_emulator` fixture)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pubsub_samples as samples
import pytest

from reconciler.backends.clients import publisher_client, subscriber_client

PROJECT = "proj-samples"
TOPIC_ID = "samples-topic"
SA = "fake-service-account@fake-gcp-project.iam.gserviceaccount.com"
ROLE = "arn:aws:iam::111111111111:role/fake-role-name"
STREAM = "arn:aws:kinesis:us-west-2:111111111111:stream/fake-stream-name"
CONSUMER = (
    "arn:aws:kinesis:us-west-2:111111111111:stream/fake-stream-name/consumer/consumer-1:1111111111"
)

# (sample, its arguments after project and topic, what it prints after the topic's
# name, the source kind GetTopic then has) as publisher_test.py calls them
INGESTION: list[tuple[Callable[..., None], tuple[str, ...], str, str]] = [
    (samples.create_topic_with_kinesis_ingestion, (STREAM, CONSUMER, ROLE, SA),
     "AWS Kinesis", "aws_kinesis"),
    (samples.create_topic_with_cloud_storage_ingestion,
     ("pubsub-cloud-storage-bucket", "text", ",", "**.txt", "1970-01-01T00:00:01Z"),
     "Cloud Storage", "cloud_storage"),
    (samples.create_topic_with_aws_msk_ingestion,
     ("arn:aws:kafka:us-east-1:111111111111:cluster/fake-cluster-name/11111111-1111-1",
      "fake-msk-topic-name", ROLE, SA), "AWS MSK", "aws_msk"),
    (samples.create_topic_with_azure_event_hubs_ingestion,
     ("fake-resource-group", "fake-namespace", "fake-event-hub", "fake-client-id",
      "fake-tenant-id", "fake-subscription-id", SA), "Azure Event Hubs", "azure_event_hubs"),
    (samples.create_topic_with_confluent_cloud_ingestion,
     ("fake-bootstrap-server-id.us-south1.gcp.confluent.cloud:9092", "fake-cluster-id",
      "fake-confluent-topic-name", "fake-identity-pool-id", SA),
     "Confluent Cloud", "confluent_cloud"),
]


@pytest.fixture(params=["local", "emulator"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The address of the server the samples talk to, as PUBSUB_EMULATOR_HOST (how
    the samples' own clients find an emulator)."""
    if request.param == "local":
        address = str(request.getfixturevalue("local_server").address)
    else:
        address = str(request.getfixturevalue("google_emulator"))
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", address)
    return address


def _topic(address: str, topic_id: str = TOPIC_ID) -> Any:
    client = publisher_client(address)
    try:
        return client.get_topic(topic=f"projects/{PROJECT}/topics/{topic_id}")
    finally:
        client.transport.close()


@pytest.mark.parametrize(("sample", "args", "says", "kind"), INGESTION,
                         ids=[kind for *_, kind in INGESTION])
def test_an_ingestion_sample(
    server: str, capsys: pytest.CaptureFixture[str], sample: Callable[..., None],
    args: tuple[str, ...], says: str, kind: str,
) -> None:
    topic_id = f"{TOPIC_ID}-{kind.replace('_', '-')}"
    sample(PROJECT, topic_id, *args)
    out, _ = capsys.readouterr()
    assert f"Created topic: projects/{PROJECT}/topics/{topic_id} with {says} Ingestion " \
        "Settings" in out
    settings = type(_topic(server, topic_id)).pb(_topic(server, topic_id))
    assert settings.ingestion_data_source_settings.WhichOneof("source") == kind


def test_the_update_topic_type_sample(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    samples.create_topic(PROJECT, TOPIC_ID)
    samples.update_topic_type(PROJECT, TOPIC_ID, STREAM, CONSUMER, ROLE, SA)
    out, _ = capsys.readouterr()
    topic = f"projects/{PROJECT}/topics/{TOPIC_ID}"
    assert f"Created topic: {topic}" in out
    assert f"Updated topic: {topic} with AWS Kinesis Ingestion Settings" in out
    assert _topic(server).ingestion_data_source_settings.aws_kinesis.stream_arn == STREAM


def test_the_smt_samples(
    request: pytest.FixtureRequest, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    smt_topic, plain = f"{TOPIC_ID}-smt", f"{TOPIC_ID}-for-smt-sub"  # the emulator is shared
    samples.create_topic_with_smt(PROJECT, smt_topic)
    samples.create_topic(PROJECT, plain)
    samples.create_subscription_with_smt(PROJECT, plain, "samples-sub")
    out, _ = capsys.readouterr()
    assert f"Created topic: projects/{PROJECT}/topics/{smt_topic} with SMT" in out
    assert "Created subscription with SMT" in out and "redactSSN" in out
    [transform] = _topic(server, smt_topic).message_transforms
    assert transform.javascript_udf.function_name == "redactSSN"
    if request.node.callspec.params["server"] != "local":
        return  # Google's emulator stores transforms without running them
    # The local server runs the samples' UDF: the SSN is gone on the way in (topic)
    # and on the way out (subscription).
    publisher, subscriber = publisher_client(server), subscriber_client(server)
    topic = f"projects/{PROJECT}/topics/{smt_topic}"
    subscriber.create_subscription(name=f"projects/{PROJECT}/subscriptions/smt", topic=topic)
    person = json.dumps({"name": "Ada", "ssn": "123-45-6789"}).encode()
    publisher.publish(topic=topic, messages=[{"data": person}])
    publisher.publish(topic=f"projects/{PROJECT}/topics/{plain}", messages=[{"data": person}])
    for sub in ("smt", "samples-sub"):
        got = subscriber.pull(subscription=f"projects/{PROJECT}/subscriptions/{sub}",
                              max_messages=1, timeout=60).received_messages
        assert json.loads(got[0].message.data) == {"name": "Ada"}
