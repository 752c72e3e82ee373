"""The spec documents as msgspec Structs: the one source of the spec language.

Each Struct is at once the shape `validate` checks (`shape.py`: `msgspec.convert` with
strict types, unknown keys forbidden, camelCase names), the read-only record the
checks read (`located.model.spec.labels`), and what the JSON Schema
(`schema.py`: `reconcile schema`, specs/schema.json) and docs/spec-reference.md
(`reference.py`) are generated from. A field's `Meta(description=...)` is its one
description (a field without one has an empty cell); a kind's docstring introduces it.
Adding a field is one edit here, then regenerating the two files (docs/development.md).

Semantic rules (regions, label rules, hedging ranges, org policy) live in
`reconciler.spec.checks`, which sees the whole tree and reports every problem with its
position; the Structs only make sure the shapes are right.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, field

from reconciler.spec.durations import parse_duration_ms

API_VERSION = "reconcile.pubsub/v1"
KINDS = ("Topic", "HedgingProfile", "Defaults", "Owner")


class DurationMs(int):
    """A duration written with a unit (`500ms`, `5s`, `1m30s`) and held as whole
    milliseconds. A type of its own only so that `msgspec.convert` hands the text to
    `decode_hook`; the records then hold a plain int (`_plain_durations`)."""


def decode_hook(kind: type, value: Any) -> Any:
    """msgspec's hook for the one type it does not know: a duration's text -> ms
    (`DurationError` or `DurationRangeError` when the text is not one)."""
    if kind is DurationMs and type(value) is str:
        return DurationMs(parse_duration_ms(value))
    raise TypeError("a duration must be text with a unit, e.g. 500ms, 5s or 1m")


def _plain_durations(record: msgspec.Struct, names: tuple[str, ...]) -> None:
    """Each duration field as a plain int, as every other number the records hold."""
    for name in names:
        value = getattr(record, name)
        if value is not None:
            msgspec.structs.force_setattr(record, name, int(value))


# Value types as the JSON Schema shows them (`extra_json_schema`; never checked here:
# a retention's form is a rule of `spec/settings.py`, with its own diagnostics).
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
DURATION_SCHEMA = {
    "type": "string",
    "pattern": DURATION_PATTERN,
    "description": "A duration with a unit: 500ms, 5s, 1m, 1m30s.",
}
Retention = Annotated[
    str,
    Meta(extra_json_schema={
        "pattern": r"^([0-9]+(\.[0-9]+)?(d|h|m|s|ms))+$",
        "description": "A duration with a unit: 2d, 48h, 1h30m, 600s, 600.5s.",
    }),
]
ApiVersion = Annotated[str, Meta(extra_json_schema={"const": API_VERSION})]
# A calendar day (an accepted finding's expiry); whether it is one is a rule of
# spec/acceptances.py, with its own diagnostic.
Day = Annotated[str, Meta(extra_json_schema={"pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"})]


class _Shape(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    # Read-only, compared by value, keyword-only constructors; written by their
    # camelCase names (`schema_` is `schema`: `field(name=...)`).
    pass


# What each field means: its description is the one source of docs/spec-reference.md
# and of the published schema's descriptions.
_API_VERSION = Meta(description=f"Always `{API_VERSION}`.")
_KIND = Meta(description="The document kind.")
_METADATA = Meta(description="Which object the document is about.")
_SPEC = Meta(description="The desired state.")
_LABELS = Meta(description=(
    "Managed label keys and values; labels others set on the topic are kept. Keys "
    "starting with `reconcile-` are reserved."
))
_STORAGE = Meta(description=(
    "Omitted: unmanaged (never touched). `inherit`: follow the effective org policy "
    "(recompute). An object: these regions exactly."
))
_RETENTION = Meta(description=(
    "How long the topic keeps every published message, acknowledged or not: 10 minutes "
    "to 31 days, written with a unit (`2d`, `48h`, `1h30m`, `600s`; compared in the "
    "service's seconds, so `2d` equals `172800s`). Omitted: unmanaged (never sent, never "
    "cleared)."
))
_KMS_KEY = Meta(description=(
    "The Cloud KMS key that protects the topic's messages (CMEK): "
    "`projects/P/locations/L/keyRings/R/cryptoKeys/K`. Omitted: unmanaged."
))
_SCHEMA_SETTINGS = Meta(description=(
    "The schema published messages are validated against. Omitted: unmanaged (a schema "
    "set by another tool is kept)."
))
_PUBLISHERS = Meta(description=(
    "Where and how the topic's publishers run; checked against the storage policy and "
    "recorded on the topic as `reconcile-` labels."
))


class TopicMetadata(_Shape, kw_only=True, frozen=True):
    project: Annotated[str | None, Meta(
        description="Google Cloud project ID; may come from a `Defaults` document.",
    )] = None
    name: Annotated[str, Meta(
        description="Topic ID (3-255 characters, starts with a letter, not `goog`).",
    )]


class StoragePolicySpec(_Shape, kw_only=True, frozen=True):
    allowed_persistence_regions: Annotated[list[str], Meta(
        description="Region names only (no zones, multi-regions, dual-regions, exclusions "
        "or value groups); a set, order is not a diff; never empty; each must be allowed by "
        "the org policy.",
    )]
    enforce_in_transit: Annotated[bool | None, Meta(
        description="Reject Publish/Pull received outside the allowed regions; absent and "
        "`false` are equal.",
    )] = None


class SchemaSettingsSpec(_Shape, kw_only=True, frozen=True):
    schema_: Annotated[str, Meta(
        description="`projects/P/schemas/S` (the schema may be in another project); "
        "it must exist when the plan is applied.",
    )] = field(name="schema")
    encoding: Annotated[Literal["JSON", "BINARY"], Meta(
        description="How published messages are encoded: `JSON` or `BINARY`.",
    )]
    first_revision_id: Annotated[str | None, Meta(
        description="The oldest schema revision messages may match; omitted: no lower bound.",
    )] = None
    last_revision_id: Annotated[str | None, Meta(
        description="The newest schema revision messages may match; omitted: no upper bound.",
    )] = None


# The REST JSON fields (reconciler/topicfields.py: TRANSFORMS, INGESTION, TAGS), as
# googleapis `google/pubsub/v1/pubsub.proto` names them in camelCase. A member the proto
# marks REQUIRED is optional here: its absence is reported in the service's words by
# reconciler/transformrules.py or ingestionrules.py (the rules the local server
# applies), at its line.
_UDF_CODE = Meta(description=(
    "JavaScript defining the function `functionName` names, "
    "`function NAME(message, metadata)`; at most 20 KB."
))


class JavaScriptUdfSpec(_Shape, kw_only=True, frozen=True):
    function_name: Annotated[str, Meta(
        description="The function the code defines; unique among a topic's UDFs.",
    )] = ""
    code: Annotated[str, _UDF_CODE] = ""


class UnstructuredInferenceSpec(_Shape, kw_only=True, frozen=True):
    parameters: Annotated[dict[str, Any] | None, Meta(
        description="A JSON object sent with each message's data in every request.",
    )] = None


class AiInferenceSpec(_Shape, kw_only=True, frozen=True):
    endpoint: Annotated[str, Meta(
        description="The Vertex AI model each message is sent to: "
        "`projects/P/locations/L/endpoints/E` or "
        "`projects/P/locations/L/publishers/PUB/models/M`.",
    )] = ""
    unstructured_inference: Annotated[UnstructuredInferenceSpec | None, Meta(
        description="Requests and responses are any JSON object.",
    )] = None
    service_account_email: Annotated[str | None, Meta(
        description="The service account the requests are made as; omitted: Pub/Sub's "
        "service agent.",
    )] = None


class CompressionSpec(_Shape, kw_only=True, frozen=True):
    compression_algorithm: Annotated[str, Meta(description="`ZLIB`.")] = ""
    compression_mode: Annotated[str, Meta(description="`COMPRESS` or `DECOMPRESS`.")] = ""


class MessageTransformSpec(_Shape, kw_only=True, frozen=True):
    javascript_udf: Annotated[JavaScriptUdfSpec | None, Meta(
        description="A JavaScript user-defined function.",
    )] = None
    ai_inference: Annotated[AiInferenceSpec | None, Meta(
        description="Send each message to a Vertex AI model (data leaves for the "
        "model's location).",
    )] = None
    compression: Annotated[CompressionSpec | None, Meta(
        description="Compress or decompress each message's data.",
    )] = None
    disabled: Annotated[bool | None, Meta(
        description="Kept on the topic but not applied; absent and `false` are equal.",
    )] = None
    enabled: Annotated[bool | None, Meta(
        description="Deprecated by the API in favour of `disabled`; kept as the topic "
        "has it.",
    )] = None


class AwsKinesisSpec(_Shape, kw_only=True, frozen=True):
    stream_arn: Annotated[str, Meta(description="The Kinesis stream's ARN.")] = ""
    consumer_arn: Annotated[str, Meta(
        description="The enhanced fan-out consumer's ARN.",
    )] = ""
    aws_role_arn: Annotated[str, Meta(
        description="The AWS role assumed through identity federation (not a secret).",
    )] = ""
    gcp_service_account: Annotated[str, Meta(
        description="The service account federated with the role.",
    )] = ""


class TextFormatSpec(_Shape, kw_only=True, frozen=True):
    delimiter: Annotated[str | None, Meta(description="Omitted: a newline.")] = None


class EmptySpec(_Shape, kw_only=True, frozen=True):
    pass


class CloudStorageSpec(_Shape, kw_only=True, frozen=True):
    bucket: Annotated[str, Meta(description="The bucket, without `gs://`.")] = ""
    text_format: Annotated[TextFormatSpec | None, Meta(
        description="Each line of an object is a message (the default).",
    )] = None
    avro_format: Annotated[EmptySpec | None, Meta(description="Avro objects: `{}`.")] = None
    pubsub_avro_format: Annotated[EmptySpec | None, Meta(
        description="Objects a Cloud Storage subscription wrote: `{}`.",
    )] = None
    minimum_object_create_time: Annotated[str | None, Meta(
        description="Only objects created at or after this RFC 3339 time.",
    )] = None
    match_glob: Annotated[str | None, Meta(description="Only objects matching this glob.")] = None


class AzureEventHubsSpec(_Shape, kw_only=True, frozen=True):
    resource_group: Annotated[str, Meta(description="The Azure resource group.")] = ""
    namespace: Annotated[str, Meta(description="The Event Hubs namespace.")] = ""
    event_hub: Annotated[str, Meta(description="The event hub.")] = ""
    client_id: Annotated[str, Meta(
        description="The Azure application's client ID (federated; not a secret).",
    )] = ""
    tenant_id: Annotated[str, Meta(description="The Azure tenant ID.")] = ""
    subscription_id: Annotated[str, Meta(description="The Azure subscription ID.")] = ""
    gcp_service_account: Annotated[str, Meta(
        description="The service account federated with the application.",
    )] = ""


class AwsMskSpec(_Shape, kw_only=True, frozen=True):
    cluster_arn: Annotated[str, Meta(description="The MSK cluster's ARN.")] = ""
    topic: Annotated[str, Meta(description="The Kafka topic read.")] = ""
    aws_role_arn: Annotated[str, Meta(
        description="The AWS role assumed through identity federation (not a secret).",
    )] = ""
    gcp_service_account: Annotated[str, Meta(
        description="The service account federated with the role.",
    )] = ""


class ConfluentCloudSpec(_Shape, kw_only=True, frozen=True):
    bootstrap_server: Annotated[str, Meta(description="`host:port`.")] = ""
    cluster_id: Annotated[str, Meta(description="The Confluent cluster's ID.")] = ""
    topic: Annotated[str, Meta(description="The Kafka topic read.")] = ""
    identity_pool_id: Annotated[str, Meta(
        description="The Confluent identity pool federated with the service account "
        "(not a secret).",
    )] = ""
    gcp_service_account: Annotated[str, Meta(
        description="The service account federated with the pool.",
    )] = ""


class PlatformLogsSettingsSpec(_Shape, kw_only=True, frozen=True):
    severity: Annotated[
        Literal["SEVERITY_UNSPECIFIED", "DISABLED", "DEBUG", "INFO", "WARNING", "ERROR"] | None,
        Meta(description="The lowest severity of the platform logs written."),
    ] = None


class IngestionSpec(_Shape, kw_only=True, frozen=True):
    aws_kinesis: Annotated[AwsKinesisSpec | None, Meta(
        description="Amazon Kinesis Data Streams.",
    )] = None
    cloud_storage: Annotated[CloudStorageSpec | None, Meta(description="Cloud Storage.")] = None
    azure_event_hubs: Annotated[AzureEventHubsSpec | None, Meta(
        description="Azure Event Hubs.",
    )] = None
    aws_msk: Annotated[AwsMskSpec | None, Meta(description="Amazon MSK.")] = None
    confluent_cloud: Annotated[ConfluentCloudSpec | None, Meta(
        description="Confluent Cloud.",
    )] = None
    platform_logs_settings: Annotated[PlatformLogsSettingsSpec | None, Meta(
        description="Platform logs of ingestion failures.",
    )] = None


_TRANSFORMS = Meta(description=(
    "The message transforms applied, in order, to each message published (at most 5 "
    "enabled; each exactly one of `javascriptUdf`, `aiInference`, `compression`). "
    "Omitted: unmanaged (never sent, never compared)."
))
_INGESTION = Meta(description=(
    "Where the topic ingests messages from: exactly one source. A topic's own only "
    "(not in `Defaults`). Omitted: unmanaged."
))
_TAGS = Meta(description=(
    "Tags bound when the topic is created: `PARENT/KEY: VALUE` (`123/environment: "
    "production`). Input-only and immutable: sent only in CreateTopic; on an existing "
    "topic they cannot be read back nor changed. Omitted: none sent."
))


class Retry(_Shape, kw_only=True, frozen=True):
    initial_rpc_timeout: Annotated[DurationMs | None, Meta(
        description="Initial RPC timeout; must exceed the hedge delay.",
    )] = None
    total_timeout: Annotated[DurationMs | None, Meta(
        description="Total timeout; must exceed the hedge delay.",
    )] = None

    def __post_init__(self) -> None:
        _plain_durations(self, ("initial_rpc_timeout", "total_timeout"))


class HedgingProfileSpec(_Shape, kw_only=True, frozen=True):
    hedge_delay: Annotated[DurationMs | None, Meta(
        description="Send a hedged attempt when one has not completed within this delay.",
    )] = None
    max_tokens: Annotated[int | None, Meta(
        description="Token bucket size: at most this many hedged attempts in a burst.",
    )] = None
    refill_ratio: Annotated[float | None, Meta(
        description="Tokens refilled per successful publish, 0.001 to 0.2. Validation "
        "accepts six decimals (the labels carry six); the hedged publisher counts "
        "thousandths of a token and rounds to three: write at most three.",
    )] = None

    def __post_init__(self) -> None:
        _plain_durations(self, ("hedge_delay",))


class Publishers(_Shape, kw_only=True, frozen=True):
    regions: Annotated[list[str], Meta(description="Regions the publishers run in.")] = []
    endpoint: Annotated[str | None, Meta(
        description="Region of the locational endpoint publishers use "
        "(REGION-pubsub.googleapis.com), e.g. us-east1.",
    )] = None
    message_ordering: Annotated[bool, Meta(
        description="Publishers use ordering keys (cannot be combined with hedging).",
    )] = False
    retry: Annotated[Retry | None, Meta(
        description="The publishers' retry timeouts (client defaults 5s / 60s).",
    )] = None
    hedging: Annotated[str | HedgingProfileSpec | None, Meta(
        description="A `HedgingProfile` name, or an inline profile object (fields as in "
        "`HedgingProfile.spec`).",
    )] = None


class TopicSpec(_Shape, kw_only=True, frozen=True):
    labels: Annotated[dict[str, str], _LABELS] = {}
    message_storage_policy: Annotated[
        Literal["inherit"] | StoragePolicySpec | None, _STORAGE
    ] = None
    message_retention_duration: Annotated[Retention | None, _RETENTION] = None
    kms_key_name: Annotated[str | None, _KMS_KEY] = None
    schema_settings: Annotated[SchemaSettingsSpec | None, _SCHEMA_SETTINGS] = None
    message_transforms: Annotated[list[MessageTransformSpec] | None, _TRANSFORMS] = None
    ingestion_data_source_settings: Annotated[IngestionSpec | None, _INGESTION] = None
    publishers: Annotated[Publishers | None, _PUBLISHERS] = None
    tags: Annotated[dict[str, str] | None, _TAGS] = None


class TopicDoc(_Shape, kw_only=True, frozen=True):
    """One Pub/Sub topic: its labels, message storage policy and publishers."""

    api_version: Annotated[ApiVersion, _API_VERSION]
    kind: Annotated[Literal["Topic"], _KIND]
    metadata: Annotated[TopicMetadata, _METADATA]
    spec: Annotated[TopicSpec, _SPEC] = field(default_factory=TopicSpec)


class ProfileMetadata(_Shape, kw_only=True, frozen=True):
    name: Annotated[str, Meta(description="Profile name, referenced by `publishers.hedging`.")]


class HedgingProfileDoc(_Shape, kw_only=True, frozen=True):
    """A named publish-hedging profile that topics refer to."""

    api_version: Annotated[ApiVersion, _API_VERSION]
    kind: Annotated[Literal["HedgingProfile"], _KIND]
    metadata: Annotated[ProfileMetadata, _METADATA]
    spec: Annotated[HedgingProfileSpec, _SPEC] = field(default_factory=HedgingProfileSpec)


class DefaultsMetadata(_Shape, kw_only=True, frozen=True):
    name: Annotated[str | None, Meta(description="Optional name, for readers.")] = None


class DefaultsSpec(_Shape, kw_only=True, frozen=True):
    """Applies to every Topic in the same directory and below; topics override."""

    project: Annotated[str | None, Meta(
        description="Project for every Topic in this directory and below that does not "
        "name one.",
    )] = None
    labels: Annotated[dict[str, str], _LABELS] = {}
    message_storage_policy: Annotated[
        Literal["inherit"] | StoragePolicySpec | None, _STORAGE
    ] = None
    message_retention_duration: Annotated[Retention | None, _RETENTION] = None
    kms_key_name: Annotated[str | None, _KMS_KEY] = None
    schema_settings: Annotated[SchemaSettingsSpec | None, _SCHEMA_SETTINGS] = None
    message_transforms: Annotated[list[MessageTransformSpec] | None, _TRANSFORMS] = None
    ingestion_data_source_settings: Annotated[IngestionSpec | None, _INGESTION] = None
    publishers: Annotated[Publishers | None, _PUBLISHERS] = None
    tags: Annotated[dict[str, str] | None, _TAGS] = None


class DefaultsDoc(_Shape, kw_only=True, frozen=True):
    """Values merged under every Topic in the same directory and below (topics override;
    labels are merged)."""

    api_version: Annotated[ApiVersion, _API_VERSION]
    kind: Annotated[Literal["Defaults"], _KIND]
    metadata: Annotated[DefaultsMetadata, _METADATA] = field(default_factory=DefaultsMetadata)
    spec: Annotated[DefaultsSpec, _SPEC] = field(default_factory=DefaultsSpec)


class OwnerMetadata(_Shape, kw_only=True, frozen=True):
    name: Annotated[str, Meta(
        description="The spec tree's owner identity, recorded on every topic it creates "
        "or adopts as the label `reconcile-owner`: 1-63 lowercase letters, digits, `_` "
        "and `-`. Without an `Owner` document the tree is owner `default`.",
    )]


class AcceptedFinding(_Shape, kw_only=True, frozen=True):
    """A finding the tree's owner knows of and accepts (docs/validate.md#accepted-findings)."""

    code: Annotated[str, Meta(
        description="The finding's code, e.g. `existing-cmek-required` (either name of a "
        "finding `validate` and `plan` name differently accepts both).",
    )]
    reason: Annotated[str, Meta(
        description="Why it is accepted, for the reader and the auditor; required, not "
        "empty.",
    )]
    until: Annotated[Day | None, Meta(
        description="The last day it is accepted, `YYYY-MM-DD` (UTC); after it the "
        "findings are reported again, with the acceptance. Omitted: no expiry.",
    )] = None
    topics: Annotated[list[str], Meta(
        description="The topics it covers, each `projects/PROJECT/topics/TOPIC` (TOPIC "
        "may use `*` and `?`); omitted: every finding of this code in the tree.",
    )] = []


