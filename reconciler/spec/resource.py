"""A declared topic as the resource a custom constraint's condition sees: the topic
reconcile's CreateTopic would send, in the REST JSON shape
(`reconciler.orgpolicy.cel`), built in this one place for `validate` and `plan`.

    topic_resource(topic, owner, org_enforces_in_transit=False) -> dict
    managed_fields(topic) -> frozenset        top-level fields the spec decides

What is sent: `name`; `labels`, the declared ones plus reconcile's own
(`reconcile-managed`, `reconcile-owner`, and `reconcile-plan`, whose value apply
stamps: a placeholder of the same form stands in for it); `messageStoragePolicy`
only for explicit regions (`inherit` sends none: the service computes it), with
`enforceInTransit` present only when true (the wire has no false: the local
server's REST JSON leaves it out the same way). A field the spec does not manage
is not sent, so it is absent here; `managed_fields` says which are decided, so that
a condition reading another field is decided against the live topic by `plan`.
"""

from __future__ import annotations

from typing import Any

from reconciler.ownership import (
    MARKER_DIGITS,
    OWNER_LABEL,
    OWNERSHIP_LABEL,
    OWNERSHIP_VALUE,
    PLAN_LABEL,
)
from reconciler.spec.desired import DesiredTopic

PLAN_MARKER_PLACEHOLDER = "0" * MARKER_DIGITS
STORAGE = "messageStoragePolicy"
_ALWAYS = frozenset({"name", "labels"})
_WITH_STORAGE = _ALWAYS | {STORAGE}


def managed_fields(topic: DesiredTopic) -> frozenset[str]:
    """The resource's top-level fields whose value the spec decides (an omitted
    storage policy is left as it is: unmanaged)."""
    return _ALWAYS if topic.storage.mode == "unmanaged" else _WITH_STORAGE


def topic_resource(
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
    resource: dict[str, Any] = {"name": topic.address, "labels": labels}
    storage = topic.storage
    if storage.mode == "explicit":
        policy: dict[str, Any] = {"allowedPersistenceRegions": list(storage.regions)}
        if org_enforces_in_transit or storage.enforce_in_transit:
            policy["enforceInTransit"] = True
        resource[STORAGE] = policy
    return resource
