"""Diff: desired vs observed topic, in one comparable shape, into ResourceChanges.

Both sides are normalised to {"labels": managed keys only, "message_storage_policy":
sorted-set regions, enforce_in_transit false == absent} (the policy key is left out
when the spec does not manage it), compared with deepdiff, and every difference is
mapped to its top-level update-mask path. Requests keep foreign labels (an update of
`labels` sends the live map with the managed keys set or removed) and never name an
unmanaged field.

Stable entry points (make_plan and apply use them):
    diff_topic(desired, live, facts) -> ResourceChange      create / update / no-op
    delete_change(live) -> ResourceChange                   --prune
    unmanaged_drift(desired, live, facts) -> Drift | None   warnings only
    org_diagnostics(desired, facts) -> list[Diagnostic]     spec/orgrules.py's rules, on
                                                            the live org policy
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepdiff import DeepDiff

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic
from reconciler.hedging.labels import OWNERSHIP_LABEL, OWNERSHIP_VALUE, is_reserved
from reconciler.orgpolicy.locations import catalog
from reconciler.plan.model import (
    DRIFT_ALLOWS_DISALLOWED,
    DRIFT_BOTH,
    DRIFT_MISSES_ALLOWED,
    Change,
    Drift,
    FieldChange,
    Request,
    ResourceChange,
)
from reconciler.plan.observe import computed_policy, norm_policy
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgrules import OrgFacts, org_problems

LABELS = "labels"
POLICY = "message_storage_policy"
MASK_PATHS = (LABELS, POLICY)  # the only paths a plan ever masks (top level)

REASON_ADOPT = "adopt"
REASON_IN_TRANSIT = "in-transit-differs-from-org-policy"

CATEGORY_TEXT = {
    DRIFT_ALLOWS_DISALLOWED: "the topic allows locations the org policy does not allow",
    DRIFT_MISSES_ALLOWED: "the topic does not allow some locations the org policy allows",
    DRIFT_BOTH: "the topic's allowed and disallowed locations are both stale",
}
CATEGORY_FIX = {
    DRIFT_ALLOWS_DISALLOWED: "update the topic to allow only locations the policy allows",
    DRIFT_MISSES_ALLOWED: "update the topic to allow all locations the policy allows",
    DRIFT_BOTH: "update the topic to the locations the policy allows",
}


# -- desired side ----------------------------------------------------------------


def desired_labels(desired: DesiredTopic) -> dict[str, str]:
    """The spec's labels (user + hedging) plus the ownership label."""
    return {**desired.labels, OWNERSHIP_LABEL: OWNERSHIP_VALUE}


def is_managed_key(key: str, desired_keys: Mapping[str, str]) -> bool:
    return key in desired_keys or is_reserved(key)


def managed_view(labels: Mapping[str, str], desired_keys: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if is_managed_key(k, desired_keys)}


def merged_labels(live: Mapping[str, str], desired_keys: Mapping[str, str]) -> dict[str, str]:
    """Live labels with every managed key set (declared) or removed (reserved, undeclared);
    foreign keys stay as they are."""
    kept = {k: v for k, v in live.items() if not is_managed_key(k, desired_keys)}
    return dict(sorted({**kept, **desired_keys}.items()))


def expected_policy(desired: DesiredTopic, facts: OrgFacts) -> dict[str, Any] | None:
    """What the topic's storage policy should be once applied (managed modes only).
    An omitted enforceInTransit is what the org policy decides."""
    if desired.storage.mode == "inherit":
        return computed_policy(facts)
    eit = desired.storage.enforce_in_transit
    return norm_policy(
        {
            "allowed_persistence_regions": list(desired.storage.regions),
            "enforce_in_transit": facts.enforce_in_transit if eit is None else eit,
        }
    )


def explicit_request_policy(desired: DesiredTopic, facts: OrgFacts) -> dict[str, Any]:
    """The whole object an explicit intent sends (regions and enforce_in_transit)."""
    eit = desired.storage.enforce_in_transit
    return {
        "allowed_persistence_regions": list(desired.storage.regions),
        "enforce_in_transit": facts.enforce_in_transit if eit is None else bool(eit),
    }


def comparable(
    labels: Mapping[str, str], policy: Mapping[str, Any] | None, desired: DesiredTopic
) -> dict[str, Any]:
    """The one shape both sides are compared in."""
    keys = desired_labels(desired)
    shape: dict[str, Any] = {LABELS: dict(sorted(managed_view(labels, keys).items()))}
    if desired.storage.mode != "unmanaged":
        shape[POLICY] = norm_policy(policy)
    return shape


