"""The organization's custom constraints on every declared topic, judged as the
service would judge reconcile's CreateTopic (`reconciler.orgpolicy.cel`, the evaluator
`plan` and the local server use: `ConstraintSet.objections`, whose verdicts are
`judge`'s).

    CustomRules(store, owner, diags, gate)  only for a snapshot with custom constraints
    rules.check(topic, located)             note one declared topic
    rules.finish()                          judge them; the once-per-constraint notes

For each constraint the project enforces (or dry-runs: then a warning) on topics:

- a refusal is an error at the spec line of the field that decided it (the deepest
  field the condition reads, or the nearest part of the document that declares it),
  naming the topic, the constraint, its description and the values the condition
  saw;
- a condition reading a field the spec does not manage (`spec/resource.py`) cannot
  be decided from the spec: the live topic decides it, so `plan` judges it; one
  warning per constraint says so, naming how many topics it concerns;
- a condition the evaluator cannot evaluate on the topic is an error naming the
  constraint and why, never a silent pass (a warning where `--allow-unjudged` lets
  it through: reconciler/orgpolicy/unjudged.py);
- a condition reconcile's CEL library cannot compile is skipped here: the snapshot's
  reader names it once per project that enforces it (validate), the plan once per
  project it makes calls in;
- a constraint that binds only creation (methodTypes CREATE only) refuses a new topic
  and no change of one that exists, and nothing offline says whether the topic
  exists: its refusal is a warning that says `plan` decides (spec/orgrules.py's
  PLAN_DECIDES), and `plan` refuses a new topic and reports an existing one
  (plan/customcheck.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reconciler.diagnostics import Diagnostic, Diagnostics, Severity
from reconciler.orgpolicy.cel import (
    TIMESTAMP_FIELDS,
    Condition,
    ConditionError,
    ConstraintSet,
    Judgement,
    Outcome,
    Verdict,
    condition_for,
    outermost,
    project,
)
from reconciler.orgpolicy.cel.resource import STORAGE
from reconciler.orgpolicy.custom import TOPIC, CustomConstraint
from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT
from reconciler.orgpolicy.store import Enforcement, PolicyStore
from reconciler.orgpolicy.unjudged import Gate, Why
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.documents import TopicDoc
from reconciler.spec.orgrules import PLAN_DECIDES
from reconciler.spec.resource import declared_resource, managed_fields
from reconciler.spec.tree import Located
from reconciler.topicfields import SENT
from reconciler.yamlio import Document, PathKey

REFUSED = "org-custom-constraint"
EXISTING_REFUSED = "existing-custom-constraint"  # plan/customcheck.py
UNEVALUABLE = Why.UNEVALUABLE.code
AT_PLAN = Why.AT_PLAN.code
NAME: PathKey = ("metadata", "name")
# Where in a Topic document each resource field, and each member a condition may read
# of one, is declared (the table's REST names: a spec key is the same word).
SPEC_PATHS: dict[str, PathKey] = {
    "name": NAME,
    **{f.rest: f.spec_path for f in SENT},
    **{f"{f.rest}.{part}": (*f.spec_path, part) for f in SENT for part in f.parts},
}


# A constraint the project enforces or dry-runs, its condition, and the top-level
# resource fields the condition reads.
_Applicable = tuple[CustomConstraint, Enforcement, Condition, frozenset[str]]


# A storage policy declared `inherit` is sent as none, and the service computes one: a
# topic that exists has its live policy, so a condition reading it is plan's to judge.
_INHERIT_NOTE = (
    " (or leave to the service: `messageStoragePolicy: inherit`; plan judges a new "
    "topic's CreateTopic without one)"
)


def _reads_storage(fields: Iterable[str]) -> bool:
    return any(f.split(".")[0] == STORAGE for f in fields)


@dataclass
class _Group:
    """A project's constraints, as they judge its topics whose specs manage the same
    fields. The constraints reading a field the specs leave unmanaged are left to
    plan; of the others, those that do not read the name (`shared`: the evaluator
    remembers their objections by the values they read, which most topics share) are
    judged during the walk, those that read it (`own`) after it, all topics back to
    back."""

    modes: dict[str, Enforcement]  # by constraint name
    deferred: list[tuple[CustomConstraint, frozenset[str]]]  # with the unmanaged fields
    shared: ConstraintSet | None
    own: ConstraintSet | None
    own_reads: tuple[str, ...]  # what the others read: all of a topic they keep


@dataclass
class _Deferred:
    """A constraint whose condition reads fields the specs leave unmanaged."""

    fields: set[str] = field(default_factory=set)
    topics: int = 0
    first: Diagnostic | None = None  # where the note goes: the first such topic
    inherit: bool = False  # a topic among them declares `messageStoragePolicy: inherit`


def spec_path(read: str, doc: Document) -> PathKey:
    """The document path that declares resource field `read` (`labels.team`: that
    label), or the nearest enclosing one the document declares (`inherit` for the
    regions of a storage policy it leaves to the org), or the topic's name when the
    document declares none of it (it came from a Defaults document, or the resource
    itself was read)."""
    head, _, rest = read.partition(".")
    path = SPEC_PATHS.get(read)
    if path is None and head == "labels" and rest:
        path = ("spec", "labels", rest.split(".", 1)[0])
    if path is None:
        path = SPEC_PATHS.get(head, NAME)
    while len(path) >= 2:  # the nearest part the document declares, below `spec`
        if path in doc.positions().values or path in doc.positions().keys:
            return path
        path = path[:-1]
    return NAME


def deciding_path(reads: tuple[str, ...], doc: Document) -> PathKey:
    """Where to point for a verdict that `reads` decided: the first of them the
    document declares (`spec_path`), else the topic's name."""
    return next((p for r in reads if (p := spec_path(r, doc)) != NAME), NAME)


