"""The protobuf `Topic` <-> the managed shape (`reconciler.topic`): the only place that
reads or writes a topic's labels and storage-policy fields on the wire type."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from typing import Any

from google.pubsub_v1.types import Topic

from reconciler.backends.base import ObservedTopic
from reconciler.topic import TopicShape, request_shape

_POLICY_FIELD = "message_storage_policy"
_RETENTION_FIELD = "message_retention_duration"


def shape_of(topic: Topic) -> TopicShape:
    """Labels and the storage policy as set on the topic (unset stays None)."""
    return observed(topic).shape


def topic_body(topic: Topic) -> dict[str, Any]:
    """The managed shape of a live topic as JSON (unmanaged fields are only in `raw`);
    an unset policy is None, a set one keeps its regions even when it lists none."""
    return observed(topic).body


def observed(topic: Topic) -> ObservedTopic:
    return observed_pb(Topic.pb(topic))


def observed_pb(pb: Any) -> ObservedTopic:
    """A live topic from its bare protobuf message (no proto-plus wrapper: a plan reads
    every live topic of every project)."""
    return ObservedTopic.from_row(topic_row(pb))


def topic_row(pb: Any) -> list[Any]:
    """A live topic's fields, read from its protobuf message as the plain values
    `ObservedTopic.from_row` takes (and the plan's read-ahead process sends as they
    are): the one place a live topic is read from the wire type. Its fingerprint is
    the sha256 of its deterministic serialization (every field, known to this client
    or not). Label keys and values and the regions are interned: those many topics
    share are then one string each, kept once in memory and sent once."""
    intern = sys.intern
    regions = None
    if pb.HasField(_POLICY_FIELD):
        msp = pb.message_storage_policy
        regions = [
            [intern(r) for r in sorted(set(msp.allowed_persistence_regions))],
            bool(msp.enforce_in_transit),
        ]
    retention = 0
    if pb.HasField(_RETENTION_FIELD):
        retention = int(pb.message_retention_duration.seconds)
    labels = {intern(k): intern(v) for k, v in sorted(pb.labels.items())}  # see ObservedTopic
    digest = hashlib.sha256(pb.SerializeToString(deterministic=True)).hexdigest()
    return [pb.name, labels, regions, digest, retention]


def topic_to_proto(body: Mapping[str, Any]) -> Topic:
    """A plan request body as a Topic; a missing/None storage policy is left unset."""
    labels, policy = request_shape(body)
    topic = Topic(name=body["name"], labels=labels or {})
    if policy is not None:
        topic.message_storage_policy.allowed_persistence_regions = list(policy.regions)
        topic.message_storage_policy.enforce_in_transit = policy.enforce_in_transit
    return topic
