"""Pydantic models of the spec documents: structure and types only.

Semantic rules (regions, label rules, hedging ranges, org policy) live in
`reconciler.spec.checks`, which sees the whole tree and reports every problem with
its position; the models only make sure the shapes are right.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from reconciler.spec.durations import DurationError, DurationRangeError, parse_duration_ms

API_VERSION = "reconcile.pubsub/v1"
KINDS = ("Topic", "HedgingProfile", "Defaults", "Owner")


def _duration(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, str):
        raise PydanticCustomError(
            "duration", "a duration must be text with a unit, e.g. 500ms, 5s or 1m"
        )
    try:
        return parse_duration_ms(value)
    except DurationError as exc:
        raise PydanticCustomError("duration", str(exc)) from exc
    except DurationRangeError as exc:
        raise PydanticCustomError("duration_range", str(exc)) from exc


def _number(value: Any) -> Any:
    """A whole number too large for a float is out of range (infinite), not a type
    error: the range check then reports it as written."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return float("inf") if value > 0 else float("-inf")
    return value


DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
DurationMs = Annotated[
    int,
    BeforeValidator(_duration),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A duration with a unit: 500ms, 5s, 1m, 1m30s.",
        }
    ),
]
def _whole(value: Any) -> Any:
    """JSON Schema's integer is any number without a fractional part (`100.0`, `1e2`);
    one too large for a float (`1e400`) is out of range, not of another type."""
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        if math.isinf(value):
            return 10**309 if value > 0 else -(10**309)
    return value


Number = Annotated[float, BeforeValidator(_number)]
Whole = Annotated[int, BeforeValidator(_whole)]
ApiVersion = Annotated[str, WithJsonSchema({"const": API_VERSION, "type": "string"})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


# What each field means: its `description` is the one source of docs/spec-reference.md
# and of the published schema's descriptions (a field without one has an empty cell).
_API_VERSION = f"Always `{API_VERSION}`."
_KIND = "The document kind."
_METADATA = "Which object the document is about."
_SPEC = "The desired state."
_LABELS = (
    "Managed label keys and values; labels others set on the topic are kept. Keys "
    "starting with `reconcile-` are reserved."
)
_STORAGE = (
    "Omitted: unmanaged (never touched). `inherit`: follow the effective org policy "
    "(recompute). An object: these regions exactly."
)
_RETENTION = (
    "How long the topic keeps every published message, acknowledged or not: 10 minutes "
    "to 31 days, written with a unit (`2d`, `48h`, `1h30m`, `600s`; compared in the "
    "service's seconds, so `2d` equals `172800s`). Omitted: unmanaged (never sent, never "
    "cleared)."
)
_KMS_KEY = (
    "The Cloud KMS key that protects the topic's messages (CMEK): "
    "`projects/P/locations/L/keyRings/R/cryptoKeys/K`. Omitted: unmanaged."
)
_SCHEMA_SETTINGS = (
    "The schema published messages are validated against. Omitted: unmanaged (a schema "
    "set by another tool is kept)."
)
_PUBLISHERS = (
    "Where and how the topic's publishers run; checked against the storage policy and "
    "recorded on the topic as `reconcile-` labels."
)


class StoragePolicySpec(_Model):
    allowed_persistence_regions: list[str] = Field(
        alias="allowedPersistenceRegions",
        description="Region names only (no zones, multi-regions, dual-regions, exclusions "
        "or value groups); a set, order is not a diff; never empty; each must be allowed by "
        "the org policy.",
    )
    enforce_in_transit: bool | None = Field(
        default=None, alias="enforceInTransit",
        description="Reject Publish/Pull received outside the allowed regions; absent and "
        "`false` are equal.",
    )


class HedgingProfileSpec(_Model):
    hedge_delay: DurationMs | None = Field(
        default=None, alias="hedgeDelay",
        description="Send a hedged attempt when one has not completed within this delay.",
    )
    max_tokens: Whole | None = Field(
        default=None, alias="maxTokens",
        description="Token bucket size: at most this many hedged attempts in a burst.",
    )
    refill_ratio: Number | None = Field(
        default=None, alias="refillRatio",
        description="Tokens refilled per successful publish, 0.001 to 0.2. Validation "
        "accepts six decimals (the labels carry six); the hedged publisher counts "
        "thousandths of a token and rounds to three: write at most three.",
    )


class Retry(_Model):
    initial_rpc_timeout: DurationMs | None = Field(
        default=None, alias="initialRpcTimeout",
        description="Initial RPC timeout; must exceed the hedge delay.",
    )
    total_timeout: DurationMs | None = Field(
        default=None, alias="totalTimeout",
        description="Total timeout; must exceed the hedge delay.",
    )


class Publishers(_Model):
    regions: list[str] = Field(
        default_factory=list, description="Regions the publishers run in."
    )
    endpoint: str | None = Field(
        default=None,
        description="Region of the locational endpoint publishers use "
        "(REGION-pubsub.googleapis.com), e.g. us-east1.",
    )
    message_ordering: bool = Field(
        default=False, alias="messageOrdering",
        description="Publishers use ordering keys (cannot be combined with hedging).",
    )
    retry: Retry | None = Field(
        default=None, description="The publishers' retry timeouts (client defaults 5s / 60s)."
    )
    hedging: str | HedgingProfileSpec | None = Field(
        default=None,
        description="A `HedgingProfile` name, or an inline profile object (fields as in "
        "`HedgingProfile.spec`).",
    )


Retention = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^([0-9]+(\.[0-9]+)?(d|h|m|s|ms))+$",
            "description": "A duration with a unit: 2d, 48h, 1h30m, 600s, 600.5s.",
        }
    ),
]


