"""The residency report: a plain, read-only model, and the one description of
`reconcile residency --format json`: reconciler/codec.py writes it, and
docs/residency.schema.json is generated from it by `python -m reconciler.residency.schema`,
as the plan's is from the plan model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from reconciler.codec import Record, always, doc, indented_json, to_data
from reconciler.frozen import EMPTY
from reconciler.plan.model import SubscriptionKind
from reconciler.plan.topicstate import SourceJSON

FORMAT_VERSION = "1.1"
Rule = Literal["live", "declared", "org"]
Strings = Sequence[str]


class SubscriptionBacklog(Record, frozen=True):
    """One subscription's copies in one region, by its own by-region gauges."""

    subscription: Annotated[str, doc("The subscription's ID.")]
    unacked_messages: int
    unacked_bytes: int | None
    oldest_unacked_age_seconds: int | None
    retained_acked_messages: int = always(0)
    retained_acked_bytes: int | None = always(None)
    oldest_retained_acked_age_seconds: int | None = always(None)


class RegionStore(Record, frozen=True):
    """What the by-region gauges say is stored in one region for the topic, and whether
    that region is allowed. The topic's figures are its gauges: they add up its
    subscriptions' backlogs, so they count copies (a message two subscriptions hold
    counts twice), not distinct messages."""

    region: str
    unacked_messages: Annotated[
        int, doc("The topic gauge: unacknowledged copies summed over its subscriptions' "
                 "backlogs, not distinct messages.")]
    unacked_bytes: int | None
    oldest_unacked_age_seconds: int | None
    retained_acked_messages: Annotated[
        int, doc("The topic gauge: retained acknowledged copies (subscriptions with "
                 "retain_acked_messages, the topic's own retention).")]
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
    backlogs: Annotated[
        Sequence[SubscriptionBacklog] | None,
        doc("Which subscriptions hold the copies the topic's figures count, by their own "
            "gauges (null: unknown, the subscription gauges could not be read)."),
    ] = always(None)
    distinct_messages_min: Annotated[
        int | None,
        doc("The fewest distinct unacknowledged messages the backlogs can hold (the "
            "largest backlog); null: unknown."),
    ] = always(None)
    distinct_messages_max: Annotated[
        int | None,
        doc("The most (their sum); equal to the minimum only when it is exact. Which "
            "messages two backlogs share is not in the metrics."),
    ] = always(None)
    clears: Annotated[
        str | None,
        doc("For a region some policy does not allow: what clears it, as one line "
            "(acknowledge, seek or detach the named subscriptions, or the time "
            "retention removes the last message)."),
    ] = always(None)


class PausedExport(Record, frozen=True):
    """An export or push subscription whose delivery is paused by in-transit
    restriction."""

    name: str
    kind: SubscriptionKind
    state: str


class DataPathRecord(Record, frozen=True):
    """One way message data leaves or enters the topic besides its stored copies
    (reconciler/messagepaths.py): a model an AI Inference transform sends each
    message to, the ingestion source it takes messages from, an export that writes
    them out."""

    kind: Annotated[
        Literal["model", "source", "export"],
        doc("model: an enabled AI Inference transform's Vertex AI model; source: the "
            "ingestion source; export: a BigQuery or Cloud Storage subscription."),
    ]
    what: Annotated[str, doc("The transform, the source's kind, or the export's kind.")]
    location: Annotated[
        str | None,
        doc("Where, when its name says it (the model's location; an AWS source's "
            "region, as aws:REGION); null: not known (an export's destination location "
            "is not in the Pub/Sub API)."),
    ]
    detail: Annotated[
        str, doc("The model endpoint, what names the source (never a credential), or the "
                 "export subscription.")]
    state: Annotated[
        str | None, doc("The service's state of the source or export (e.g. ACTIVE, "
                        "VERTEX_AI_LOCATION_RESTRICTION, CONFLICTING_REGION_CONSTRAINTS).")
    ] = None


class TopicResidency(Record, frozen=True):
    """One topic: where its messages are, and what is outside the allowed."""

    address: str
    project: str
    topic: str
    exists: Annotated[bool, doc("Whether the topic exists live.")]
    declared: Annotated[
        bool, doc("Whether a spec declares it (false: a live topic of a managed project "
                  "that no spec declares, reported with --all-live).")
    ] = always(True)
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
    paths: Annotated[
        Sequence[DataPathRecord],
        doc("Where message data goes and comes from besides the stored copies (models, "
            "the ingestion source, exports); absent when none."),
    ] = EMPTY

    @property
    def has_findings(self) -> bool:
        return bool(self.outside or self.paused_exports)

    @property
    def unchecked(self) -> bool:
        """It exists and a figure that could show a finding is unknown: messages may be
        stored outside the allowed regions (or an export paused) without it showing."""
        return self.exists and bool(self.unknown)


class ResidencyReport(Record, frozen=True):
    """`reconcile residency --format json`: every declared topic's (with --all-live,
    every live topic's of the managed projects) stored messages by region, what is
    outside the allowed regions, and paused exports."""

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
    undeclared: Annotated[
        Strings,
        doc("Live topics of the managed projects that no spec declares (reported in "
            "`topics` with --all-live, else only named here)."),
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
