"""The organization's custom constraints on each call a plan makes, judged as the
service would judge it (`reconciler.orgpolicy.cel.judge`, as `validate` and the local
server): a CreateTopic on the topic as sent (`spec/resource.py`, the resource
`validate` judges), an UpdateTopic on the live topic as the call leaves it, with
UPDATE's rule for a topic that already violates (the service refuses any change to
it unless the change fixes the violation: the topic after the call decides).

    judge_change(rc, desired, live, constraints, owner, org_enforces_in_transit, gate)
        -> [Diagnostic]       errors stop the topic (a refused call is not planned)
    Unjudged(gate)            what could not be judged, once per project
        .call(rc, desired)             note a call the plan makes
        .findings(observation)         -> [Diagnostic]
        .summary(observation, projects) -> {project: ProjectConstraints}   judged or not
    existing_refusals(rc, desired, live, constraints, owner, org_enforces_in_transit)
        -> [Diagnostic]       warnings: a topic that exists and stays against a
                              constraint that binds only creation
    standing_refusals(standing, constraints) -> [CustomConstraint]   which ones, of the
                              topic as the plan leaves it (`import` marks them too)
    adopted_resource(live, owner) -> resource   a live topic as the plan's adopting
                              UpdateTopic leaves it (its ownership labels set)
    adoption_refusals(live, constraints, owner) -> [CustomConstraint]   the enforced
                              ones that refuse that UpdateTopic (`import` warns of them)

A constraint whose methodTypes is CREATE only judges no UpdateTopic: a topic that
exists is never refused by it. What it would refuse of the topic as the plan leaves it
is reported once (`existing-custom-constraint`), as the other existing violations
(plan/orgcheck.py), and `validate`, which cannot know whether a topic exists, leaves
its refusals to plan (spec/customrules.py).

A condition that reads a field reconcile does not manage (ingestion sources, message
transforms) is judged on a create with the field absent (reconcile does not send it)
and on an update with the live topic's value (the call leaves it as it is). One that
reads a field the plan does not read at all (`orgpolicy/cel/resource.py` LIVE_FIELDS) is judged
on a create; on an update it would need the live topic's value: it was not judged
(`org-custom-not-checked`). What could not be judged is an error for an enforced
constraint and a warning for a dry-run one, unless `--allow-unjudged` lets it through
(reconciler/orgpolicy/unjudged.py): a project whose custom constraints are not known
(`Observation.custom_unknown`: no ancestry, a failed read) and a condition reconcile's
CEL library cannot compile are said once per project (and constraint), naming the
calls they concern; a condition that cannot be evaluated on a topic, or a field not
read, once per topic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.orgpolicy.cel import (
    ConditionError,
    Judgement,
    Verdict,
    compile_error,
    condition_for,
    judge,
)
from reconciler.orgpolicy.cel.resource import LIVE_FIELDS, shape_resource, topic_resource
from reconciler.orgpolicy.custom import TOPIC, CustomConstraint
from reconciler.orgpolicy.store import Enforcement
from reconciler.orgpolicy.unjudged import ALLOW_HINT, Gate, Why, uncompilable_hint
from reconciler.ownership import PLAN_LABEL, ownership_labels
from reconciler.plan.model import ProjectConstraints, ResourceChange
from reconciler.plan.observation import Observation
from reconciler.spec.customrules import (
    EXISTING_REFUSED,
    REFUSED,
    deciding_path,
    describe,
    fix_hint,
    seen,
    specific,
    unevaluable_hint,
)
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.positions import topic_document
from reconciler.spec.resource import PLAN_MARKER_PLACEHOLDER, declared_resource
from reconciler.topic import StoragePolicy
from reconciler.topicfields import SETTINGS, STORAGE_POLICY

NOT_CHECKED = Why.NOT_READ.code


def resources(
    rc: ResourceChange, desired: DesiredTopic, live: ObservedTopic | None, owner: str,
    org_enforces_in_transit: bool,
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """(method, the topic after the call, the topic before it: None for a create),
    each built by the one builder of what a condition sees (`topic_resource`): the
    live topic as read, and as reconcile's UpdateTopic leaves it: its labels (merged,
    or as they are) with the plan marker apply stamps, and each field the mask names
    and the request sets replaced (a storage policy the mask names and the request
    leaves out is cleared: the service then computes one, which the condition does
    not see, as on a create without one)."""
    if live is None or rc.action == "create":
        resource = declared_resource(
            desired, owner, org_enforces_in_transit=org_enforces_in_transit
        )
        return "CREATE", resource, None
    shape = live.shape
    before = shape_resource(live.name, shape)
    request = rc.request
    body: Mapping[str, Any] = request.topic if request is not None else {}
    mask = rc.update_mask
    merge = request.label_merge if request is not None else None
    labels = merge.onto(shape.labels) if merge is not None else dict(shape.labels)
    labels[PLAN_LABEL] = PLAN_MARKER_PLACEHOLDER
    # each setting as the call sends it, else as the topic has it (the table's order)
    settings = [
        entry.from_json(body.get(entry.proto)) if entry.proto in mask else None
        for entry in SETTINGS
    ]
    after = topic_resource(
        live.name, labels,
        StoragePolicy.from_json(body.get(STORAGE_POLICY.proto)) if STORAGE_POLICY.proto in mask
        else shape.policy,
        [now if sent is None else sent
         for sent, now in zip(settings, shape.settings(), strict=True)],
        shape.unmanaged_json,
    )
    return "UPDATE", after, before


def judge_change(
    rc: ResourceChange,
    desired: DesiredTopic,
    live: ObservedTopic | None,
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
    owner: str,
    org_enforces_in_transit: bool,
    gate: Gate | None = None,
) -> list[Diagnostic]:
    """What the constraints say about the call `rc` makes (none for a no-op). A
    constraint whose condition does not compile here is skipped: `Unjudged` names it
    once for the project."""
    if rc.action not in ("create", "update") or not constraints:
        return []
    gate = gate if gate is not None else Gate(live=True)
    method, after, before = resources(rc, desired, live, owner, org_enforces_in_transit)
    out = []
    for constraint, mode in constraints:
        unmanaged = _unread(constraint)
        if unmanaged is None:
            continue  # does not compile here: `Unjudged` names it once for the project
        if unmanaged and method == "UPDATE" and constraint.applies_to(TOPIC, method):
            cid = constraint.constraint_id
            out.append(_diagnostic(
                desired, gate.severity(Why.NOT_READ, mode, cid, f"{cid} on {rc.address}"),
                NOT_CHECKED,
                f"custom constraint {cid} ({mode}) reads "
                f"{', '.join('resource.' + f for f in unmanaged)} of {rc.address}, which "
                "reconcile does not manage and the plan does not read, so the UpdateTopic "
                "was not judged against it" + gate.note(Why.NOT_READ, mode, cid),
                ALLOW_HINT,
            ))
            continue
        judgement = judge(constraint, after, method, before)
        if judgement is None or judgement.verdict is Verdict.ALLOWED:
            continue
        out.append(_refusal(judgement, mode, rc.address, desired, after, method, gate))
    return out


def _unread(constraint: CustomConstraint) -> list[str] | None:
    """The fields the constraint's condition reads that a plan does not read of a live
    topic (orgpolicy/cel/resource.py LIVE_FIELDS); None when the condition does not compile
    here (`Unjudged` names it)."""
    try:
        reads = condition_for(constraint).reads
    except ConditionError:
        return None
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
    never stops the plan. So are those that bind updates too, on a topic the plan makes
    no call to (a call is judged by `judge_change`). A condition that reads a field the
    plan does not read, or that cannot be evaluated, says nothing here: nothing is
    refused either way."""
    if live is None or rc.action not in ("update", "no-op"):
        return []
    untouched = _binding_updates(constraints) if rc.action == "no-op" else []
    if not untouched and not _create_only(constraints):
        return []
    _, after, before = resources(rc, desired, live, owner, org_enforces_in_transit)
    standing = after if rc.action == "update" or before is None else before
    out = []
    for constraint in standing_refusals(standing, constraints):
        out.append(_diagnostic(
            desired, Severity.WARNING, EXISTING_REFUSED,
            f"topic {rc.address} exists and breaks custom constraint "
            f"{describe(constraint)}, which binds only creation (methodTypes: CREATE): "
            f"the service judges none of the plan's calls by it, and the plan leaves the "
            f"topic so; the condition sees {seen(standing, condition_for(constraint).reads)}",
            f"to comply, {fix_hint(constraint)}", condition_for(constraint).reads,
        ))
    for constraint in _refusing(standing, untouched, "UPDATE"):
        out.append(_diagnostic(
            desired, Severity.WARNING, EXISTING_REFUSED,
            f"topic {rc.address} exists and breaks custom constraint "
            f"{describe(constraint)}, which binds updates too: the plan makes no call to "
            "the topic, so nothing is refused now, but the service refuses any change of "
            "it that does not fix this; the condition sees "
            f"{seen(standing, condition_for(constraint).reads)}",
            f"to comply, {fix_hint(constraint)}", condition_for(constraint).reads,
        ))
    return out