class SchemaSettingsSpec(_Model):
    schema_: str = Field(
        alias="schema",
        description="`projects/P/schemas/S` (the schema may be in another project); "
        "it must exist when the plan is applied.",
    )
    encoding: Literal["JSON", "BINARY"] = Field(
        description="How published messages are encoded: `JSON` or `BINARY`."
    )
    first_revision_id: str | None = Field(
        default=None, alias="firstRevisionId",
        description="The oldest schema revision messages may match; omitted: no lower bound.",
    )
    last_revision_id: str | None = Field(
        default=None, alias="lastRevisionId",
        description="The newest schema revision messages may match; omitted: no upper bound.",
    )


class TopicMetadata(_Model):
    project: str | None = Field(
        default=None, description="Google Cloud project ID; may come from a `Defaults` document."
    )
    name: str = Field(
        description="Topic ID (3-255 characters, starts with a letter, not `goog`)."
    )


class TopicSpec(_Model):
    labels: dict[str, str] = Field(default_factory=dict, description=_LABELS)
    message_storage_policy: Literal["inherit"] | StoragePolicySpec | None = Field(
        default=None, alias="messageStoragePolicy", description=_STORAGE
    )
    message_retention_duration: Retention | None = Field(
        default=None, alias="messageRetentionDuration", description=_RETENTION
    )
    kms_key_name: str | None = Field(default=None, alias="kmsKeyName", description=_KMS_KEY)
    schema_settings: SchemaSettingsSpec | None = Field(
        default=None, alias="schemaSettings", description=_SCHEMA_SETTINGS
    )
    publishers: Publishers | None = Field(default=None, description=_PUBLISHERS)


class TopicDoc(_Model):
    """One Pub/Sub topic: its labels, message storage policy and publishers."""

    api_version: ApiVersion = Field(alias="apiVersion", description=_API_VERSION)
    kind: Literal["Topic"] = Field(description=_KIND)
    metadata: TopicMetadata = Field(description=_METADATA)
    spec: TopicSpec = Field(default_factory=TopicSpec, description=_SPEC)


class ProfileMetadata(_Model):
    name: str = Field(description="Profile name, referenced by `publishers.hedging`.")


class HedgingProfileDoc(_Model):
    """A named publish-hedging profile that topics refer to."""

    api_version: ApiVersion = Field(alias="apiVersion", description=_API_VERSION)
    kind: Literal["HedgingProfile"] = Field(description=_KIND)
    metadata: ProfileMetadata = Field(description=_METADATA)
    spec: HedgingProfileSpec = Field(default_factory=HedgingProfileSpec, description=_SPEC)


class DefaultsMetadata(_Model):
    name: str | None = Field(default=None, description="Optional name, for readers.")


class DefaultsSpec(_Model):
    """Applies to every Topic in the same directory and below; topics override."""

    project: str | None = Field(
        default=None,
        description="Project for every Topic in this directory and below that does not "
        "name one.",
    )
    labels: dict[str, str] = Field(default_factory=dict, description=_LABELS)
    message_storage_policy: Literal["inherit"] | StoragePolicySpec | None = Field(
        default=None, alias="messageStoragePolicy", description=_STORAGE
    )
    message_retention_duration: Retention | None = Field(
        default=None, alias="messageRetentionDuration", description=_RETENTION
    )
    kms_key_name: str | None = Field(default=None, alias="kmsKeyName", description=_KMS_KEY)
    schema_settings: SchemaSettingsSpec | None = Field(
        default=None, alias="schemaSettings", description=_SCHEMA_SETTINGS
    )
    publishers: Publishers | None = Field(default=None, description=_PUBLISHERS)


class DefaultsDoc(_Model):
    """Values merged under every Topic in the same directory and below (topics override;
    labels are merged)."""

    api_version: ApiVersion = Field(alias="apiVersion", description=_API_VERSION)
    kind: Literal["Defaults"] = Field(description=_KIND)
    metadata: DefaultsMetadata = Field(default_factory=DefaultsMetadata, description=_METADATA)
    spec: DefaultsSpec = Field(default_factory=DefaultsSpec, description=_SPEC)


class OwnerMetadata(_Model):
    name: str = Field(
        description="The spec tree's owner identity, recorded on every topic it creates "
        "or adopts as the label `reconcile-owner`: 1-63 lowercase letters, digits, `_` "
        "and `-`. Without an `Owner` document the tree is owner `default`.",
    )


class OwnerSpec(_Model):
    prune_subscribed: list[str] = Field(
        default_factory=list,
        alias="pruneSubscribed",
        description="Topics this tree no longer declares that `--prune` may delete even "
        "though subscriptions are attached (they are detached and stop receiving): each "
        "`projects/PROJECT/topics/TOPIC`, where TOPIC may use `*` and `?` to match "
        "several. Without an entry, a subscribed topic is pruned only with "
        "`--prune-subscribed`.",
    )


class OwnerDoc(_Model):
    """Who this spec tree is: declared once per tree (any file), never `default`.
    `--prune` needs it and deletes only topics that carry this owner, and a topic
    another tree owns is never taken over without `apply --adopt-from OWNER`
    (docs/ownership.md)."""

    api_version: ApiVersion = Field(alias="apiVersion", description=_API_VERSION)
    kind: Literal["Owner"] = Field(description=_KIND)
    metadata: OwnerMetadata = Field(description=_METADATA)
    spec: OwnerSpec = Field(default_factory=OwnerSpec, description=_SPEC)


MODEL_BY_KIND: dict[str, type[_Model]] = {
    "Topic": TopicDoc,
    "HedgingProfile": HedgingProfileDoc,
    "Defaults": DefaultsDoc,
    "Owner": OwnerDoc,
}
