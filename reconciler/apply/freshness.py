"""Is a saved plan still true? Re-read what it was made against and compare fingerprints.

A plan is a promise about specific live states; applying it after any of them moved
could undo someone's change or act on a policy that no longer holds. So every topic
the plan fingerprinted and every project's org policy inputs (the location,
in-transit and CMEK constraints, where the project sits in the hierarchy, and the
custom constraints on topics of its organization) are read again (the same reads
that planning makes: one ListTopics pager per project) and any difference refuses
the whole apply, before any mutating call.

Against Google Cloud there is no state of ours to say "this plan ran": apply leaves the
plan's marker on each topic it creates or updates (`reconcile-plan`, the first digits
of the plan's digest, set in the same call: apply/executor.py). The fingerprints cover
it like every label, so a plan replayed after its change was reverted (A -> B -> A) is
refused too, and the marker says why: the topic carries this plan's marker (already
applied) or another plan's that replaced the one it had when planned (superseded).

During the apply (minutes for a large tree) others may still write: right before each
UpdateTopic that touches labels the executor re-reads the topic and `fresh_labels`
merges the plan's label changes onto that fresh read, so a label another tool adds
meanwhile is kept; a managed label or storage policy that moved since the plan makes
that topic stale (`StaleTopic`), and the others go on. Managed here means a key the
plan changes or a reserved `reconcile-` key, or the storage policy, retention, key or
schema settings when the plan sets them; a declared key the plan leaves as it was
cannot be told from a foreign one, so a concurrent change to it is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from reconciler.backends.base import Backend, ObservedTopic
from reconciler.errors import PlanRefused, Refusal
from reconciler.names import project_of
from reconciler.orgpolicy.model import (
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
)
from reconciler.ownership import PLAN_LABEL, is_reserved, plan_marker
from reconciler.plan.model import LabelMerge, Plan, ResourceChange
from reconciler.plan.observation import org_fingerprint, org_parts, topic_fingerprint
from reconciler.plan.observe import read_topics
from reconciler.topic import TopicShape
from reconciler.topicfields import LABELS, SENT

# What a project's org fingerprint covers (plan/observation.py: org_fingerprint).
ORG_INPUTS = (
    f"constraints/{RESOURCE_LOCATIONS}, in-transit enforcement, "
    f"constraints/{RESTRICT_NON_CMEK}, constraints/{RESTRICT_KEY_PROJECTS}, "
    "constraints/pubsub.managed.disableTopicMessageTransforms, the custom "
    "constraints on topics and their enforcement, or the project's folders and "
    "organization"
)
# Each of them by the name a plan records its fingerprint under (observation.ORG_PARTS):
# a plan that has them is refused naming the one that changed.
PART_WORDS = {
    RESOURCE_LOCATIONS: f"constraints/{RESOURCE_LOCATIONS}",
    ENFORCE_IN_TRANSIT: f"in-transit enforcement (constraints/{ENFORCE_IN_TRANSIT})",
    RESTRICT_NON_CMEK: f"constraints/{RESTRICT_NON_CMEK}",
    RESTRICT_KEY_PROJECTS: f"constraints/{RESTRICT_KEY_PROJECTS}",
    "custom": "the custom constraints on topics or their enforcement",
    "parents": "the project's folders or organization",
}


class Found(Enum):
    """What a fingerprinted thing that moved turned out to be."""

    APPLIED = "applied"  # it carries this plan's marker
    SUPERSEDED = "superseded"  # another plan's marker replaced the one it had
    GONE = "gone"  # a topic the plan deletes no longer exists
    STALE = "stale"  # anything else


@dataclass(frozen=True)
class Moved:
    """One fingerprinted thing that is not what the plan saw, and what it turned out to
    be (`kind`)."""

    address: str
    text: str
    kind: Found = Found.STALE


def moved_since(plan: Plan, backend: Backend) -> list[Moved]:
    """Everything that differs from the plan's fingerprints ([] = fresh), each told by
    what the live topic's plan marker says about it."""
    fps = plan.fingerprints
    moved: list[Moved] = []
    for rc in plan.resource_changes:
        if rc.action != "no-op" and rc.address not in fps.topics:
            moved.append(Moved(rc.address, f"{rc.address}: the plan has no fingerprint for it"))
    projects = {project_of(a) for a in fps.topics} | set(fps.org_policy)
    if not projects:
        return moved
    seen = read_topics(backend, projects)
    marker = plan_marker(plan.digest)
    changes = {rc.address: rc for rc in plan.resource_changes}
    for address, expected in sorted(fps.topics.items()):
        live = seen.topics.get(address)
        if topic_fingerprint(live) != expected:
            moved.append(_topic_moved(address, expected, live, changes.get(address), marker))
    for project, expected in sorted(fps.org_policy.items()):
        inputs = seen.org.get(project)
        custom = seen.custom.get(project, ())
        parents = seen.hierarchy.get(project)
        if inputs is None or org_fingerprint(inputs, custom, parents) != expected:
            recorded = (fps.org_policy_parts or {}).get(project)
            changed = [] if inputs is None or not recorded else [
                part for part, now in org_parts(inputs, custom, parents).items()
                if recorded.get(part) != now
            ]
            what = (
                ", ".join(PART_WORDS[part] for part in changed) + " changed"
                if changed else ORG_INPUTS
            )
            moved.append(Moved(
                f"projects/{project}",
                f"projects/{project}: effective org policy changed since the plan ({what})",
            ))
    return moved


