"""Diff: desired vs observed topic, in one comparable shape, into ResourceChanges.

Both sides are normalised to one comparable shape (managed label keys only, the storage
policy as a `reconciler.topic.StoragePolicy`, left out when the spec does not manage
it), compared key by key (plain dicts, lists, text and booleans: `!=` is exact there,
and cheap enough for every topic of a large plan), and every difference is mapped to
its top-level update-mask path. Requests keep foreign labels (an update of
`labels` sends the live map with the managed keys set or removed) and never name an
unmanaged field.

Stable entry points (make_plan and apply use them):
    diff_topic(desired, live, facts, owner) -> ResourceChange   create / update / no-op
    delete_change(live, owner) -> ResourceChange                --prune
    label_budget(desired, rc) -> Diagnostic | None          over the service's 64 labels
    unmanaged_drift(desired, live, facts) -> Drift | None   warnings only

(The org policy's verdicts on each topic and call: plan/orgcheck.py.)
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from operator import attrgetter
from typing import Any

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.frozen import EMPTY, FrozenDict
from reconciler.names import MAX_LABELS, split_topic_name
from reconciler.orgpolicy.locations import catalog
from reconciler.ownership import (
    DEFAULT_OWNER,
    OWN_LABELS,
    OWNERSHIP_LABEL,
    OWNERSHIP_VALUE,
    PLAN_LABEL,
    is_owned_by,
    owner_of,
    ownership_labels,
)
from reconciler.plan.model import (
    DRIFT_ALLOWS_DISALLOWED,
    DRIFT_BOTH,
    DRIFT_MISSES_ALLOWED,
    ONE_ACTION,
    Change,
    Drift,
    ResourceChange,
)
from reconciler.plan.policy import (
    computed_policy,
    drift_category,
    expected_policy,
    narrowing_warning,
)
from reconciler.plan.reasons import DRIFT_REASONS, Reason, ReasonKind
from reconciler.plan.topicstate import topic_state
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgrules import OrgFacts
from reconciler.topic import (
    Settings,
    StoragePolicy,
    TopicShape,
    is_regionless,
    norm_policy,
    policy_json,
    region_set,
)
from reconciler.topicfields import BY_REST, LABELS, MASK_PATHS, SETTINGS, STORAGE_POLICY

LABEL_BUDGET = "label-budget"  # the diagnostic code
MAX_NAMED = 20  # foreign label keys named in a label-budget error

IN_TRANSIT_REASON = Reason(ReasonKind.IN_TRANSIT)

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


def desired_labels(desired: DesiredTopic, owner: str = DEFAULT_OWNER) -> dict[str, str]:
    """The spec's labels (user + hedging) plus the ownership label and the tree's owner."""
    return {**desired.labels, **ownership_labels(owner)}


def merged_labels(live: TopicShape, desired_keys: Mapping[str, str]) -> dict[str, str]:
    """Live labels with every managed key set (declared) or removed (reserved, undeclared);
    foreign keys stay as they are."""
    return dict(sorted({**live.foreign_labels(desired_keys), **desired_keys}.items()))


def comparable(
    topic: TopicShape, desired: DesiredTopic, keys: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The one shape both sides are compared in (keys are update-mask paths); `keys`:
    desired_labels(desired), when the caller has them already. A field the spec
    omits is not in it: unmanaged, it can never reach a mask. The labels (only the
    managed keys) and the storage policy (as `live_policy_of` gives it) have their
    rules; every other field of the table is its value, compared as is."""
    declared = desired_labels(desired) if keys is None else keys
    shape: dict[str, Any] = {LABELS.proto: topic.managed_labels(declared)}
    if desired.storage.mode != "unmanaged":
        shape[STORAGE_POLICY.proto] = policy_json(live_policy_of(topic.policy))
    for entry in SETTINGS:
        if getattr(desired, entry.desired) is not None:
            value = getattr(topic, entry.shape)
            shape[entry.proto] = entry.blank if value is None else value
    return shape


_DECLARED_SETTINGS = attrgetter(*(entry.desired for entry in SETTINGS))
_UNDECLARED: Settings = (None,) * len(SETTINGS)


def live_settings(live: TopicShape) -> Settings:
    return live.settings()