def mask_of(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Top-level paths that differ, via deepdiff (equal shapes skip it: it is slow)."""
    if before == after:
        return []
    diff = DeepDiff(before, after, ignore_order=False)
    roots = {str(k) for k in diff.affected_root_keys}
    unknown = roots - set(MASK_PATHS)
    if unknown:  # a bug in `comparable`, never user input
        raise AssertionError(f"diff touched unmanaged paths {sorted(unknown)}")
    return [p for p in MASK_PATHS if p in roots]


# -- drift categories ----------------------------------------------------------------


def _regions(policy: Mapping[str, Any] | None) -> frozenset[str] | None:
    """A policy's regions; None = every region (no policy, or no region list)."""
    norm = norm_policy(policy)
    if norm is None or not norm["allowed_persistence_regions"]:
        return None
    return frozenset(norm["allowed_persistence_regions"])


def drift_category(
    live: Mapping[str, Any] | None, facts: OrgFacts
) -> tuple[str, list[str], list[str]] | None:
    """(category, disallowed-but-allowed-by-topic, allowed-but-missing) or None."""
    allowed = facts.restriction.allowed
    topic = _regions(live)
    if allowed is None and topic is None:
        return None
    every = frozenset(catalog().regions)
    topic_set = every if topic is None else topic
    policy_set = every if allowed is None else allowed
    disallowed = sorted(topic_set - policy_set)
    missing = sorted(policy_set - topic_set)
    if disallowed and missing:
        return DRIFT_BOTH, disallowed, missing
    if disallowed:
        return DRIFT_ALLOWS_DISALLOWED, disallowed, missing
    if missing:
        return DRIFT_MISSES_ALLOWED, disallowed, missing
    return None


def _describe(regions: frozenset[str] | None) -> str:
    return "every region" if regions is None else ", ".join(sorted(regions)) or "no region"


def unmanaged_drift(desired: DesiredTopic, live: ObservedTopic, facts: OrgFacts) -> Drift | None:
    """An unmanaged-policy topic out of step with the org policy: a warning, never a
    change."""
    policy = live.body.get(POLICY)
    found = drift_category(policy, facts)
    if found is None:
        return None
    category, disallowed, missing = found
    topic_regions = _regions(policy)
    org_regions = facts.restriction.allowed
    parts = []
    if disallowed:
        what = _describe(topic_regions) if topic_regions is None else ", ".join(disallowed)
        parts.append(f"it allows {what} which the org policy does not allow")
    if missing:
        parts.append(
            f"it does not allow {', '.join(missing)}, which the org policy allows"
            if org_regions is not None
            else f"it allows only {_describe(topic_regions)} while the org policy allows "
            "every region"
        )
    message = f"{CATEGORY_TEXT[category]}: {'; '.join(parts)}"
    fix = (
        f"{CATEGORY_FIX[category]}: set `messageStoragePolicy: inherit` in "
        f"{desired.file or 'the spec'} (or run `gcloud pubsub topics update "
        f"{desired.topic} --project {desired.project} --recompute-message-storage-policy`)"
    )
    return Drift(
        address=desired.address,
        category=category,
        message=message,
        fix=fix,
        disallowed=disallowed if topic_regions is not None else [],
        missing=missing if org_regions is not None else [],
    )


# -- changes ---------------------------------------------------------------------


def _source(desired: DesiredTopic) -> dict[str, Any] | None:
    return {"file": desired.file, "line": desired.line} if desired.file else None


def _policy_field(
    before: dict[str, Any] | None, after: dict[str, Any] | None, note: str | None
) -> FieldChange:
    """Regions as a set change; when one side allows every region (no list), the
    renderer shows the whole list instead of dozens of regions."""
    b, a = _regions(before), _regions(after)
    added = sorted(a - b) if a is not None and b is not None else []
    removed = sorted(b - a) if a is not None and b is not None else []
    return FieldChange(POLICY, before, after, added=added, removed=removed, note=note)


def _labels_field(before: dict[str, str], after: dict[str, str]) -> FieldChange:
    return FieldChange(
        LABELS,
        before,
        after,
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
    )


def _narrowing_warning(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str | None:
    b, a = _regions(before), _regions(after)
    if a is None:
        return None
    removed = (frozenset(catalog().regions) if b is None else b) - a
    if not removed:
        return None
    what = (
        f"from every region to {', '.join(sorted(a))}"
        if b is None
        else f"no longer allowed: {', '.join(sorted(removed))}"
    )
    return (
        f"narrows the storage regions ({what}); messages already stored elsewhere are "
        "not moved: the change applies only to messages published after it"
    )


def diff_topic(
    desired: DesiredTopic, live: ObservedTopic | None, facts: OrgFacts
) -> ResourceChange:
    """Create, update or no-op for one declared topic."""
    if live is None:
        return _create(desired, facts)
    keys = desired_labels(desired)
    live_labels: dict[str, str] = dict(live.body.get(LABELS) or {})
    live_policy = norm_policy(live.body.get(POLICY))
    mode = desired.storage.mode
    want_policy = expected_policy(desired, facts) if mode != "unmanaged" else live_policy
    before_shape = comparable(live_labels, live_policy, desired)
    after_shape = comparable(keys, want_policy, desired)
    mask = mask_of(before_shape, after_shape)
    after_labels = merged_labels(live_labels, keys) if LABELS in mask else dict(live_labels)
    before = {LABELS: dict(sorted(live_labels.items())), POLICY: live_policy}
    after = {LABELS: after_labels, POLICY: want_policy}
    rc = ResourceChange(
        address=desired.address,
        project=desired.project,
        topic=desired.topic,
        change=Change(actions=["no-op"], before=before, after=after),
        source=_source(desired),
    )
    if not mask:
        return rc
    rc.change.actions = ["update"]
    rc.update_mask = mask
    body: dict[str, Any] = {"name": desired.address}
    if LABELS in mask:
        body[LABELS] = after_labels
        rc.change.fields.append(_labels_field(before_shape[LABELS], after_shape[LABELS]))
        if live_labels.get(OWNERSHIP_LABEL) != OWNERSHIP_VALUE:
            rc.reasons.append(REASON_ADOPT)
    if POLICY in mask:
        note = None
        if mode == "inherit":
            note = "recomputed from the effective org policy"
            found = drift_category(live_policy, facts)
            rc.reasons.append(found[0] if found else REASON_IN_TRANSIT)
        else:
            body[POLICY] = explicit_request_policy(desired, facts)
        rc.change.fields.append(_policy_field(live_policy, want_policy, note))
        if warning := _narrowing_warning(live_policy, want_policy):
            rc.warnings.append(warning)
    rc.request = Request("UpdateTopic", body, list(mask))
    return rc


def _create(desired: DesiredTopic, facts: OrgFacts) -> ResourceChange:
    """CreateTopic carries the full declared topic; without an explicit policy the
    service computes one from the org policy, which is what `after` shows."""
    labels = dict(sorted(desired_labels(desired).items()))
    body: dict[str, Any] = {"name": desired.address, LABELS: labels}
    mode = desired.storage.mode
    if mode == "explicit":
        body[POLICY] = explicit_request_policy(desired, facts)
        after_policy = expected_policy(desired, facts)
        note = None
    else:
        after_policy = computed_policy(facts)
        note = "computed by the service from the effective org policy"
    fields = [_labels_field({}, labels)]
    if after_policy is not None or mode != "unmanaged":
        fields.append(_policy_field(None, after_policy, note))
    return ResourceChange(
        address=desired.address,
        project=desired.project,
        topic=desired.topic,
        change=Change(
            actions=["create"], before=None, after={LABELS: labels, POLICY: after_policy},
            fields=fields,
        ),
        request=Request("CreateTopic", body),
        source=_source(desired),
    )


def delete_change(live: ObservedTopic) -> ResourceChange:
    """--prune: a live, undeclared topic that carries the ownership label."""
    project = live.name.split("/")[1]
    topic = live.name.rsplit("/", 1)[-1]
    before = {
        LABELS: dict(sorted((live.body.get(LABELS) or {}).items())),
        POLICY: norm_policy(live.body.get(POLICY)),
    }
    return ResourceChange(
        address=live.name,
        project=project,
        topic=topic,
        change=Change(actions=["delete"], before=before, after=None),
        request=Request("DeleteTopic", {"name": live.name}),
        reasons=["prune: not declared, carries the ownership label"],
        warnings=["its subscriptions are detached and stop receiving messages"],
    )


def is_owned(live: ObservedTopic) -> bool:
    return (live.body.get(LABELS) or {}).get(OWNERSHIP_LABEL) == OWNERSHIP_VALUE


def org_diagnostics(desired: DesiredTopic, facts: OrgFacts) -> list[Diagnostic]:
    """The org-policy rules `validate` applies to the snapshot, applied to the live org
    policy (errors stop the topic before any call; warnings are reported)."""
    where = desired.file or desired.address
    col = 1 if desired.line else 0
    return [
        Diagnostic(where, desired.line, col, p.severity, p.code, p.message)
        for p in org_problems(desired, facts)
    ]