def _topic_moved(
    address: str,
    expected: str,
    live: ObservedTopic | None,
    rc: ResourceChange | None,
    marker: str,
) -> Moved:
    if live is None:
        if rc is not None and rc.action == "delete":
            return Moved(
                address,
                f"{address}: deleted since the plan (by this plan, if it was applied "
                "before, or by someone else)",
                Found.GONE,
            )
        return Moved(address, f"{address}: deleted since the plan")
    now = live.shape.labels.get(PLAN_LABEL)
    if now == marker:
        return Moved(
            address, f"{address}: already changed by this plan ({PLAN_LABEL}={marker})",
            Found.APPLIED,
        )
    before: Mapping[str, str] = ((rc.change.before or {}) if rc else {}).get(LABELS.proto) or {}
    if now is not None and now != before.get(PLAN_LABEL):
        return Moved(
            address,
            f"{address}: another plan was applied to it since ({PLAN_LABEL}={now})",
            Found.SUPERSEDED,
        )
    what = "created" if expected == "absent" else "modified"
    return Moved(address, f"{address}: {what} since the plan")


def stale_reasons(plan: Plan, backend: Backend) -> list[str]:
    """Every way the live state differs from the plan's fingerprints ([] = fresh)."""
    return [m.text for m in moved_since(plan, backend)]


def verdict(plan: Plan, moved: list[Moved]) -> tuple[Refusal, str]:
    """Why the plan is refused and the message saying so (nothing was applied)."""
    listed = "\n".join(f"  - {m.text}" for m in moved)
    marker = plan_marker(plan.digest)
    applied = [m for m in moved if m.kind is Found.APPLIED]
    if applied:
        changes = sum(1 for rc in plan.resource_changes if rc.action in ("create", "update"))
        part = "" if len(applied) >= changes else (
            f" in part ({len(applied)} of the {changes} topics it creates or updates carry "
            "its marker: an earlier run stopped part way)"
        )
        return Refusal.ALREADY_APPLIED, (
            f"the saved plan was already applied{part}: the topics it changed carry its "
            f"marker {PLAN_LABEL}={marker}; a plan applies once, so nothing was applied. "
            f"Changed since the plan:\n{listed}"
        )
    if any(m.kind is Found.SUPERSEDED for m in moved):
        return Refusal.SUPERSEDED, (
            "the saved plan was superseded: another plan was applied since it was made, "
            f"so nothing was applied. Changed since the plan:\n{listed}"
        )
    if all(m.kind is Found.GONE for m in moved):
        return Refusal.STALE, (
            "the topics this saved plan deletes are gone already (by this plan, if it was "
            "applied before, or by someone else); nothing was applied. Changed since the "
            f"plan:\n{listed}"
        )
    return Refusal.STALE, (
        f"the saved plan is stale; nothing was applied. Changed since the plan:\n{listed}"
    )


def check_fresh(plan: Plan, backend: Backend) -> None:
    """Raise PlanRefused naming every change, its `reason` saying whether the plan is
    stale, already applied or superseded; return quietly when the plan holds."""
    if plan.has_changes and not plan.fingerprints.topics and not plan.fingerprints.org_policy:
        raise PlanRefused(
            Refusal.DAMAGED,
            "the plan file records no fingerprints, so it cannot be checked against the "
            "live state; nothing was applied",
            hint="write the plan with `reconcile plan --out PLANFILE`",
        )
    moved = moved_since(plan, backend)
    if moved:
        reason, message = verdict(plan, moved)
        raise PlanRefused(
            reason,
            message,
            hint="make a new plan (`reconcile plan --out PLANFILE`), review it, and apply that",
            details=[m.text for m in moved],
        )


class StaleTopic(Exception):
    """A managed field of this topic changed between the plan and its update."""


def fresh_labels(rc: ResourceChange, merge: LabelMerge, live: TopicShape) -> dict[str, str]:
    """The label map to send: the fresh read with the request's `merge` applied;
    StaleTopic when a managed label or the planned storage policy moved since the
    plan (`rc.change.before`)."""
    before: Mapping[str, str] = (rc.change.before or {}).get(LABELS.proto) or {}
    now = dict(live.labels)
    changed = set(merge.set) | set(merge.remove)
    keys = set(before) | set(merge.set)
    managed = changed | {k for k in keys | set(now) if is_reserved(k)}
    moved = sorted(k for k in managed if now.get(k) != before.get(k))
    if moved:
        raise StaleTopic(f"label {', '.join(moved)} changed since the plan")
    planned = rc.change.before or {}
    for entry in SENT:  # the other fields the update sets (the table's comparison)
        if entry is LABELS or entry.proto not in rc.update_mask:
            continue
        if not entry.same(getattr(live, entry.shape), entry.from_json(planned.get(entry.proto))):
            raise StaleTopic(f"{entry.proto} changed since the plan")
    return merge.onto(now)