def wanted_settings(desired: DesiredTopic, live: Settings) -> Settings:
    """The settings after an update: each declared one as declared, each omitted one
    as it is on the live topic (never sent)."""
    declared = declared_settings(desired)
    if declared == _UNDECLARED:  # most topics: every one unmanaged
        return live
    return tuple(now if want is None else want for want, now in zip(declared, live, strict=True))


def declared_settings(desired: DesiredTopic) -> Settings:
    settings: Settings = _DECLARED_SETTINGS(desired)
    return settings


def live_policy_of(policy: StoragePolicy | None) -> StoragePolicy | None:
    """Normalised for comparison, except that a set policy with no region stays what it
    is (no region allowed, invalid): it must never read as "no policy"."""
    return policy if is_regionless(policy) else norm_policy(policy)


REGIONLESS_TEXT = (
    "its message storage policy lists no region, which allows no region at all (the "
    "Pub/Sub API calls an empty list an invalid configuration; it does not mean every "
    "region)"
)


def mask_of(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Top-level paths that differ (a key on one side only differs too)."""
    if before == after:
        return []
    keys = before.keys() | after.keys()
    roots = {k for k in keys if before.get(k, _ABSENT) != after.get(k, _ABSENT)}
    unknown = roots - set(MASK_PATHS)
    if unknown:  # a bug in `comparable`, never user input
        raise AssertionError(f"diff touched unmanaged paths {sorted(unknown)}")
    return [p for p in MASK_PATHS if p in roots]


_ABSENT = object()


# -- drift categories ----------------------------------------------------------------


def _describe(regions: frozenset[str] | None) -> str:
    return "every region" if regions is None else ", ".join(sorted(regions)) or "no region"


def unmanaged_drift(desired: DesiredTopic, live: ObservedTopic, facts: OrgFacts) -> Drift | None:
    """An unmanaged-policy topic out of step with the org policy: a warning, never a
    change."""
    policy = live.shape.policy
    if is_regionless(policy) and not in_transit_only(policy, facts):
        allowed = facts.restriction.allowed
        wanted = sorted(catalog().regions if allowed is None else allowed)
        return Drift(
            address=desired.address,
            category=DRIFT_MISSES_ALLOWED,
            message=f"no region allowed (invalid): {REGIONLESS_TEXT}",
            fix=(
                f"set `messageStoragePolicy: inherit` or list regions in "
                f"{desired.file or 'the spec'} (or run `gcloud pubsub topics update "
                f"{desired.topic} --project {desired.project} "
                "--recompute-message-storage-policy`)"
            ),
            missing=wanted,
        )
    found = drift_category(policy, facts)
    if found is None:
        return None
    category, disallowed, missing = found
    topic_regions = region_set(policy)
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
        category=category,  # type: ignore[arg-type]  # one of DRIFT_* (plan/policy.py)
        message=message,
        fix=fix,
        disallowed=disallowed if topic_regions is not None else [],
        missing=missing if org_regions is not None else [],
    )


# -- changes ---------------------------------------------------------------------


def _source(desired: DesiredTopic) -> FrozenDict[str, Any] | None:
    return FrozenDict(file=desired.file, line=desired.line) if desired.file else None


def diff_topic(
    desired: DesiredTopic, live: ObservedTopic | None, facts: OrgFacts, owner: str = DEFAULT_OWNER
) -> ResourceChange:
    """Create, update or no-op for one declared topic of the tree `owner`."""
    if live is None:
        return _create(desired, facts, owner)
    keys = desired_labels(desired, owner)
    live_shape = live.shape
    live_policy = live_policy_of(live_shape.policy)
    mode = desired.storage.mode
    want_policy = wanted_policy(desired, live_policy, facts)
    now = live_settings(live_shape)
    want = wanted_settings(desired, now)
    # the live labels come sorted
    before = topic_state(live_shape.labels, live_policy, now)
    unmanaged = live_shape.unmanaged
    if unmanaged:
        unmanaged = live_shape.unmanaged_notes(partial(_declares, desired))
    if want == now and _settled(live_shape, keys, live_policy, want_policy):
        return _no_op(desired, before, unmanaged)
    mask = mask_of(
        comparable(live_shape, desired, keys),
        comparable(TopicShape(keys, want_policy, *want), desired, keys),
    )
    if not mask:
        return _no_op(desired, before, unmanaged)
    labelled = LABELS.proto in mask
    after_labels = merged_labels(live_shape, keys) if labelled else dict(live_shape.labels)
    reasons: list[Reason] = []
    warnings: list[str] = []
    computed: list[str] = []
    if LABELS.proto in mask:
        reasons += _adoption(live_shape.labels, owner)
    if STORAGE_POLICY.proto in mask:
        if mode == "inherit":
            computed.append(STORAGE_POLICY.proto)
            found = drift_category(live_policy, facts)
            reasons.append(Reason(DRIFT_REASONS[found[0]]) if found else IN_TRANSIT_REASON)
        if is_regionless(live_policy):
            warnings.append("no region allowed (invalid) on the live topic: " + REGIONLESS_TEXT)
        elif warning := narrowing_warning(live_policy, want_policy):
            warnings.append(warning)
    return ResourceChange(
        address=desired.address,
        project=desired.project,
        topic=desired.topic,
        change=Change(
            actions=ONE_ACTION["update"],
            before=before,
            after=topic_state(after_labels, want_policy, want),
            computed=computed,  # type: ignore[arg-type]  # MASK_PATHS
        ),
        update_mask=mask,  # type: ignore[arg-type]
        reasons=reasons,
        warnings=warnings,
        source=_source(desired),
        unmanaged=unmanaged,
    )


def _declares(desired: DesiredTopic, rest: str) -> bool:
    """Does the spec manage the field of this REST name (one `# unmanaged:` shows)?"""
    return getattr(desired, BY_REST[rest].desired) is not None


def wanted_policy(
    desired: DesiredTopic, live_policy: StoragePolicy | None, facts: OrgFacts
) -> StoragePolicy | None:
    """The storage policy an update of the live topic sets (`live_policy`: its policy
    as `live_policy_of` gives it): the spec's or the org policy's in the managed modes,
    the live one when the spec leaves it unmanaged."""
    mode = desired.storage.mode
    if mode == "unmanaged":
        return live_policy
    if mode == "inherit" and in_transit_only(live_policy, facts):
        return live_policy  # what the service computes there: no permanent diff
    return expected_policy(desired, facts, live_policy)


def _adoption(live: Mapping[str, str], owner: str) -> list[Reason]:
    """Why a label update adopts the topic: it has no owner yet ("adopt": unlabelled, or
    labelled by a reconcile before owners), or another tree owns it ("adopt-from:X",
    which apply refuses unless told `--adopt-from X`; the plan's warning, with the
    spec's file and line, is made from this reason in plan/make.py)."""
    found = owner_of(live)
    if found is not None and found != owner:
        return [Reason(ReasonKind.ADOPT_FROM, found)]
    if found is None or live.get(OWNERSHIP_LABEL) != OWNERSHIP_VALUE:
        return [Reason(ReasonKind.ADOPT)]
    return []


def taken_from(rc: ResourceChange) -> str | None:
    """The other owner whose topic this change takes over, if it does."""
    for reason in rc.reasons:
        if reason.kind is ReasonKind.ADOPT_FROM:
            return reason.subject
    return None


def _no_op(
    desired: DesiredTopic, before: dict[str, Any], unmanaged: tuple[str, ...] = ()
) -> ResourceChange:
    """Nothing to send: what the topic will be is what it is, so one document serves
    both sides (made read-only once, by the model)."""
    return ResourceChange(
        address=desired.address,
        project=desired.project,
        topic=desired.topic,
        change=Change(actions=ONE_ACTION["no-op"], before=before, after=before),
        source=_source(desired),
        unmanaged=unmanaged or EMPTY,
    )


def _settled(
    live: TopicShape,
    keys: Mapping[str, str],
    live_policy: StoragePolicy | None,
    want_policy: StoragePolicy | None,
) -> bool:
    """The common case at scale, decided without building both comparable shapes: the
    live labels are exactly the declared ones (no foreign or stray reserved key), the
    plan marker apart, and the policy compares equal (both normalised by live_policy_of
    already; unmanaged: the live one on both sides). True implies `mask_of` would find
    nothing; False only means "compare in full"."""
    if live_policy != want_policy:
        return False
    labels = live.labels
    marked = PLAN_LABEL in labels
    if len(labels) != len(keys) + marked:
        return False
    return keys.items() <= labels.items() if marked else labels == keys


def in_transit_only(live: StoragePolicy | None, facts: OrgFacts) -> bool:
    """In-transit enforcement without a location constraint: the service may keep
    enforceInTransit on an `inherit` topic with no region list (every region allowed,
    nothing to enforce against), or compute no policy at all. Both match `inherit`."""
    return (
        facts.restriction.allowed is None
        and facts.enforce_in_transit
        and live is not None
        and not live.regions
        and live.enforce_in_transit
    )


def _create(desired: DesiredTopic, facts: OrgFacts, owner: str) -> ResourceChange:
    """CreateTopic carries the full declared topic; without an explicit policy the
    service computes one from the org policy, which is what `after` shows."""
    labels = dict(sorted(desired_labels(desired, owner).items()))
    explicit = desired.storage.mode == "explicit"
    after_policy = expected_policy(desired, facts) if explicit else computed_policy(facts)
    return ResourceChange(
        address=desired.address,
        project=desired.project,
        topic=desired.topic,
        change=Change(
            actions=ONE_ACTION["create"],
            before=None,
            after=topic_state(labels, after_policy, declared_settings(desired), desired.tags),
            computed=[] if explicit else [STORAGE_POLICY.proto],  # type: ignore[list-item]
        ),
        source=_source(desired),
    )


def delete_change(live: ObservedTopic, owner: str = DEFAULT_OWNER) -> ResourceChange:
    """--prune: a live, undeclared topic that this tree owns."""
    split = split_topic_name(live.name)
    assert split is not None, live.name  # the service only lists well-formed names
    project, topic = split
    shape = live.shape
    before = topic_state(dict(sorted(shape.labels.items())), shape.policy, live_settings(shape))
    return ResourceChange(
        address=live.name,
        project=project,
        topic=topic,
        change=Change(actions=ONE_ACTION["delete"], before=before, after=None),
        reasons=[Reason(ReasonKind.PRUNE, owner)],
        warnings=["its subscriptions are detached and stop receiving messages"],
    )


def owned_by(live: ObservedTopic, owner: str) -> bool:
    """May this tree's `--prune` delete the topic (if undeclared)?"""
    return is_owned_by(live.shape.labels, owner)


def label_budget(desired: DesiredTopic, rc: ResourceChange) -> Diagnostic | None:
    """An error when the topic would carry more labels than the service allows after
    this change: the declared ones, reconcile's own (the plan marker that apply adds
    included) and those others set on it, which apply keeps. The service would refuse
    the call ("at most 64 labels"); the plan says so first, naming the foreign keys."""
    if rc.action not in ("create", "update"):
        return None
    after: Mapping[str, str] = (rc.change.after or {}).get(LABELS.proto) or {}
    total = len(after) + (PLAN_LABEL not in after)
    if total <= MAX_LABELS:
        return None
    declared = desired.labels
    foreign = sorted(k for k in after if k not in declared and k not in OWN_LABELS)
    named = ", ".join(foreign[:MAX_NAMED]) or "none"
    if len(foreign) > MAX_NAMED:
        named += f" and {len(foreign) - MAX_NAMED} more"
    return Diagnostic(
        desired.file or desired.address, desired.line, 1 if desired.line else 0,
        Severity.ERROR, LABEL_BUDGET,
        f"{desired.address} would carry {total} labels after apply, over the service's "
        f"limit of {MAX_LABELS}: {len(declared)} declared, {len(OWN_LABELS)} of reconcile's "
        f"own ({', '.join(OWN_LABELS)}) and {len(foreign)} set by others on the live "
        f"topic, which apply keeps ({named})",
        hint=f"remove {total - MAX_LABELS} or more of them: foreign labels you no longer "
        f"need with `gcloud pubsub topics update {desired.topic} --project "
        f"{desired.project} --remove-labels=KEY,...`, or declared ones from the spec",
        topic=desired.address,
    )
