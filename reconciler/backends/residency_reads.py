"""What `reconcile residency` reads of one project, in a bounded number of calls: one
ListTopics pager (with each topic's retention), one ListSubscriptions pager, the
effective org policy, and one ListTimeSeries per by-region gauge for the whole
project (six: unacknowledged and retained-acknowledged messages, bytes, oldest age).
On a large tree the read-ahead's second process makes these reads while this one
validates the specs (plan/readahead.py); this module imports no client library.

    read_project(backend, project) -> ProjectReads
"""

from __future__ import annotations

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
    stored = backend.stored(project, "topic", None, True)
    return ProjectReads(project, {t.name: (t, r) for t, r in topics}, org, subscriptions, stored)
