"""The service's rules for a topic's ingestion source (`ingestionDataSourceSettings`),
as pure functions over the REST JSON shape: the fields googleapis
`google/pubsub/v1/pubsub.proto` marks REQUIRED for each source, and which of the
source's fields are output-only (its `state`). The local server answers a problem as
INVALID_ARGUMENT; the spec checks can report the same words. No google import.

Required, per the proto: Amazon Kinesis `streamArn`, `consumerArn`, `awsRoleArn`,
`gcpServiceAccount`; Amazon MSK `clusterArn`, `topic`, `awsRoleArn`,
`gcpServiceAccount`; Confluent Cloud `bootstrapServer`, `clusterId`, `topic`,
`identityPoolId`, `gcpServiceAccount`. Every field of Cloud Storage (even `bucket`)
and of Azure Event Hubs is OPTIONAL there. The settings are replaced as a whole by an
UpdateTopic naming `ingestion_data_source_settings` (gcloud's `topics update` sends
every ingestion flag again: "any omitted IngestionDataSourceSettings flags revert to
their default value"), so every field, the source's kind included, is updatable.
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
# The states a source can be put in that no local check can know (they depend on the
# other cloud, IAM, or the service account's Regional Access Boundary).
CONFLICTING_REGION_CONSTRAINTS = "CONFLICTING_REGION_CONSTRAINTS"


def source_kind(settings: Mapping[str, Any]) -> str | None:
    """Which source the settings name (None: platform logs settings alone)."""
    return next((kind for kind in SOURCES if kind in settings), None)


def ingestion_problems(
    settings: Mapping[str, Any], field: str = "ingestionDataSourceSettings"
) -> list[str]:
    """What the service refuses in the settings, each problem naming the field."""
    kind = source_kind(settings)
    if kind is None:
        return []
    body = settings.get(kind) or {}
    missing = [name for name in REQUIRED[kind] if not body.get(name)]
    return [f"{field}.{kind}.{name} is required." for name in missing]
