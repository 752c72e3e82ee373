"""The service's rules for a topic's ingestion source (`ingestionDataSourceSettings`),
as pure functions over the REST JSON shape: the fields googleapis
`google/pubsub/v1/pubsub.proto` marks REQUIRED for each source, refused in the words
of Google's emulator. The local server answers a problem as INVALID_ARGUMENT; the
spec checks can report the same words. No google import.

Required, per the proto: Amazon Kinesis `streamArn`, `consumerArn`, `awsRoleArn`,
`gcpServiceAccount`; Amazon MSK `clusterArn`, `topic`, `awsRoleArn`,
`gcpServiceAccount`; Confluent Cloud `bootstrapServer`, `clusterId`, `topic`,
`identityPoolId`, `gcpServiceAccount`. Every field of Cloud Storage (even `bucket`;
its input format "Defaults to text format") and of Azure Event Hubs is OPTIONAL
there; Google's emulator (0.8.20) requires them all too, which is not followed here.
The settings are replaced as a whole by an UpdateTopic naming
`ingestion_data_source_settings` (gcloud's `topics update` sends every ingestion flag
again: "any omitted IngestionDataSourceSettings flags revert to their default
value"), so every field, the source's kind included, is updatable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCES = ("awsKinesis", "cloudStorage", "azureEventHubs", "awsMsk", "confluentCloud")
REQUIRED: dict[str, tuple[str, ...]] = {
    "awsKinesis": ("streamArn", "consumerArn", "awsRoleArn", "gcpServiceAccount"),
    "cloudStorage": (),
    "azureEventHubs": (),
    "awsMsk": ("clusterArn", "topic", "awsRoleArn", "gcpServiceAccount"),
    "confluentCloud": (
        "bootstrapServer", "clusterId", "topic", "identityPoolId", "gcpServiceAccount",
    ),
}
# How Google's emulator names each source in its refusal (0.8.20, measured).
_MESSAGE_NAMES = {
    "awsKinesis": "AwsKinesis", "cloudStorage": "CloudStorage",
    "azureEventHubs": "AzureEventHubs", "awsMsk": "AwsMsk", "confluentCloud": "ConfluentCloud",
}


def source_kind(settings: Mapping[str, Any]) -> str | None:
    """Which source the settings name (None: platform logs settings alone)."""
    return next((kind for kind in SOURCES if kind in settings), None)


def ingestion_problems(settings: Mapping[str, Any]) -> list[str]:
    """What the service refuses in the settings: the required fields missing, in
    Google's emulator's words (`Missing required fields for AwsKinesis ingestion
    settings: consumer_arn`)."""
    given = [kind for kind in SOURCES if kind in settings]
    if len(given) > 1:  # a oneof on the wire: only a spec can name two
        return [f"ingestionDataSourceSettings names {' and '.join(given)}; a topic "
                "ingests from exactly one source"]
    kind = source_kind(settings)
    if kind is None:
        return []
    body = settings.get(kind) or {}
    missing = [_snake(name) for name in REQUIRED[kind] if not body.get(name)]
    if not missing:
        return []
    return [
        f"Missing required fields for {_MESSAGE_NAMES[kind]} ingestion settings: "
        + ", ".join(missing)
    ]


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