def specific(reads: tuple[str, ...]) -> tuple[str, ...]:
    """The reads no other read goes deeper into (`has(resource.a) && resource.a.b`
    reads a.b: that is the value to show and the line to point at)."""
    return tuple(
        r for r in reads
        if not any(o != r and (o.startswith(r + ".") or (not r and o)) for o in reads)
    )


def seen(resource: dict[str, Any], reads: tuple[str, ...]) -> str:
    """`resource.F = VALUE` for each field the condition reads (the deepest reads
    only), as JSON ("not set" for an absent one)."""
    parts = []
    for read in specific(reads):
        value: Any = resource
        for part in read.split(".") if read else ():
            value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                break
        shown = "not set" if value is None else json.dumps(value, sort_keys=True)
        parts.append(f"resource{'.' + read if read else ''} = {shown}")
    # A condition that reads nothing (`false`, `true`): its verdict is the same for
    # every topic, and "the condition saw" is followed by that, not by nothing.
    return "; ".join(parts) or "no field of the topic (it reads none)"


def create_only(constraint: CustomConstraint) -> bool:
    """The constraint judges CreateTopic and no UpdateTopic."""
    return "UPDATE" not in constraint.method_types


def left_to_plan(existing: str) -> str:
    """What a create-only constraint's refusal says in `validate`: plan decides
    (`existing`: what plan does with a topic that exists)."""
    return (
        f" [{PLAN_DECIDES}: the constraint binds only a topic's creation: plan refuses "
        f"a new topic before any call, and {existing}]"
    )


def describe(constraint: CustomConstraint) -> str:
    """`custom.NAME` with its display name and description, for messages."""
    text = constraint.constraint_id
    if constraint.display_name:
        text += f" ({constraint.display_name})"
    if constraint.description:
        text += f": {json.dumps(constraint.description)}"
    return text


def fix_hint(constraint: CustomConstraint) -> str:
    """What to change: the condition must hold (ALLOW) or must not (DENY)."""
    must = "hold" if constraint.action_type == "ALLOW" else "not hold"
    return (
        f"change the topic so that the condition `{constraint.condition}` does {must}, "
        "or have the organization's policy administrators exempt the project"
    )


def unevaluable_hint(outcome: Outcome, *, in_spec: bool) -> str:
    """What to do about a condition that could not be evaluated: write it so that the
    service's undocumented presentation of a Duration/Timestamp field does not decide
    (an explicit conversion reads the same either way), or guard a field the topic
    does not set (`in_spec`: declaring the field in the spec is a way too)."""
    if outcome.presentation:
        field = outcome.presentation[0]
        kind = "timestamp" if field in TIMESTAMP_FIELDS else "duration"
        return (
            f"write the condition so that its answer does not depend on how the service "
            f"presents resource.{field}: convert it explicitly, "
            f"{kind}(resource.{field}), which reads the same either way"
        )
    fields = " or ".join(outcome.missing) or "resource.FIELD"
    guard = f"guard {fields} with has() in the condition"
    return guard + (", or declare the field in the spec" if in_spec else "")