def _binding_updates(
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
) -> list[CustomConstraint]:
    """The enforced constraints that judge a topic's UpdateTopic."""
    return [c for c, mode in constraints if mode == "enforced" and c.applies_to(TOPIC, "UPDATE")]


def _create_only(
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
) -> list[CustomConstraint]:
    """The enforced constraints that bind only a topic's creation."""
    return [
        c for c, mode in constraints
        if mode == "enforced" and c.applies_to(TOPIC, "CREATE")
        and not c.applies_to(TOPIC, "UPDATE")
    ]


def standing_refusals(
    standing: Mapping[str, Any],
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
) -> list[CustomConstraint]:
    """The enforced constraints binding only creation that the topic `standing` (a
    topic that exists, as the plan leaves it) breaks, as a CreateTopic of it would be
    judged; a condition that reads a field the plan does not read, or that does not
    compile or cannot be evaluated, refuses nothing here. The one rule for the plan's
    `existing-custom-constraint` and the marks `import` writes for it."""
    return _refusing(standing, _create_only(constraints), "CREATE")


def _refusing(
    standing: Mapping[str, Any], constraints: Sequence[CustomConstraint], method: str
) -> list[CustomConstraint]:
    """Those of `constraints` that refuse the topic `standing` as a `method` call of it
    would be judged; one that reads a field the plan does not read, or that does not
    compile or cannot be evaluated, refuses nothing here."""
    out = []
    for constraint in constraints:
        if _unread(constraint) != []:
            continue  # a field the plan does not read, or a condition that does not compile
        judgement = judge(constraint, dict(standing), method)
        if judgement is not None and judgement.verdict is Verdict.REFUSED:
            out.append(constraint)
    return out


