"""Make a plan: the specs against an observation of the live state, checked against the
live org policy, diffed. No I/O: everything was read before (plan/observe.py).

    make_plan(desired, observation, options, validation=()) -> Plan

Shared by `plan` and `apply PATH...`. The caller validated the tree first and passes
what validation reported (`validation`, warnings only: a tree with errors is never
planned); the plan's `diagnostics` are those, then what the live org policy adds (not
said twice). A plan with an error there (the specs break the live org policy:
spec/orgrules.py) must not be applied: `Plan.has_errors`. The org policy is whatever
the target was opened with (snapshot or API), and what the service can do is what it
states (`Observation.service`: Google's emulator computes no storage policy, so
`inherit` is not planned there). The plan is built whole and then only read: nothing
is assigned to it after this function returns.

Ownership (docs/cli.md): the plan records the tree's owner; its creates and
adoptions label the topics with it, a topic another tree owns is planned with a
warning (apply refuses it unless told `--adopt-from`), `--prune` deletes only
undeclared topics of this owner, and one labelled by a reconcile before owners is left
alone with a warning saying how to claim it, as is one another tool labels as its own
(Terraform, Config Connector: plan/othertopics.py), which is also named, with a
warning, when the plan adopts or manages it. A change that would put a topic over the
service's 64 labels is an error, not planned.

Fingerprints (what `apply PLANFILE` re-checks): `topics` has every declared address and
every topic planned for deletion, each `observation.topic_fingerprint(live or None)`;
`org_policy` has each named project's `observation.org_fingerprint(OrgInputs, custom)`,
and `organizations` each project's organization whose custom constraints were read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from reconciler.acceptance import AcceptedDiagnostic, seen_by_plan, settle
from reconciler.adoption import import_command, topic_id
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.names import split_topic_name
from reconciler.orgpolicy.unjudged import Gate
from reconciler.ownership import (
    DEFAULT_OWNER,
    OWNER_LABEL,
    OWNERSHIP_LABEL,
    OWNERSHIP_VALUE,
)
from reconciler.plan import differ
from reconciler.plan.consumers import consumer_step, outside_review, undeclared
from reconciler.plan.customcheck import Unjudged, existing_refusals, judge_change
from reconciler.plan.datapaths import path_verdicts
from reconciler.plan.model import Drift, Fingerprints, Plan, ResourceChange
from reconciler.plan.observation import (
    Observation,
    org_fingerprint,
    org_parts,
    topic_fingerprint,
)
from reconciler.plan.orgcheck import OrgCheck
from reconciler.plan.origin import made_at
from reconciler.plan.othertopics import (
    keep_from_prune,
    other_tool_warnings,
    undeclared_tools_note,
)
from reconciler.plan.staleness import stale_ancestry_warning, stale_warning
from reconciler.plan.tagcheck import tags_finding
from reconciler.spec.customrules import AT_PLAN, REFUSED, UNEVALUABLE
from reconciler.spec.desired import DesiredState, DesiredTopic, Owner, StorageIntent
from reconciler.spec.orgrules import PLAN_DECIDES, promote_inferred


@dataclass(frozen=True)
class PlanOptions:
    """How to plan. `prune`: delete this tree's undeclared topics; `prune_subscribed`:
    those with subscriptions too (plan/consumers.py); `strict_groups`: refusals resting
    on inferred value-group membership are errors (spec/orgrules.py); `projects`: the
    --project filter the desired state was narrowed to (recorded in the plan)."""

    prune: bool = False
    prune_subscribed: bool = False
    strict_groups: bool = False
    projects: Sequence[str] = ()


def make_plan(
    desired: DesiredState,
    observation: Observation,
    options: PlanOptions = PlanOptions(),
    validation: Iterable[Diagnostic] = (),
    gate: Gate | None = None,
) -> Plan:
    """One plan over every project the specs name, made once and complete.
    `validation`: what validation already reported, kept first in the plan's
    diagnostics and not repeated, but for what it left to plan (the topic may exist):
    the plan's own verdict on it, from the live topic, takes its place. `gate`: how
    custom constraints that could not be judged are treated
    (reconciler/orgpolicy/unjudged.py: errors, unless --allow-unjudged lets them
    through; the run's gate, which validation used too: its report of the opt-out ends
    the diagnostics)."""
    gate = gate if gate is not None else Gate(live=True)
    unjudged = Unjudged(gate)
    planned = set(desired.projects)
    diagnostics = [d for d in validation if not _decided_here(d, planned, observation)]
    already = {(d.file, d.code, d.message) for d in diagnostics}
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    changes: list[ResourceChange] = []
    drifts: list[Drift] = []
    topic_prints: dict[str, str] = {}
    info = observation.service
    owner = desired.owner
    left_alone: list[DesiredTopic] = []
    org = OrgCheck()
    for topic in sorted(desired.topics, key=lambda t: t.address):
        facts = observation.facts(topic.project)
        live = observation.topics.get(topic.address)
        topic_prints[topic.address] = topic_fingerprint(live)
        diffed = topic
        if not info.computes_storage_policy and topic.storage.mode == "inherit":
            diffed = replace(topic, storage=StorageIntent("unmanaged"))
        change = differ.diff_topic(diffed, live, facts, owner.name)
        problems = org.verdicts(topic, facts, live, change)
        problems += path_verdicts(topic, facts, live, change, observation.subscriptions_of)
        if problems:  # rare: the common case skips two generators a topic
            diagnostics.extend(d for d in problems if (d.file, d.code, d.message) not in already)
            if any(d.is_error for d in problems):
                continue
        if diffed is not topic:
            left_alone.append(topic)
        over = differ.label_budget(topic, change)
        if over is not None:  # the service would refuse the call: not planned
            diagnostics.append(over)
            continue
        unjudged.call(change, topic)
        constraints = observation.custom.get(topic.project)
        if constraints:
            judged = judge_change(
                change, topic, live, constraints, owner.name, facts.enforce_in_transit, gate
            )
            diagnostics.extend(judged)
            # The service would refuse the call: not planned. A constraint the plan
            # could not judge on it (org-custom-not-checked, -unevaluable) fails the
            # plan without being a refusal: the topic's other findings are still said.
            if any(d.is_error and d.code == REFUSED for d in judged):
                continue
            diagnostics.extend(existing_refusals(
                change, topic, live, constraints, owner.name, facts.enforce_in_transit
            ))
        if (other := differ.taken_from(change)) is not None:
            diagnostics.append(takeover_warning(topic, other, owner))
        diagnostics.extend(other_tool_warnings(topic, live))
        if live is not None and topic.tags:
            tagged = tags_finding(topic, observation.tag_bindings.get(topic.address))
            if tagged is not None:
                diagnostics.append(tagged)
        changes.append(change)
        if live is not None and topic.storage.mode == "unmanaged":
            drift = differ.unmanaged_drift(topic, live, facts)
            if drift is not None:
                drifts.append(drift)
    owned, legacy = undeclared(desired, observation)
    owned, tools_topics = keep_from_prune(owned)
    if options.prune:
        diagnostics.extend(legacy_warning(name, owner) for name in legacy)
        diagnostics.extend(tools_topics)
    diagnostics.extend(
        undeclared_warning(
            project, names, undeclared_tools_note(observation.topics[n] for n in names)
        )
        for project, names in outside_review(desired, observation).items()
    )
    step = consumer_step(
        changes, {t.address: t for t in desired.topics}, owned, observation, owner,
        options.prune, options.prune_subscribed,
    )
    changes = step.changes
    diagnostics.extend(step.diagnostics)
    for rc in step.deletes:
        topic_prints[rc.address] = topic_fingerprint(observation.topics[rc.address])
        changes.append(rc)
    diagnostics.extend(unjudged.findings(observation))
    if left_alone:
        diagnostics.append(emulator_inherit_warning(left_alone))
    for project, found in sorted(observation.stale.items()):
        diagnostics.append(stale_warning(observation.snapshot_file, project, found))
    for project, (line, text) in sorted(observation.stale_ancestry.items()):
        diagnostics.append(
            stale_ancestry_warning(observation.snapshot_file, line, project, text)
        )
    org_prints = {
        p: org_fingerprint(inputs, observation.custom.get(p, ()), observation.hierarchy.get(p))
        for p, inputs in sorted(observation.org.items())
    }
    if options.strict_groups:
        diagnostics = promote_inferred(diagnostics)
    known = None if any(observation.custom_unknown(p) for p in planned) else [
        c.constraint_id for found in observation.custom.values() for c, _ in found
    ]
    report = gate.report(known=known, known_as="in effect for the projects planned")
    if report is not None:
        diagnostics.append(report)
    diagnostics, drifts, accepted = _settled(diagnostics, drifts, desired)
    return Plan(
        owner=owner.name,
        resource_changes=changes,
        diagnostics=diagnostics,
        accepted=accepted,
        drift=drifts,
        fingerprints=Fingerprints(
            topic_prints, org_prints, dict(sorted(observation.organizations.items())) or None,
            org_policy_parts={
                p: org_parts(inputs, observation.custom.get(p, ()), observation.hierarchy.get(p))
                for p, inputs in sorted(observation.org.items())
            } or None,
        ),
        target=made_at(info),
        prune=options.prune,
        created_at=created_at,
        projects=sorted(set(options.projects)),
        custom_constraints=unjudged.summary(observation, desired.projects),
    )


def _decided_here(d: Diagnostic, planned: set[str], observation: Observation) -> bool:
    """A finding validation left to plan (the topic may exist) that a plan decides
    again from the live topic: this one for the topics it plans, the plan of its own
    project for a topic of a project this one leaves out (--project). A custom
    constraint's verdict from the snapshot is the plan's to give wherever it read the
    project's constraints live (the snapshot may say dry run where the live policy
    enforces: the live verdict stands alone).
    Validate's note that a custom constraint reads fields only the live topics have
    (AT_PLAN, "run `reconcile plan` to see its verdict") is never a plan's: the plan
    judges the constraint on each live topic, or says why it could not."""
    if d.code == AT_PLAN:
        return True
    split = split_topic_name(d.topic) if d.topic is not None else None
    if split is None:
        return False
    if d.code in (REFUSED, UNEVALUABLE) and split[0] in planned:
        # A custom constraint's verdict from the snapshot (a dry run, one binding only
        # creation), where the plan judged the project's constraints as they are live.
        return bool(observation.custom.get(split[0]))
    return PLAN_DECIDES in d.message


def takeover_warning(topic: DesiredTopic, other: str, owner: Owner) -> Diagnostic:
    """A declared topic that another spec tree owns: planned (so the reviewer sees it),
    and refused by apply unless it is told `--adopt-from OTHER`."""
    return Diagnostic(
        topic.file or topic.address, topic.line, 1 if topic.line else 0,
        Severity.WARNING, "owned-by-another-tree",
        f"{topic.address} is owned by the spec tree {other!r} ({OWNER_LABEL}={other}), "
        f"not by this one ({owner.name!r}, {owner.where()}); applying this plan takes it "
        f"over, so apply refuses unless given --adopt-from {other}",
        hint=takeover_hint([other], owner.name, "it"),
        topic=topic.address,
    )


def takeover_hint(others: Sequence[str], owner: str, them: str = "them") -> str:
    """What to do about topics owned by `others` that this tree (`owner`) declares:
    the plan's warning and apply's refusal say it alike. Owner `default` is no other
    tree in particular: it is what a tree without an Owner document applies as,
    usually this very tree before its Owner document named it, whose topics need only
    be adopted (there are no other specs to remove them from)."""
    flags = " ".join(f"--adopt-from {o}" for o in others)
    named = [o for o in others if o != DEFAULT_OWNER]
    steps = []
    if DEFAULT_OWNER in others:
        steps.append(
            f"owner {DEFAULT_OWNER!r} is any tree without an Owner document: if that was "
            f"this tree before its Owner document named it {owner!r}, there is nothing to "
            f"remove anywhere, apply with {flags} to move {them} to {owner!r}"
            + ("" if named else "; if it is another tree, remove "
               f"{them} from its specs first")
        )
    if named:
        listed = ", ".join(repr(o) for o in named)
        steps.append(
            f"if this tree takes {them} over, remove {them} from the specs of {listed} "
            f"and apply with {flags}"
        )
    return "; ".join(steps) + f"; otherwise remove {them} from this tree's specs"


def undeclared_warning(project: str, names: list[str], tools: str = "") -> Diagnostic:
    """A managed project's live topics that no spec declares and no tree owns: named
    (a compliance review must see topics made outside it), never planned as changes;
    `tools`: which of them another tool labels as its own (plan/othertopics.py)."""
    n = len(names)
    return Diagnostic(
        f"projects/{project}", 0, 0, Severity.WARNING, "undeclared-topics",
        f"{n} live topic{'s' if n != 1 else ''} in project {project} that no spec declares "
        f"(not planned; `reconcile residency --all-live` reports where their messages are "
        f"stored): {', '.join(topic_id(x) for x in names)}{tools}",
        hint=f"adopt them with `{import_command(project, names)}` and move the file into "
        "the spec tree, or delete them if they should not exist",
    )


def legacy_warning(address: str, owner: Owner) -> Diagnostic:
    """An undeclared topic labelled by a reconcile before owners: `--prune` cannot tell
    which tree it belonged to, so it is left alone, and the plan says how to claim it."""
    split = split_topic_name(address)
    project, topic = split if split is not None else ("PROJECT", address)
    return Diagnostic(
        address, 0, 0, Severity.WARNING, "prune-unowned",
        f"not pruned: {address} carries {OWNERSHIP_LABEL}={OWNERSHIP_VALUE} from a "
        f"reconcile before owners but no {OWNER_LABEL}, so it may belong to another spec "
        f"tree; --prune deletes only topics of this tree ({owner.name!r})",
        hint=f"to let this tree prune it, claim it: `gcloud pubsub topics update {topic} "
        f"--project {project} --update-labels={OWNER_LABEL}={owner.name}` (or declare it, "
        "apply, then remove it from the specs); to keep it, nothing to do",
        topic=address,
    )


def emulator_inherit_warning(topics: list[DesiredTopic]) -> Diagnostic:
    """One warning for every `inherit` topic on Google's emulator, instead of an update
    that the emulator can neither perform nor reflect (placed on the first of them)."""
    first = topics[0]
    addresses = [t.address for t in topics]
    more = f" and {len(addresses) - 5} more" if len(addresses) > 5 else ""
    named = ", ".join(addresses[:5]) + more
    return Diagnostic(
        first.file or first.address, first.line, 1 if first.line else 0,
        Severity.WARNING, "emulator-no-storage-policy",
        f"Google's Pub/Sub emulator computes no message storage policy from the org "
        f"policy, so `messageStoragePolicy: inherit` is not planned there ({named}); "
        "use --local to see what the org policy makes of these topics",
    )


def _settled(
    diagnostics: list[Diagnostic], drifts: list[Drift], desired: DesiredState
) -> tuple[list[Diagnostic], list[Drift], list[AcceptedDiagnostic]]:
    """The tree's acceptances applied (reconciler/acceptance.py) to the diagnostics and
    the drift (as findings at the line that declares each topic): (the diagnostics,
    the drift not accepted, the accepted findings); an unused acceptance is reported
    only where this plan could have seen its finding (its project planned)."""
    if not desired.acceptances:
        return diagnostics, drifts, []
    declared = {t.address: (t.file, t.line) for t in desired.topics}
    drifting = {id(f): f for f in (d.finding(*declared.get(d.address, ("", 0))) for d in drifts)}
    projects = set(desired.projects)
    settled = settle(
        [*diagnostics, *drifting.values()], desired.acceptances,
        lambda a: seen_by_plan(a, projects),
    )
    accepted = [d for d in settled if isinstance(d, AcceptedDiagnostic)]
    gone = {(d.topic, d.code) for d in accepted if d.code.startswith("drift-")}
    return (
        [d for d in settled if not isinstance(d, AcceptedDiagnostic) and id(d) not in drifting],
        [d for d in drifts if (d.address, f"drift-{d.category}") not in gone],
        accepted,
    )
