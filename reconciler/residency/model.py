"""The residency report: a plain, read-only model, and the one description of
`reconcile residency --format json`: reconciler/codec.py writes it, and
docs/residency.schema.json is generated from it by `python -m reconciler.residency.schema`,
as the plan's is from the plan model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from reconciler.codec import As, Items, Record, is_empty, to_data
from reconciler.frozen import EMPTY
from reconciler.plan.model import Source, SubscriptionKind

FORMAT_VERSION = "1.0"
Rule = Literal["live", "declared", "org"]
Strings = Items[str]


@dataclass(frozen=True)
class RegionStore(Record):
    """What the by-region gauges say is stored in one region for the topic (across its
    subscriptions), and whether that region is allowed."""

    region: str
    unacked_messages: int
    unacked_bytes: int | None
    oldest_unacked_age_seconds: int | None
    retained_acked_messages: int
    retained_acked_bytes: int | None
    oldest_retained_acked_age_seconds: int | None
    not_allowed_by: Annotated[
        Items[Rule],
        Field(description="Which policies do not allow this region: the topic's live "
              "policy, its declared policy, the effective org policy (empty: allowed by "
              "all)."),
    ] = EMPTY
    ages_out_within_seconds: Annotated[
        int | None,
        Field(description="When the last message stored here reaches the end of its "
              "retention, from now (the longest retention of the topic and its "
              "subscriptions, less the oldest message's age); null when unknown."),
    ] = None


@dataclass(frozen=True)
class PausedExport(Record):
    """An export or push subscription whose delivery is paused by in-transit
    restriction."""

    name: str
    kind: SubscriptionKind
    state: str


@dataclass(frozen=True)
class TopicResidency(Record):
    """One declared topic: where its messages are, and what is outside the allowed."""

    address: str
    project: str
    topic: str
    exists: Annotated[bool, Field(description="Whether the topic exists live.")]
    regions: Annotated[
        Items[RegionStore], Field(description="Regions holding messages, by name.")
    ] = EMPTY
    outside: Annotated[
        Strings, Field(description="Regions holding messages that some policy does not allow.")
    ] = EMPTY
    ages_out_within_seconds: Annotated[
        int | None,
        Field(description="When the last message stored outside the allowed regions ages "
              "out, from now (null: nothing outside, or unknown)."),
    ] = None
    paused_exports: Items[PausedExport] = EMPTY
    subscriptions: Annotated[
        int | None, Field(description="Attached subscriptions; null: unknown.")
    ] = None
    unknown: Annotated[
        Strings,
        Field(exclude_if=is_empty,
              description="Why some figures are unknown (metrics, subscriptions)."),
    ] = EMPTY
    source: Annotated[Mapping[str, Any] | None, As(Source | None)] = None

    @property
    def has_findings(self) -> bool:
        return bool(self.outside or self.paused_exports)

    @property
    def unchecked(self) -> bool:
        """It exists and a figure that could show a finding is unknown: messages may be
        stored outside the allowed regions (or an export paused) without it showing."""
        return self.exists and bool(self.unknown)


@dataclass(frozen=True)
class ResidencyReport(Record):
    """`reconcile residency --format json`: every declared topic's stored messages by
    region, what is outside the allowed regions, and paused exports."""

    __pydantic_config__ = ConfigDict(json_schema_serialization_defaults_required=True)

    format_version: Annotated[
        str, Field(description="MAJOR.MINOR; readers ignore keys they do not know.")
    ] = FORMAT_VERSION
    created_at: Annotated[str, Field(description="When the report was made (ISO 8601, UTC).")] = ""
    target: Annotated[
        str, Field(description="Google Cloud, local (DIR) or emulator HOST:PORT.")
    ] = ""
    topics: Items[TopicResidency] = EMPTY
    notes: Annotated[
        Strings,
        Field(description="Per project: what could not be read and why (the role it needs)."),
    ] = EMPTY

    @property
    def has_findings(self) -> bool:
        return any(t.has_findings for t in self.topics)

    @property
    def unchecked(self) -> int:
        """How many topics could not be checked (`TopicResidency.unchecked`)."""
        return sum(1 for t in self.topics if t.unchecked)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_data(self)
        return data