def adopted_resource(live: ObservedTopic, owner: str) -> dict[str, Any]:
    """The live topic as the UpdateTopic of a plan that adopts it leaves it: its
    ownership labels set (`ownership.ownership_labels`) with the plan marker apply
    stamps, nothing else changed (what a plan after `import` sends)."""
    shape = live.shape
    labels = {
        **shape.labels, **ownership_labels(owner), PLAN_LABEL: PLAN_MARKER_PLACEHOLDER
    }
    return topic_resource(
        live.name, labels, shape.policy, shape.settings(), shape.unmanaged_json
    )


def adoption_refusals(
    live: ObservedTopic,
    constraints: Sequence[tuple[CustomConstraint, Enforcement]],
    owner: str,
) -> list[CustomConstraint]:
    """The enforced constraints restricting UPDATE that refuse the UpdateTopic which
    adopts `live` (`adopted_resource`): the topic breaks them already and its
    ownership labels do not fix that, so the service refuses the call, and the plan
    (`judge_change`, the same judgement) says org-custom-constraint. A condition that
    reads a field the plan does not read, or that does not compile, refuses nothing
    here (the plan says it was not judged)."""
    before = shape_resource(live.name, live.shape)
    after = adopted_resource(live, owner)
    out = []
    for constraint, mode in constraints:
        if mode != "enforced" or _unread(constraint) != []:
            continue
        judgement = judge(constraint, after, "UPDATE", before)
        if judgement is not None and judgement.verdict is Verdict.REFUSED:
            out.append(constraint)
    return out