class OwnerSpec(_Shape, kw_only=True, frozen=True):
    prune_subscribed: Annotated[list[str], Meta(
        description="Topics this tree no longer declares that `--prune` may delete even "
        "though subscriptions are attached (they are detached and stop receiving): each "
        "`projects/PROJECT/topics/TOPIC`, where TOPIC may use `*` and `?` to match "
        "several. Without an entry, a subscribed topic is pruned only with "
        "`--prune-subscribed`.",
    )] = []
    accepted_findings: Annotated[list[AcceptedFinding], Meta(
        description="Findings this tree accepts, each with its reason and maybe an expiry "
        "date: counted and listed, not reported as problems (an error never is accepted). "
        "A finding of one document can also be accepted by a comment in it, `# reconcile: "
        "accept CODE reason=\"...\" until=YYYY-MM-DD`.",
    )] = []


class OwnerDoc(_Shape, kw_only=True, frozen=True):
    """Who this spec tree is: declared once per tree (any file), never `default`.
    `--prune` needs it and deletes only topics that carry this owner, and a topic
    another tree owns is never taken over without `apply --adopt-from OWNER`
    (docs/ownership.md)."""

    api_version: Annotated[ApiVersion, _API_VERSION]
    kind: Annotated[Literal["Owner"], _KIND]
    metadata: Annotated[OwnerMetadata, _METADATA]
    spec: Annotated[OwnerSpec, _SPEC] = field(default_factory=OwnerSpec)


RECORD_BY_KIND: dict[str, type[_Shape]] = {
    "Topic": TopicDoc,
    "HedgingProfile": HedgingProfileDoc,
    "Defaults": DefaultsDoc,
    "Owner": OwnerDoc,
}
