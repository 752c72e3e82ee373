"""Is a saved plan still true? Re-read what it was made against and compare fingerprints.

A plan is a promise about specific live states; applying it after any of them moved
could undo someone's change or act on a policy that no longer holds. So every topic
the plan fingerprinted and every project's org policy inputs are read again (the same
`observe` that planning uses: one ListTopics pager per project) and any difference
refuses the whole apply, before any mutating call.

During the apply (minutes for a large tree) others may still write: right before each
UpdateTopic that touches labels the executor re-reads the topic and `fresh_labels`
merges the plan's label changes onto that fresh read, so a label another tool adds
meanwhile is kept; a managed label or storage policy that moved since the plan makes
that topic stale (`StaleTopic`), and the others go on. Managed here means a key the
plan changes or a reserved `reconcile-` key, or the storage policy when the plan sets
it; a declared key the plan leaves as it was cannot be told from a foreign one, so a
concurrent change to it is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.backends.base import Backend
from reconciler.errors import StalePlanError
from reconciler.names import project_of
from reconciler.ownership import is_reserved
from reconciler.plan.model import Plan, ResourceChange
from reconciler.plan.observe import observe, org_fingerprint, topic_fingerprint
from reconciler.topic import LABELS, STORAGE_POLICY, StoragePolicy, TopicShape, norm_policy


def stale_reasons(plan: Plan, backend: Backend) -> list[str]:
    """Every way the live state differs from the plan's fingerprints ([] = fresh)."""
    fps = plan.fingerprints
    reasons: list[str] = []
    for rc in plan.resource_changes:
        if rc.action != "no-op" and rc.address not in fps.topics:
            reasons.append(f"{rc.address}: the plan has no fingerprint for it")
    projects = {project_of(a) for a in fps.topics} | set(fps.org_policy)
    if not projects:
        return reasons
    seen = observe(backend, projects)
    for address, expected in sorted(fps.topics.items()):
        live = seen.topics.get(address)
        now = topic_fingerprint(live)
        if now == expected:
            continue
        if expected == "absent":
            reasons.append(f"{address}: created since the plan")
        elif live is None:
            reasons.append(f"{address}: deleted since the plan")
        else:
            reasons.append(f"{address}: modified since the plan")
    for project, expected in sorted(fps.org_policy.items()):
        inputs = seen.org.get(project)
        if inputs is None or org_fingerprint(inputs) != expected:
            reasons.append(
                f"projects/{project}: effective org policy changed since the plan "
                "(constraints/gcp.resourceLocations or in-transit enforcement)"
            )
    return reasons


def check_fresh(plan: Plan, backend: Backend) -> None:
    """Raise StalePlanError naming every change; return quietly when the plan holds."""
    if plan.has_changes and not plan.fingerprints.topics and not plan.fingerprints.org_policy:
        raise StalePlanError(
            "the plan file records no fingerprints, so it cannot be checked against the "
            "live state; nothing was applied",
            hint="write the plan with `reconcile plan --out PLANFILE`",
        )
    reasons = stale_reasons(plan, backend)
    if reasons:
        listed = "\n".join(f"  - {r}" for r in reasons)
        raise StalePlanError(
            f"the saved plan is stale; nothing was applied. Changed since the plan:\n{listed}",
            hint="make a new plan (`reconcile plan --out PLANFILE`), review it, and apply that",
        )


class StaleTopic(Exception):
    """A managed field of this topic changed between the plan and its update."""


def fresh_labels(rc: ResourceChange, live: TopicShape) -> dict[str, str]:
    """The label map to send: the fresh read with the plan's changes (before -> after)
    applied; StaleTopic when a managed label or the planned storage policy moved."""
    before: Mapping[str, str] = (rc.change.before or {}).get(LABELS) or {}
    after: Mapping[str, str] = (rc.change.after or {}).get(LABELS) or {}
    now = dict(live.labels)
    keys = set(before) | set(after)
    changed = {k for k in keys if before.get(k) != after.get(k)}
    managed = changed | {k for k in keys | set(now) if is_reserved(k)}
    moved = sorted(k for k in managed if now.get(k) != before.get(k))
    if moved:
        raise StaleTopic(f"label {', '.join(moved)} changed since the plan")
    if STORAGE_POLICY in rc.update_mask:
        planned = norm_policy(StoragePolicy.from_json((rc.change.before or {}).get(STORAGE_POLICY)))
        if norm_policy(live.policy) != planned:
            raise StaleTopic("message_storage_policy changed since the plan")
    for k in changed:
        if k in after:
            now[k] = after[k]
        else:
            now.pop(k, None)
    return dict(sorted(now.items()))