def _refusal(
    judgement: Judgement, mode: Enforcement, address: str, desired: DesiredTopic,
    after: dict[str, Any], method: str, gate: Gate,
) -> Diagnostic:
    constraint = judgement.constraint
    call = "CreateTopic" if method == "CREATE" else "UpdateTopic"
    dry_run = mode == "dry-run"
    severity = Severity.WARNING if dry_run else Severity.ERROR
    if judgement.verdict is Verdict.UNDECIDED:
        cid = constraint.constraint_id
        return _diagnostic(
            desired, gate.severity(Why.UNEVALUABLE, mode, cid, f"{cid} on {address}"),
            Why.UNEVALUABLE.code,
            f"custom constraint {cid} cannot be evaluated on the "
            f"{call} of {address}: {judgement.outcome.reason}; reconcile cannot tell "
            "whether the service would accept it"
            + (" (the constraint is in dry run: it would only log)" if dry_run else "")
            + gate.note(Why.UNEVALUABLE, mode, cid),
            unevaluable_hint(judgement.outcome, in_spec=False),
        )
    consequence = (
        "the constraint is in dry run for the project: the service would log it and go "
        "ahead" if dry_run else f"the service would refuse the {call} with FAILED_PRECONDITION"
    )
    reads = condition_for(constraint).reads
    values = seen(after, reads)
    if judgement.already_violating:
        return _diagnostic(
            desired, severity, REFUSED,
            f"topic {address} already violates custom constraint {describe(constraint)}, "
            "and the service refuses changing a topic while it does unless the change "
            f"fixes it; after this change the condition still sees {values}; {consequence}",
            f"include the fix in the change: {fix_hint(constraint)}", reads,
        )
    return _diagnostic(
        desired, severity, REFUSED,
        f"the {call} of {address} breaks custom constraint {describe(constraint)}; the "
        f"condition would see {values}; {consequence}",
        fix_hint(constraint), reads,
    )


def _diagnostic(
    desired: DesiredTopic, severity: Severity, code: str, message: str, hint: str,
    reads: tuple[str, ...] = (),
) -> Diagnostic:
    """At the topic's start, or, for a verdict the condition's `reads` decided, where
    validate places it: the first of them the topic's document declares, else its
    name (the file read again: topics a plan reports on are few)."""
    file, line, col = desired.file or desired.address, desired.line, 1 if desired.line else 0
    doc = topic_document(desired.file, desired.line) if reads else None
    if doc is not None:
        mark = doc.mark_for(deciding_path(specific(reads), doc))
        line, col = mark.line, mark.col
    return Diagnostic(file, line, col, severity, code, message, hint, topic=desired.address)