class CustomRules:
    """The custom-constraint checks of one validate run."""

    def __init__(
        self, store: PolicyStore, owner: str, diags: Diagnostics, gate: Gate | None = None
    ) -> None:
        self.store = store
        self.owner = owner
        self.diags = diags
        self.gate = gate if gate is not None else Gate()
        self._by_project: dict[str, list[_Applicable]] = {}
        self._in_transit: dict[str, bool] = {}
        self._groups: dict[tuple[str, frozenset[str]], _Group] = {}
        self._deferred: dict[str, _Deferred] = {}
        self._topics: list[tuple[DesiredTopic, Document]] = []  # to judge, in order

    def _constraints(self, project: str) -> list[_Applicable]:
        found = self._by_project.get(project)
        if found is None:
            parent = f"projects/{project}"
            found = []
            for c, mode in self.store.custom_constraints_for(parent, TOPIC):
                if "CREATE" in c.method_types:
                    try:
                        condition = condition_for(c)
                    except ConditionError:
                        continue  # named once per project by the snapshot's reader
                    heads = frozenset(r.split(".", 1)[0] for r in condition.reads)
                    found.append((c, mode, condition, heads))
            self._by_project[project] = found
            self._in_transit[project] = self.store.enforcement(ENFORCE_IN_TRANSIT, parent) == (
                "enforced"
            )
        return found

    def _group(self, project: str, managed: frozenset[str]) -> _Group:
        group = self._groups.get((project, managed))
        if group is None:
            constraints = self._constraints(project)
            judged = [a for a in constraints if a[3] <= managed]
            shared = [a for a in judged if not a[2].per_resource]
            own = [a for a in judged if a[2].per_resource]
            group = self._groups[(project, managed)] = _Group(
                modes={c.name: mode for c, mode, _, _ in constraints},
                deferred=[
                    (c, frozenset(r for r in condition.reads if r.split(".", 1)[0] not in managed))
                    for c, _, condition, heads in constraints if not heads <= managed
                ],
                shared=ConstraintSet(a[0] for a in shared) if shared else None,
                own=ConstraintSet(a[0] for a in own) if own else None,
                own_reads=outermost(r for a in own for r in a[2].reads),
            )
        return group

    def check(self, topic: DesiredTopic, located: Located[TopicDoc]) -> None:
        """Note the topic, for `finish` to judge."""
        if self._constraints(topic.project):
            self._topics.append((topic, located.doc))

    def _judge_all(self) -> None:
        """Every noted topic: first what its shared values decide (looked up, most
        of the time) and what is left to plan, then the conditions on the name, all
        topics one after another: the evaluator's calls run several times faster
        back to back than between other work (its code and data stay in the
        processor's caches: benchmarks/README.md)."""
        named: list[tuple[_Group, dict[str, Any], DesiredTopic, Document]] = []
        for topic, doc in self._topics:
            resource = declared_resource(
                topic, self.owner, org_enforces_in_transit=self._in_transit[topic.project]
            )
            kept = self._kept(topic)
            group = self._group(topic.project, managed_fields(topic))
            if group.shared is not None:
                for judgement in group.shared.objections(resource, "CREATE"):
                    self._object(judgement, group.modes, resource, topic, doc, kept)
            if group.own is not None:  # kept until then: only what they read
                named.append((group, project(resource, group.own_reads), topic, doc))
            for constraint, fields in group.deferred:
                self._defer(constraint, fields, topic, doc)
        self._topics.clear()
        for group, resource, topic, doc in named:
            assert group.own is not None
            for judgement in group.own.objections(resource, "CREATE"):
                self._object(judgement, group.modes, resource, topic, doc, self._kept(topic))

    def _kept(self, topic: DesiredTopic) -> dict[str, Any] | None:
        """The topic as an existing one that keeps the spec's `enforceInTransit: false`
        is after the plan's update, where the org's in-transit policy would make a new
        one's true (None where the two are the same): the plan keeps a live topic's
        value as written (existing-in-transit-off), so a constraint restricting UPDATE
        judges this resource, not the one CreateTopic would send. Only a written
        `false`: a spec that omits it has the plan turn it on (plan/policy.py
        `keeps_in_transit_off`), and the UPDATE check sees it on."""
        storage = topic.storage
        if not (self._in_transit[topic.project] and storage.mode == "explicit"
                and storage.enforce_in_transit is False):  # as plan/policy.py keeps it
            return None
        return declared_resource(topic, self.owner, org_enforces_in_transit=False)

    def _object(
        self, judgement: Judgement, modes: dict[str, Enforcement], resource: dict[str, Any],
        topic: DesiredTopic, doc: Document, kept: dict[str, Any] | None = None,
    ) -> None:
        constraint = judgement.constraint
        mode = modes[constraint.name]
        if judgement.verdict is Verdict.UNDECIDED:
            self._unevaluable(constraint, mode, judgement.outcome, topic, doc)
            return
        # Refused as a new topic; an existing one keeping its values may not be.
        existing_passes = kept is not None and not ConstraintSet([constraint]).objections(
            kept, "UPDATE"
        )
        self._refused(constraint, mode, condition_for(constraint), resource, topic, doc,
                      existing_passes=existing_passes)

    def _refused(
        self, constraint: CustomConstraint, mode: Enforcement, condition: Condition,
        resource: dict[str, Any], topic: DesiredTopic, doc: Document,
        *, existing_passes: bool = False,
    ) -> None:
        m = doc.mark_for(deciding_path(specific(condition.reads), doc))
        if mode == "dry-run":
            severity = Severity.WARNING
            consequence = (
                "the constraint is in dry run for the project: the service would log the "
                "violation and create the topic"
            )
        elif create_only(constraint):
            severity = Severity.WARNING
            consequence = (
                "the service would refuse CreateTopic with FAILED_PRECONDITION"
                + left_to_plan(f"reports an existing one as {EXISTING_REFUSED}")
            )
        elif existing_passes:
            severity = Severity.WARNING
            consequence = (
                "the service would refuse CreateTopic with FAILED_PRECONDITION (the org's "
                "in-transit policy makes a new topic's enforceInTransit true)"
                + left_to_plan(
                    "an existing topic that keeps enforceInTransit off, as this spec "
                    "writes it, passes the constraint's UPDATE check"
                )
            )
        else:
            severity = Severity.ERROR
            consequence = "the service would refuse CreateTopic with FAILED_PRECONDITION"
        self.diags.add(Diagnostic(
            doc.file, m.line, m.col, severity, REFUSED,
            f"topic {topic.address} breaks custom constraint {describe(constraint)}; the "
            f"condition saw {seen(resource, condition.reads)}; {consequence}",
            fix_hint(constraint), topic=topic.address,
        ))

    def _unevaluable(
        self, constraint: CustomConstraint, mode: Enforcement, outcome: Outcome,
        topic: DesiredTopic, doc: Document,
    ) -> None:
        # A field whose presentation decided is declared: point at it.
        m = doc.mark_for(deciding_path(outcome.presentation, doc))
        dry_run = mode == "dry-run"
        cid = constraint.constraint_id
        later = not dry_run and create_only(constraint)
        self.diags.add(Diagnostic(
            doc.file, m.line, m.col,
            Severity.WARNING if later else self.gate.severity(
                Why.UNEVALUABLE, mode, cid, f"{cid} on {topic.address}"
            ),
            UNEVALUABLE,
            f"custom constraint {cid} cannot be evaluated on topic "
            f"{topic.address}: {outcome.reason}; reconcile cannot tell whether the service "
            "would accept it" + (" (the constraint is in dry run: it would only log)"
                                 if dry_run else "")
            + (left_to_plan("the service judges no change of an existing one by it")
               if later else self.gate.note(Why.UNEVALUABLE, mode, cid)),
            unevaluable_hint(outcome, in_spec=True), topic=topic.address,
        ))

    def _defer(
        self, constraint: CustomConstraint, fields: frozenset[str], topic: DesiredTopic,
        doc: Document,
    ) -> None:
        deferred = self._deferred.get(constraint.constraint_id)
        if deferred is None:
            deferred = self._deferred[constraint.constraint_id] = _Deferred()
        deferred.fields |= fields
        deferred.topics += 1
        deferred.inherit |= topic.storage.mode == "inherit" and _reads_storage(fields)
        if deferred.first is None:
            m = doc.mark_for(NAME)
            deferred.first = Diagnostic(
                doc.file, m.line, m.col, Severity.WARNING, AT_PLAN, topic.address
            )

    def finish(self) -> None:
        """Judge the noted topics; one warning per constraint whose condition reads
        unmanaged fields."""
        self._judge_all()
        for constraint_id, deferred in sorted(self._deferred.items()):
            first = deferred.first
            assert first is not None
            fields = ", ".join(f"resource.{f}" for f in sorted(deferred.fields))
            others = deferred.topics - 1
            which = f"topic {first.message}" + (
                f" and {others} other topic{'s' if others != 1 else ''}" if others else ""
            )
            self.diags.add(Diagnostic(
                first.file, first.line, first.col, Severity.WARNING, AT_PLAN,
                f"custom constraint {constraint_id} reads {fields}, which the specs do "
                f"not manage{_INHERIT_NOTE if deferred.inherit else ''}, so it is "
                f"decided at plan time against each live topic ({which})",
                "run `reconcile plan` to see its verdict",
            ))
