"""What `reconcile residency` reads of one project, in a bounded number of calls: one
ListTopics pager (with each topic's retention), one ListSubscriptions pager, the
effective org policy, and one ListTimeSeries per by-region gauge for the whole
project (six: unacknowledged and retained-acknowledged messages, bytes, oldest age).

    read_project(backend, project) -> ProjectReads
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.backends.base import ObservedTopic, OrgInputs, StoredMessages, SubscriptionListing
from reconciler.backends.gcp import GcpBackend
from reconciler.backends.topicproto import observed_pb


@dataclass(frozen=True)
class ProjectReads:
    project: str
    topics: dict[str, tuple[ObservedTopic, int]]  # name -> (topic, retention s; 0: none)
    org: OrgInputs
    subscriptions: SubscriptionListing
    stored: StoredMessages


def _with_retention(pb: Any) -> tuple[ObservedTopic, int]:
    retention = 0
    if pb.HasField("message_retention_duration"):
        retention = int(pb.message_retention_duration.seconds)
    return observed_pb(pb), retention


def read_project(backend: GcpBackend, project: str) -> ProjectReads:
    """Every read of one project (a BackendError when its topics or org policy cannot
    be read; subscriptions and metrics that cannot be read are said in the values)."""
    topics = backend.list_topics_as(project, _with_retention)
    org = backend.effective_policy(project)
    subscriptions = backend.list_subscriptions(project)
    stored = backend.stored(project, "topic", None, True)
    return ProjectReads(project, {t.name: (t, r) for t, r in topics}, org, subscriptions, stored)