class Unjudged:
    """What a plan could not judge, said once per project (and constraint) rather than
    once per topic: a project whose custom constraints are not known
    (`Observation.custom_unknown`), and each constraint of a project whose condition
    reconcile's CEL library cannot compile. Only the calls the plan makes count (a
    custom constraint judges a CreateTopic or an UpdateTopic, nothing else): a
    project whose topics need no call has nothing to judge."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        # project -> the topics whose call the plan makes, with the method
        self._calls: dict[str, list[tuple[DesiredTopic, str]]] = {}

    def call(self, rc: ResourceChange, desired: DesiredTopic) -> None:
        """Note a call the plan makes (a create or an update)."""
        if rc.action in ("create", "update"):
            method = "CREATE" if rc.action == "create" else "UPDATE"
            self._calls.setdefault(desired.project, []).append((desired, method))

    def findings(self, observation: Observation) -> list[Diagnostic]:
        out = []
        for project, calls in sorted(self._calls.items()):
            unknown = observation.custom_unknown(project)
            if unknown is not None:
                out.append(self._unknown(project, calls, unknown, observation))
                continue
            for constraint, mode in observation.custom.get(project, ()):
                error = compile_error(constraint)
                if error is None:
                    continue
                concerned = [(t, m) for t, m in calls if constraint.applies_to(TOPIC, m)]
                if concerned:
                    out.append(self._uncompilable(project, constraint, mode, error, concerned))
        return out

    def summary(
        self, observation: Observation, projects: Sequence[str]
    ) -> dict[str, ProjectConstraints]:
        """What the plan records per project: the custom constraints in effect it
        judged, and those it could not, with why (projects with neither left out)."""
        out = {}
        for project in sorted(projects):
            unknown = observation.custom_unknown(project)
            judged, not_judged = [], []
            if unknown is not None:
                not_judged.append(f"all: {unknown}")
            for constraint, mode in observation.custom.get(project, ()):
                error = compile_error(constraint)
                name = f"{constraint.constraint_id} ({mode})"
                if error is None:
                    judged.append(name)
                else:
                    not_judged.append(f"{name}: its condition {_why_not(error)}")
            if judged or not_judged:
                out[project] = ProjectConstraints(tuple(judged), tuple(not_judged))
        return out

    def _unknown(
        self, project: str, calls: list[tuple[DesiredTopic, str]], why: str,
        observation: Observation,
    ) -> Diagnostic:
        failed = project in observation.custom_unavailable
        reason = Why.UNREADABLE if failed else Why.NO_ANCESTRY
        what = f"the custom constraints of project {project}"
        severity = self.gate.severity(reason, None, None, what)
        if failed:
            hint = (
                "grant the reader roles/orgpolicy.policyViewer on the organization, which "
                f"lets it list the custom constraints, and plan again; {ALLOW_HINT}"
            )
        else:
            hint = _placing_hint(project, observation) + f"; {ALLOW_HINT}"
        return _diagnostic(
            calls[0][0], severity, reason.code,
            f"custom constraints not judged for project {project}: {why}, so they were "
            f"not read and none was judged on the {_calls(calls)} this plan makes (one "
            "the organization enforces would refuse a call only at apply)"
            + self.gate.note(reason, None, None),
            hint,
        )

    def _uncompilable(
        self, project: str, constraint: CustomConstraint, mode: Enforcement,
        error: ConditionError, calls: list[tuple[DesiredTopic, str]],
    ) -> Diagnostic:
        cid = constraint.constraint_id
        severity = self.gate.severity(Why.UNCOMPILABLE, mode, cid, f"{cid} in {project}")
        return _diagnostic(
            calls[0][0], severity, Why.UNCOMPILABLE.code,
            f"custom constraint {cid} ({mode} in project {project}) was not judged on the "
            f"{_calls(calls)} this plan makes: its condition {_why_not(error)}"
            + self.gate.note(Why.UNCOMPILABLE, mode, cid),
            uncompilable_hint(error),
        )


def _placing_hint(project: str, observation: Observation) -> str:
    """How to let the plan learn where `project` sits: from what it read that."""
    info = observation.service
    if info.org_policy == "snapshot":
        return (
            f"place the project in the snapshot's `ancestry:` ({info.snapshot}): "
            f"`projects/{project}: organizations/ORG`, or `projects/{project}: none` for "
            f"one in no organization (`reconcile policy pull --project {project}` writes "
            "it as Resource Manager states it)"
        )
    return (
        "let the plan's account read where the project sits in Resource Manager "
        "(resourcemanager.projects.get on it and resourcemanager.folders.get on the "
        "folders above it: roles/browser), and plan again"
    )


def _why_not(error: ConditionError) -> str:
    return (
        f"uses what reconcile's CEL library does not have ({error.message}, "
        f"{error.place})"
        if error.unsupported else
        f"does not compile ({error.message}, {error.place})"
    )


def _calls(calls: list[tuple[DesiredTopic, str]]) -> str:
    """`CreateTopic of projects/P/topics/T` / `3 calls (projects/P/topics/a, ...)`."""
    if len(calls) == 1:
        topic, method = calls[0]
        return f"{'CreateTopic' if method == 'CREATE' else 'UpdateTopic'} of {topic.address}"
    names = [t.address for t, _ in calls]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(calls)} calls ({shown})"
