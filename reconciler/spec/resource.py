"""A declared topic as the resource a custom constraint's condition sees: the topic
reconcile's CreateTopic would send, given to the one builder of that resource
(`reconciler.orgpolicy.cel.resource.topic_resource`, which `plan` and the local server
use too).

    declared_resource(topic, owner, org_enforces_in_transit=False) -> dict   CREATE
    managed_fields(topic) -> frozenset        top-level fields the spec decides
    PLAN_MARKER_PLACEHOLDER                   the plan label's value as a condition sees it

What is sent: `name`; `labels`, the declared ones plus reconcile's own
(`reconcile-managed`, `reconcile-owner`, and `reconcile-plan`, whose value apply
stamps: a placeholder of the same form stands in for it); `messageStoragePolicy`
only for explicit regions (`inherit` sends none: the service computes it), with
`enforceInTransit` true when the spec or the organization's in-transit policy says
so; `messageRetentionDuration`, `kmsKeyName` and `schemaSettings` when declared. A
field the spec does not manage is not sent, so it is absent here; `managed_fields`
says which are decided (the storage policy only when its regions are explicit), so
that a condition reading another field is decided against the live topic by `plan`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from reconciler.orgpolicy.cel.resource import LABELS, NAME, STORAGE, topic_resource
from reconciler.ownership import (
    MARKER_DIGITS,
    OWNER_LABEL,
    OWNERSHIP_LABEL,
    OWNERSHIP_VALUE,
    PLAN_LABEL,
)
from reconciler.spec.desired import DesiredTopic
from reconciler.topic import StoragePolicy
from reconciler.topicfields import SETTINGS

PLAN_MARKER_PLACEHOLDER = "0" * MARKER_DIGITS
_ALWAYS = frozenset({NAME, LABELS})
# The desired topic's settings (the table's SETTINGS, in order) and their REST names.
_SETTINGS_OF = attrgetter(*(entry.desired for entry in SETTINGS))
_SETTING_NAMES = tuple(entry.rest for entry in SETTINGS)


def managed_fields(topic: DesiredTopic) -> frozenset[str]:
    """The resource's top-level fields whose value the spec decides (an omitted
    field, the storage policy included, is left as it is: unmanaged)."""
    fields = set(_ALWAYS)
    # `inherit` sends no policy, and the service computes one: what a topic that
    # exists has is the live one, so only plan can judge a condition that reads it.
    if topic.storage.mode == "explicit":
        fields.add(STORAGE)
    values = _SETTINGS_OF(topic)
    fields.update(n for n, v in zip(_SETTING_NAMES, values, strict=True) if v is not None)
    return frozenset(fields)


def declared_resource(
    topic: DesiredTopic, owner: str, *, org_enforces_in_transit: bool = False
) -> dict[str, Any]:
    """The CreateTopic resource reconcile would send for `topic` (tree owner
    `owner`); `org_enforces_in_transit`: the project's effective
    pubsub.enforceInTransitRegions, which makes an explicit policy's
    enforceInTransit true whatever the spec says."""
    labels = dict(topic.labels)
    labels[OWNERSHIP_LABEL] = OWNERSHIP_VALUE
    labels[OWNER_LABEL] = owner
    labels[PLAN_LABEL] = PLAN_MARKER_PLACEHOLDER
    storage = topic.storage
    policy = None
    if storage.mode == "explicit":
        policy = StoragePolicy(
            storage.regions, org_enforces_in_transit or bool(storage.enforce_in_transit)
        )
    return topic_resource(topic.address, labels, policy, _SETTINGS_OF(topic))
