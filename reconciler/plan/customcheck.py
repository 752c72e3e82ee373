"""The organization's custom constraints on each call a plan makes, judged as the
service would judge it (`reconciler.orgpolicy.cel.judge`, as `validate` and the local
server): a CreateTopic on the topic as sent (`spec/resource.py`, the resource
`validate` judges), an UpdateTopic on the live topic as the call leaves it, with
UPDATE's rule for a topic that already violates (the service refuses any change to
it unless the change fixes the violation: the topic after the call decides).

    judge_change(rc, desired, live, constraints, owner, org_enforces_in_transit)
        -> [Diagnostic]       errors stop the topic (a refused call is not planned)
    existing_refusals(rc, desired, live, constraints, owner, org_enforces_in_transit)
        -> [Diagnostic]       warnings: a topic that exists and stays against a
                              constraint that binds only creation

A constraint whose methodTypes is CREATE only judges no UpdateTopic: a topic that
exists is never refused by it. What it would refuse of the topic as the plan leaves it
is reported once (`existing-custom-constraint`), as the other existing violations
(plan/orgcheck.py), and `validate`, which cannot know whether a topic exists, leaves
its refusals to plan (spec/customrules.py).

A condition that reads a field reconcile does not manage (ingestion sources, message
transforms) is judged on a create with the field absent (reconcile does not send it)
and on an update with the live topic's value (the call leaves it as it is). One that
reads a field the plan does not read at all (`spec/resource.py` LIVE_FIELDS) is judged
on a create; on an update it would need the live topic's value: a warning says it was
not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.orgpolicy.cel import Judgement, Verdict, condition_for, judge
from reconciler.orgpolicy.custom import TOPIC as TOPIC_TYPE
from reconciler.orgpolicy.custom import CustomConstraint
from reconciler.orgpolicy.store import Enforcement
from reconciler.plan.model import ResourceChange
from reconciler.spec.customrules import (
    EXISTING_REFUSED,
    REFUSED,
    UNEVALUABLE,
    describe,
    fix_hint,
    seen,
    unevaluable_hint,
)
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.resource import (
    LIVE_FIELDS,
    live_resource,
    settings_resource,
    topic_resource,
    updated_resource,
)
from reconciler.topic import (
    KMS_KEY,
    RETENTION,
    SCHEMA_SETTINGS,
    STORAGE_POLICY,
    SchemaSettings,
    StoragePolicy,
)

NOT_CHECKED = "org-custom-not-checked"


def _policy(policy: StoragePolicy | None) -> tuple[Sequence[str], bool] | None:
    return None if policy is None else (policy.regions, policy.enforce_in_transit)


def resources(
    rc: ResourceChange, desired: DesiredTopic, live: ObservedTopic | None, owner: str,
    org_enforces_in_transit: bool,
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """(method, the topic after the call, the topic before it: None for a create)."""
    if live is None or rc.action == "create":
        resource = topic_resource(desired, owner, org_enforces_in_transit=org_enforces_in_transit)
        return "CREATE", resource, None
    shape = live.shape
    before = live_resource(
        live.name, shape.labels, _policy(shape.policy), shape.unmanaged_json,
        settings=settings_resource(shape.retention, shape.kms_key_name, shape.schema_settings),
    )
    request = rc.request
    body: Mapping[str, Any] = request.topic if request is not None else {}
    mask = rc.update_mask
    merge = request.label_merge if request is not None else None
    labels = merge.onto(shape.labels) if merge is not None else None
    sent = StoragePolicy.from_json(body.get(STORAGE_POLICY))
    sets = settings_resource(
        body.get(RETENTION) if RETENTION in mask else None,
        body.get(KMS_KEY) if KMS_KEY in mask else None,
        SchemaSettings.from_json(body.get(SCHEMA_SETTINGS)) if SCHEMA_SETTINGS in mask else None,
    )
    after = updated_resource(
        before, labels, _policy(sent), sets_policy=STORAGE_POLICY in mask, settings=sets
    )
    return "UPDATE", after, before


def judge_change(
    rc: ResourceChange,
    desired: DesiredTopic,
    live: ObservedTopic | None,
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
    owner: str,
    org_enforces_in_transit: bool,
) -> list[Diagnostic]:
    """What the constraints say about the call `rc` makes (none for a no-op)."""
    if rc.action not in ("create", "update") or not constraints:
        return []
    method, after, before = resources(rc, desired, live, owner, org_enforces_in_transit)
    out = []
    for constraint, mode in constraints:
        unmanaged = _unread(constraint)
        if unmanaged and method == "UPDATE" and constraint.applies_to(TOPIC_TYPE, method):
            out.append(_diagnostic(
                desired, Severity.WARNING, NOT_CHECKED,
                f"custom constraint {constraint.constraint_id} reads "
                f"{', '.join('resource.' + f for f in unmanaged)} of {rc.address}, which "
                "reconcile does not manage and the plan does not read; the UpdateTopic "
                "was not checked against it",
                "if the service refuses the update, the apply reports it",
            ))
            continue
        judgement = judge(constraint, after, method, before)
        if judgement is None or judgement.verdict is Verdict.ALLOWED:
            continue
        out.append(_refusal(judgement, mode, rc.address, desired, after, method))
    return out


def _unread(constraint: CustomConstraint) -> list[str]:
    """The fields the constraint's condition reads that a plan does not read of a live
    topic (spec/resource.py LIVE_FIELDS)."""
    reads = condition_for(constraint).reads
    return sorted(r for r in reads if r.split(".", 1)[0] not in LIVE_FIELDS)


def existing_refusals(
    rc: ResourceChange,
    desired: DesiredTopic,
    live: ObservedTopic | None,
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
    owner: str,
    org_enforces_in_transit: bool,
) -> list[Diagnostic]:
    """The enforced constraints that bind only creation, on a topic that exists as the
    plan leaves it (after its UpdateTopic, or as it is): the service judges no call of
    the plan by them, so what they would refuse is reported, once a constraint, and
    never stops the plan. A condition that reads a field the plan does not read, or
    that cannot be evaluated, says nothing here: nothing is refused either way."""
    if live is None or rc.action not in ("update", "no-op"):
        return []
    create_only = [
        c for c, mode in constraints
        if mode == "enforced" and c.applies_to(TOPIC_TYPE, "CREATE")
        and not c.applies_to(TOPIC_TYPE, "UPDATE")
    ]
    if not create_only:
        return []
    _, after, before = resources(rc, desired, live, owner, org_enforces_in_transit)
    standing = after if rc.action == "update" or before is None else before
    out = []
    for constraint in create_only:
        if _unread(constraint):
            continue
        judgement = judge(constraint, standing, "CREATE")
        if judgement is None or judgement.verdict is not Verdict.REFUSED:
            continue
        out.append(_diagnostic(
            desired, Severity.WARNING, EXISTING_REFUSED,
            f"topic {rc.address} exists and breaks custom constraint "
            f"{describe(constraint)}, which binds only creation (methodTypes: CREATE): "
            f"the service judges none of the plan's calls by it, and the plan leaves the "
            f"topic so; the condition sees {seen(standing, condition_for(constraint).reads)}",
            f"to comply, {fix_hint(constraint)}",
        ))
    return out


def _refusal(
    judgement: Judgement, mode: Enforcement, address: str, desired: DesiredTopic,
    after: dict[str, Any], method: str,
) -> Diagnostic:
    constraint = judgement.constraint
    call = "CreateTopic" if method == "CREATE" else "UpdateTopic"
    dry_run = mode == "dry-run"
    severity = Severity.WARNING if dry_run else Severity.ERROR
    if judgement.verdict is Verdict.UNDECIDED:
        return _diagnostic(
            desired, severity, UNEVALUABLE,
            f"custom constraint {constraint.constraint_id} cannot be evaluated on the "
            f"{call} of {address}: {judgement.outcome.reason}; reconcile cannot tell "
            "whether the service would accept it"
            + (" (the constraint is in dry run: it would only log)" if dry_run else ""),
            unevaluable_hint(judgement.outcome, in_spec=False),
        )
    consequence = (
        "the constraint is in dry run for the project: the service would log it and go "
        "ahead" if dry_run else f"the service would refuse the {call} with FAILED_PRECONDITION"
    )
    values = seen(after, condition_for(constraint).reads)
    if judgement.already_violating:
        return _diagnostic(
            desired, severity, REFUSED,
            f"topic {address} already violates custom constraint {describe(constraint)}, "
            "and the service refuses changing a topic while it does unless the change "
            f"fixes it; after this change the condition still sees {values}; {consequence}",
            f"include the fix in the change: {fix_hint(constraint)}",
        )
    return _diagnostic(
        desired, severity, REFUSED,
        f"the {call} of {address} breaks custom constraint {describe(constraint)}; the "
        f"condition would see {values}; {consequence}",
        fix_hint(constraint),
    )


def _diagnostic(
    desired: DesiredTopic, severity: Severity, code: str, message: str, hint: str
) -> Diagnostic:
    return Diagnostic(
        desired.file or desired.address, desired.line, 1 if desired.line else 0,
        severity, code, message, hint, topic=desired.address,
    )
