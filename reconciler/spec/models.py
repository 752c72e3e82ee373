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
KINDS = ("Topic", "HedgingProfile", "Defaults")


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


class StoragePolicy(_Model):
    allowed_persistence_regions: list[str] = Field(alias="allowedPersistenceRegions")
    enforce_in_transit: bool | None = Field(default=None, alias="enforceInTransit")


class HedgingSettings(_Model):
    hedge_delay: DurationMs | None = Field(default=None, alias="hedgeDelay")
    max_tokens: Whole | None = Field(default=None, alias="maxTokens")
    refill_ratio: Number | None = Field(default=None, alias="refillRatio")


class Retry(_Model):
    initial_rpc_timeout: DurationMs | None = Field(default=None, alias="initialRpcTimeout")
    total_timeout: DurationMs | None = Field(default=None, alias="totalTimeout")


class Publishers(_Model):
    regions: list[str] = Field(default_factory=list)
    endpoint: str | None = Field(
        default=None,
        description="Region of the locational endpoint publishers use "
        "(REGION-pubsub.googleapis.com), e.g. us-east1.",
    )
    message_ordering: bool = Field(default=False, alias="messageOrdering")
    retry: Retry | None = None
    hedging: str | HedgingSettings | None = None


class TopicMetadata(_Model):
    project: str | None = None  # may come from a Defaults document
    name: str


class TopicSpec(_Model):
    labels: dict[str, str] = Field(default_factory=dict)
    message_storage_policy: Literal["inherit"] | StoragePolicy | None = Field(
        default=None, alias="messageStoragePolicy"
    )
    publishers: Publishers | None = None


class TopicDoc(_Model):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Topic"]
    metadata: TopicMetadata
    spec: TopicSpec = Field(default_factory=TopicSpec)


class ProfileMetadata(_Model):
    name: str


class HedgingProfileDoc(_Model):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["HedgingProfile"]
    metadata: ProfileMetadata
    spec: HedgingSettings = Field(default_factory=HedgingSettings)


class DefaultsMetadata(_Model):
    name: str | None = None


class DefaultsSpec(_Model):
    """Applies to every Topic in the same directory and below; topics override."""

    project: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    message_storage_policy: Literal["inherit"] | StoragePolicy | None = Field(
        default=None, alias="messageStoragePolicy"
    )
    publishers: Publishers | None = None


class DefaultsDoc(_Model):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Defaults"]
    metadata: DefaultsMetadata = Field(default_factory=DefaultsMetadata)
    spec: DefaultsSpec = Field(default_factory=DefaultsSpec)


MODEL_BY_KIND: dict[str, type[_Model]] = {
    "Topic": TopicDoc,
    "HedgingProfile": HedgingProfileDoc,
    "Defaults": DefaultsDoc,
}
