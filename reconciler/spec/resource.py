"""A declared topic as the resource a custom constraint's condition sees: the topic
reconcile's CreateTopic would send, in the REST JSON shape
(`reconciler.orgpolicy.cel`), built in this one place for `validate` and `plan`.

    topic_resource(topic, owner, org_enforces_in_transit=False) -> dict   CREATE
    settings_resource(*values) -> dict   the retention, key and schema settings
    live_resource(name, labels, policy, unmanaged, settings) -> dict      a live topic
    updated_resource(before, labels, policy, sets_policy=...) -> dict     UPDATE
    managed_fields(topic) -> frozenset        top-level fields the spec decides

What is sent: `name`; `labels`, the declared ones plus reconcile's own
(`reconcile-managed`, `reconcile-owner`, and `reconcile-plan`, whose value apply
stamps: a placeholder of the same form stands in for it); `messageStoragePolicy`
only for explicit regions (`inherit` sends none: the service computes it), with
`enforceInTransit` present only when true (the wire has no false: the local
server's REST JSON leaves it out the same way); `messageRetentionDuration`,
`kmsKeyName` and `schemaSettings` when declared, as the REST JSON writes them (a
revision id only when set: proto3 JSON leaves empty strings out); the names and the
conversions are the table's (reconciler/topicfields.py). A field the spec does not manage
is not sent, so it is absent here; `managed_fields` says which are decided, so that
a condition reading another field is decided against the live topic by `plan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import Any

from reconciler.ownership import (
    MARKER_DIGITS,
    OWNER_LABEL,
    OWNERSHIP_LABEL,
    OWNERSHIP_VALUE,
    PLAN_LABEL,
)
from reconciler.spec.desired import DesiredTopic
from reconciler.topic import Settings
from reconciler.topicfields import LABELS, SENT, SETTINGS, STORAGE_POLICY, UNMANAGED_REST
from reconciler.topicvalues import rest_policy

PLAN_MARKER_PLACEHOLDER = "0" * MARKER_DIGITS
STORAGE = STORAGE_POLICY.rest
_ALWAYS = frozenset({"name", LABELS.rest})
# What a plan reads of a live topic (the rest of it is not read: `live_resource`).
LIVE_FIELDS = _ALWAYS | {f.rest for f in SENT} | set(UNMANAGED_REST)


def managed_fields(topic: DesiredTopic) -> frozenset[str]:
    """The resource's top-level fields whose value the spec decides (an omitted
    field, the storage policy included, is left as it is: unmanaged)."""
    return _managed_fields(topic.storage.mode != "unmanaged", _DECLARED(topic))


@lru_cache(maxsize=1024)  # a tree repeats a few combinations
def _managed_fields(sets_policy: bool, declared: Settings) -> frozenset[str]:
    fields = set(_ALWAYS)
    if sets_policy:
        fields.add(STORAGE)
    for entry, value in zip(SETTINGS, declared, strict=True):
        if value is not None:
            fields.add(entry.rest)
    return frozenset(fields)


_DECLARED = attrgetter(*(entry.desired for entry in SETTINGS))
_UNSET: Settings = (None,) * len(SETTINGS)


def declared_settings(topic: DesiredTopic) -> Settings:
    """The topic's retention, key and schema settings, one per entry of
    topicfields.SETTINGS (None: not declared)."""
    values: Settings = _DECLARED(topic)
    return values


def settings_resource(*values: Any) -> dict[str, Any]:
    """The retention, key and schema settings that are set (`values`: one per entry of
    topicfields.SETTINGS), as a condition sees them (the REST JSON's names; a field
    not set is absent)."""
    out: dict[str, Any] = {}
    if values != _UNSET:  # most topics: none of them set
        _put_settings(out, values)
    return out


def _put_settings(resource: dict[str, Any], values: Settings) -> None:
    for entry, value in zip(SETTINGS, values, strict=True):
        if value is not None:
            resource[entry.rest] = entry.to_rest(value)


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
    resource: dict[str, Any] = {"name": topic.address, LABELS.rest: labels}
    storage = topic.storage
    if storage.mode == "explicit":
        resource[STORAGE] = policy_resource(
            storage.regions, org_enforces_in_transit or bool(storage.enforce_in_transit)
        )
    declared = _DECLARED(topic)
    if declared != _UNSET:
        _put_settings(resource, declared)
    return resource


def policy_resource(regions: Sequence[str], enforce_in_transit: bool) -> dict[str, Any]:
    """A storage policy as a condition sees it (enforceInTransit only when true)."""
    return rest_policy(regions, enforce_in_transit)


def live_resource(
    name: str, labels: Mapping[str, str], policy: tuple[Sequence[str], bool] | None,
    unmanaged: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A live topic as a condition sees it: its labels, its storage policy
    ((regions, enforceInTransit), None when it has none), its retention, key and
    schema settings (`settings`, from `settings_resource`) and the REST JSON of the
    fields reconcile does not manage that it sets (`unmanaged`)."""
    resource: dict[str, Any] = dict(unmanaged or {})
    resource.update(settings or {})
    resource.update(name=name, labels=dict(labels))
    if policy is not None:
        resource[STORAGE] = policy_resource(*policy)
    return resource


def updated_resource(
    before: Mapping[str, Any], labels: Mapping[str, str] | None,
    policy: tuple[Sequence[str], bool] | None, *, sets_policy: bool,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The live topic `before` as reconcile's UpdateTopic leaves it: `labels` (None:
    unchanged) with the plan marker apply stamps, when the update sets the
    storage policy (`sets_policy`), `policy` (None: cleared, the service then
    computes one, which the condition does not see: as on a create without one), and
    the retention, key and schema settings it sets (`settings`)."""
    after = dict(before)
    after.update(settings or {})
    after[LABELS.rest] = {**(before.get(LABELS.rest) or {} if labels is None else labels),
                         PLAN_LABEL: PLAN_MARKER_PLACEHOLDER}
    if sets_policy:
        after.pop(STORAGE, None)
        if policy is not None:
            after[STORAGE] = policy_resource(*policy)
    return after
