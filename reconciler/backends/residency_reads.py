"""What `reconcile residency` reads of one project, in a bounded number of calls: one
ListTopics pager (with each topic's retention), one ListSubscriptions pager, the
effective org policy, and ONE PromQL query of the by-region gauges for the whole
project (backends/stored.py): unacknowledged messages, bytes and oldest age, and in
the same query those of retained acknowledged messages only where something retains
them (a subscription with retain_acked_messages, or a topic with message retention);
no query for a project without a subscription or topic retention, where nothing is
stored; and where a topic gauge shows something stored, one more query of the
subscription gauges (which subscription holds the copies).
On a large tree the read-ahead's second process makes these reads while this one
validates the specs (plan/readahead.py: it asks `gauge_query` the same question);
this module imports no client library.

    read_project(reads, project) -> ProjectReads
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reconciler.backends.base import (
    GaugeQuery,
    ObservedTopic,
    OrgInputs,
    Reads,
    StoredMessages,
    SubscriptionListing,
)


@dataclass(frozen=True)
class ProjectReads:
    project: str
    topics: dict[str, ObservedTopic]  # name -> topic (with its retention)
    org: OrgInputs
    subscriptions: SubscriptionListing
    stored: StoredMessages
    # The subscriptions' own gauges (their backlogs, per region): read when a topic
    # gauge shows something stored, else None (nothing to break down).
    backlogs: StoredMessages | None = None


def read_project(reads: Reads, project: str) -> ProjectReads:
    """Every read of one project (a BackendError when its topics or org policy cannot
    be read; subscriptions and metrics that cannot be read are said in the values).
    `reads`: the target, or the read-ahead's answer (plan/readahead.py), which read the
    gauges beside the validation already."""
    topics = reads.list_topics(project)
    org = reads.effective_policy(project)
    subscriptions = reads.list_subscriptions(project)
    query = gauge_query(project, (t.retention_seconds for t in topics), subscriptions)
    stored = StoredMessages({}, {}) if query is None else reads.stored([query])[0]
    backlogs = None
    if query is not None and stored.unavailable is None and _holds_any(stored):
        # Which subscription holds the copies a topic gauge counts: one more query,
        # only where something is stored.
        [backlogs] = reads.stored([GaugeQuery(project, "subscription", None, query.retained)])
    return ProjectReads(project, {t.name: t for t in topics}, org, subscriptions, stored,
                        backlogs)


def _holds_any(stored: StoredMessages) -> bool:
    return any(r.messages for by_region in (*stored.unacked.values(), *stored.retained.values())
               for r in by_region.values())


def gauges_needed(retentions: Iterable[int] | None, subscriptions: SubscriptionListing) -> str:
    """Which by-region gauges can show anything: "none" (no subscription and no topic
    retention: nothing is stored), "unacked", or "all" (something retains acknowledged
    messages; also when the subscriptions or retentions are unknown)."""
    if subscriptions.unavailable is not None or retentions is None:
        return "all"
    retained_by_topic = any(r > 0 for r in retentions)
    if retained_by_topic or any(s.retain_acked for s in subscriptions.subscriptions):
        return "all"
    return "unacked" if subscriptions.subscriptions else "none"


def gauge_query(
    project: str, retentions: Iterable[int] | None, subscriptions: SubscriptionListing
) -> GaugeQuery | None:
    """The project's topic gauges that can show anything (`gauges_needed`), every topic
    at once; None: none can."""
    needed = gauges_needed(retentions, subscriptions)
    if needed == "none":
        return None
    return GaugeQuery(project, "topic", None, needed == "all")
