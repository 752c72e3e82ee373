"""The residency report: a plain, read-only model, and the one description of
`reconcile residency --format json`: reconciler/codec.py writes it, and
docs/residency.schema.json is generated from it by `python -m reconciler.residency.schema`,
as the plan's is from the plan model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from reconciler.codec import Record, always, doc, indented_json, to_data
from reconciler.frozen import EMPTY
from reconciler.plan.model import SourceJSON, SubscriptionKind

FORMAT_VERSION = "1.0"
Rule = Literal["live", "declared", "org"]
Strings = Sequence[str]


class RegionStore(Record, frozen=True):
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
        Sequence[Rule],
        doc("Which policies do not allow this region: the topic's live "
              "policy, its declared policy, the effective org policy (empty: allowed by "
              "all)."),
    ] = always(EMPTY)
    ages_out_within_seconds: Annotated[
        int | None,
        doc("When the last message stored here reaches the end of its "
              "retention, from now (the longest retention of the topic and its "
              "subscriptions, less the oldest message's age); null when unknown."),
    ] = always(None)


class PausedExport(Record, frozen=True):
    """An export or push subscription whose delivery is paused by in-transit
    restriction."""

    name: str
    kind: SubscriptionKind
    state: str


class TopicResidency(Record, frozen=True):
    """One declared topic: where its messages are, and what is outside the allowed."""

    address: str
    project: str
    topic: str
    exists: Annotated[bool, doc("Whether the topic exists live.")]
    regions: Annotated[
        Sequence[RegionStore], doc("Regions holding messages, by name.")
    ] = always(EMPTY)
    outside: Annotated[
        Strings, doc("Regions holding messages that some policy does not allow.")
    ] = always(EMPTY)
    ages_out_within_seconds: Annotated[
        int | None,
        doc("When the last message stored outside the allowed regions ages "
              "out, from now (null: nothing outside, or unknown)."),
    ] = always(None)
    paused_exports: Sequence[PausedExport] = always(EMPTY)
    subscriptions: Annotated[
        int | None, doc("Attached subscriptions; null: unknown.")
    ] = always(None)
    unknown: Annotated[
        Strings,
        doc("Why some figures are unknown (metrics, subscriptions); absent when none."),
    ] = EMPTY
    source: SourceJSON = always(None)

    @property
    def has_findings(self) -> bool:
        return bool(self.outside or self.paused_exports)

    @property
    def unchecked(self) -> bool:
        """It exists and a figure that could show a finding is unknown: messages may be
        stored outside the allowed regions (or an export paused) without it showing."""
        return self.exists and bool(self.unknown)


class ResidencyReport(Record, frozen=True):
    """`reconcile residency --format json`: every declared topic's stored messages by
    region, what is outside the allowed regions, and paused exports."""

    format_version: Annotated[
        str, doc("MAJOR.MINOR; readers ignore keys they do not know.")
    ] = always(FORMAT_VERSION)
    created_at: Annotated[str, doc("When the report was made (ISO 8601, UTC).")] = always("")
    target: Annotated[
        str, doc("Google Cloud, local (DIR) or emulator HOST:PORT.")
    ] = always("")
    topics: Sequence[TopicResidency] = always(EMPTY)
    notes: Annotated[
        Strings,
        doc("Per project: what could not be read and why (the role it needs)."),
    ] = always(EMPTY)

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

    def dumps(self) -> str:
        """`reconcile residency --format json`: the document, indented."""
        return indented_json(self)
