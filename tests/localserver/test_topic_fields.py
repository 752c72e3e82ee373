"""The topic fields besides labels and the storage policy, through the real client and
the REST face: message retention (10 minutes to 31 days, each bound at and past it),
the KMS key's name, and the ingestion source and message transforms (stored and
returned as given); each update mask names one field and changes only it."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions
from rest_support import rest

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/orders"
KMS = f"{P}/locations/us-east1/keyRings/ring/cryptoKeys/key"
INGESTION = {"cloud_storage": {"bucket": "landing", "text_format": {"delimiter": "\n"}}}
TRANSFORMS = [{"javascript_udf": {"function_name": "redact", "code": "function redact(m) {}"}}]
DAY = 86400


@pytest.mark.parametrize(
    ("seconds", "ok"),
    [(600, True), (599, False), (31 * DAY, True), (31 * DAY + 1, False)],
)
def test_retention_bounds_on_create_and_update(
    publisher_client: Any, seconds: int, ok: bool
) -> None:
    request = {"name": TOPIC, "message_retention_duration": {"seconds": seconds}}
    if not ok:
        with pytest.raises(exceptions.InvalidArgument) as info:
            publisher_client.create_topic(request=request)
        assert info.value.message.startswith("message_retention_duration out of bounds")
        assert "600s (10 minutes) to 2678400s (31 days)" in info.value.message
        publisher_client.create_topic(name=TOPIC)
        with pytest.raises(exceptions.InvalidArgument, match="out of bounds"):
            publisher_client.update_topic(request={
                "topic": request, "update_mask": {"paths": ["message_retention_duration"]}
            })
        assert "message_retention_duration" not in publisher_client.get_topic(topic=TOPIC)
        return
    created = publisher_client.create_topic(request=request)
    assert created.message_retention_duration.total_seconds() == seconds
    updated = publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "message_retention_duration": {"seconds": 3600}},
        "update_mask": {"paths": ["message_retention_duration"]},
    })
    assert updated.message_retention_duration.total_seconds() == 3600


@pytest.mark.parametrize(
    "key",
    [
        "key",
        f"{P}/locations/us-east1/keyRings/ring",
        f"{P}/locations/us-east1/keyRings/ring/cryptoKeys/key/cryptoKeyVersions/1",
        f"{P}/locations//keyRings/ring/cryptoKeys/key",
    ],
)
def test_kms_key_name_must_be_well_formed(publisher_client: Any, key: str) -> None:
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.create_topic(request={"name": TOPIC, "kms_key_name": key})
    assert info.value.message == (
        f"Invalid kms_key_name {key!r}: expected projects/P/locations/L/keyRings/R/cryptoKeys/K."
    )


def test_ingestion_source_and_transforms_are_stored_and_returned(publisher_client: Any) -> None:
    created = publisher_client.create_topic(request={
        "name": TOPIC, "kms_key_name": KMS, "ingestion_data_source_settings": INGESTION,
        "message_transforms": TRANSFORMS,
    })
    got = publisher_client.get_topic(topic=TOPIC)
    assert got == created
    assert got.kms_key_name == KMS
    assert got.ingestion_data_source_settings.cloud_storage.bucket == "landing"
    assert got.message_transforms[0].javascript_udf.function_name == "redact"
    # An update of one field leaves the others as they were.
    updated = publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "ingestion_data_source_settings": {
            "cloud_storage": {"bucket": "other"}}},
        "update_mask": {"paths": ["ingestion_data_source_settings"]},
    })
    assert updated.ingestion_data_source_settings.cloud_storage.bucket == "other"
    assert updated.kms_key_name == KMS and len(updated.message_transforms) == 1


def test_the_rest_face_takes_each_field_and_its_mask(local_server: Any) -> None:
    path = f"/v1/{TOPIC}"
    created = rest(local_server.address, "PUT", path, {
        "messageRetentionDuration": "172800s", "kmsKeyName": KMS,
        "ingestionDataSourceSettings": {"cloudStorage": {"bucket": "landing"}},
        "messageTransforms": [{"javascriptUdf": {"functionName": "f", "code": "x"}}],
    })
    assert created.status == 200, created.body
    assert created.body["messageRetentionDuration"] == "172800s"
    for mask, topic, check in [
        ("messageRetentionDuration", {"messageRetentionDuration": "600s"},
         lambda t: t["messageRetentionDuration"] == "600s"),
        ("kmsKeyName", {"kmsKeyName": ""}, lambda t: "kmsKeyName" not in t),
        ("messageTransforms", {}, lambda t: "messageTransforms" not in t),
    ]:
        answer = rest(local_server.address, "PATCH", path, {"topic": topic, "updateMask": mask})
        assert answer.status == 200, answer.body
        assert check(answer.body), (mask, answer.body)
        assert answer.body["ingestionDataSourceSettings"]["cloudStorage"]["bucket"] == "landing"
    refused = rest(local_server.address, "PATCH", path, {
        "topic": {"messageRetentionDuration": "32d"}, "updateMask": "messageRetentionDuration"})
    assert refused.status == 400
    refused = rest(local_server.address, "PATCH", path, {
        "topic": {"messageRetentionDuration": f"{32 * DAY}s"},
        "updateMask": "messageRetentionDuration"})
    assert refused.status == 400
    assert refused.body["error"]["message"].startswith("message_retention_duration out of bounds")
