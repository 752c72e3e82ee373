"""What `reconcile residency` reads of one project, in a bounded number of calls: one
ListTopics pager (with each topic's retention), one ListSubscriptions pager, the
effective org policy, and ONE PromQL query of the by-region gauges for the whole
project (backends/stored.py): unacknowledged messages, bytes and oldest age, and in
the same query those of retained acknowledged messages only where something retains
them (a subscription with retain_acked_messages, or a topic with message retention);
no query for a project without a subscription or topic retention, where nothing is
stored.
On a large tree the read-ahead's second process makes these reads while this one
validates the specs (plan/readahead.py); this module imports no client library.

    read_project(backend, project) -> ProjectReads
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reconciler.backends.base import ObservedTopic, OrgInputs, StoredMessages, SubscriptionListing


@dataclass(frozen=True)
class ProjectReads:
    project: str
    topics: dict[str, tuple[ObservedTopic, int]]  # name -> (topic, retention s; 0: none)
    org: OrgInputs
    subscriptions: SubscriptionListing
    stored: StoredMessages


def retention_of(pb: Any) -> int:
    """A bare protobuf topic's message retention, seconds (0: none set)."""
    if pb.HasField("message_retention_duration"):
        return int(pb.message_retention_duration.seconds)
    return 0


def _with_retention(pb: Any) -> tuple[ObservedTopic, int]:
    from reconciler.backends.topicproto import observed_pb  # protobuf: with the backend

    return observed_pb(pb), retention_of(pb)


def with_retention_row(pb: Any) -> list[Any]:
    """[topic row, retention]: what the read-ahead sends for residency."""
    from reconciler.backends.topicproto import topic_row_pb

    return [topic_row_pb(pb), retention_of(pb)]


def read_project(backend: Any, project: str) -> ProjectReads:
    """Every read of one project (a BackendError when its topics or org policy cannot
    be read; subscriptions and metrics that cannot be read are said in the values).
    `backend`: a GcpBackend, or the read-ahead's answer (plan/readahead.py), which has
    the topics with their retention already."""
    served = getattr(backend, "list_topics_with_retention", None)
    if served is not None:
        topics = served(project)
    else:
        topics = backend.list_topics_as(project, _with_retention)
    org = backend.effective_policy(project)
    subscriptions = backend.list_subscriptions(project)
    stored = stored_as_needed(backend, project, (r for _, r in topics), subscriptions)
    return ProjectReads(project, {t.name: (t, r) for t, r in topics}, org, subscriptions, stored)


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


def stored_as_needed(
    backend: Any, project: str, retentions: Iterable[int] | None,
    subscriptions: SubscriptionListing,
) -> StoredMessages:
    """The project's topic gauges that can show anything (`gauges_needed`)."""
    needed = gauges_needed(retentions, subscriptions)
    if needed == "none":
        return StoredMessages({}, {})
    found: StoredMessages = backend.stored(project, "topic", None, needed == "all")
    return found
