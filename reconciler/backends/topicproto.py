"""The protobuf `Topic` <-> the managed shape (`reconciler.topic`): the only place that
reads or writes a topic's labels and storage-policy fields on the wire type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.pubsub_v1.types import Topic

from reconciler.backends.base import ObservedTopic
from reconciler.topic import StoragePolicy, TopicShape, request_shape

_POLICY_FIELD = "message_storage_policy"


def shape_of(topic: Topic) -> TopicShape:
    """Labels and the storage policy as set on the topic (unset stays None)."""
    policy: StoragePolicy | None = None
    if _POLICY_FIELD in topic:
        msp = topic.message_storage_policy
        policy = StoragePolicy.of(msp.allowed_persistence_regions, msp.enforce_in_transit)
    return TopicShape(dict(topic.labels), policy)


def topic_body(topic: Topic) -> dict[str, Any]:
    """The managed shape of a live topic as JSON (unmanaged fields are only in `raw`);
    an unset policy is None, a set one keeps its regions even when it lists none."""
    return shape_of(topic).body(topic.name)


def observed(topic: Topic) -> ObservedTopic:
    raw = MessageToDict(Topic.pb(topic))
    return ObservedTopic(name=topic.name, body=topic_body(topic), raw=raw)


def topic_to_proto(body: Mapping[str, Any]) -> Topic:
    """A plan request body as a Topic; a missing/None storage policy is left unset."""
    labels, policy = request_shape(body)
    topic = Topic(name=body["name"], labels=labels or {})
    if policy is not None:
        topic.message_storage_policy.allowed_persistence_regions = list(policy.regions)
        topic.message_storage_policy.enforce_in_transit = policy.enforce_in_transit
    return topic
