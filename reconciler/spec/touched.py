"""Which projects a change to the spec tree touches: the desired state of each project
before and after, compared topic by topic, and its effective org policy in the
snapshot. Whatever moved a project's desired state (a topic file, a Defaults file, a
hedging profile its topics use, the org-policy snapshot) touches it; a reformatted
file or a moved topic does not. `reconcile projects --changed-from REF` compares the
tree at a git revision with the working tree (reconciler/gitrev.py reads the former).

    declared(result) -> [project]                   what a validated tree names
    touched(before, after) -> {project: [reason]}   what differs, per project
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESOURCE_LOCATIONS, PolicySpec
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.validate import ValidationResult


def declared(result: ValidationResult) -> list[str]:
    """The projects whose topics the tree declares (sorted)."""
    return result.desired.projects


def _topics(result: ValidationResult) -> dict[str, DesiredTopic]:
    """Each declared topic without where it was written (a moved topic is the same)."""
    return {t.address: replace(t, file="", line=0) for t in result.desired.topics}


def _policy(result: ValidationResult, project: str) -> tuple[PolicySpec | None, ...]:
    store = result.policy_store
    if store is None:
        return (None, None)
    resource = f"projects/{project}"
    constraints = (RESOURCE_LOCATIONS, ENFORCE_IN_TRANSIT)
    return tuple(store.effective_spec(c, resource) for c in constraints)


def touched(before: ValidationResult | None, after: ValidationResult) -> dict[str, list[str]]:
    """Every project whose desired topics or effective org policy differ between the
    two trees, with what differs (`before` None: no tree then, every project is new).
    Projects no longer declared are included: their topics were removed."""
    now = _topics(after)
    then = _topics(before) if before is not None else {}
    out: dict[str, list[str]] = {}

    def note(project: str, reason: str) -> None:
        out.setdefault(project, []).append(reason)

    for address in sorted(set(now) | set(then)):
        old, new = then.get(address), now.get(address)
        if old == new:
            continue
        project = (new or old).project  # type: ignore[union-attr]
        if old is None:
            note(project, f"{address}: added")
        elif new is None:
            note(project, f"{address}: removed from the specs")
        else:
            note(project, f"{address}: changed")
    if before is not None:
        for project in sorted(_named(before, after)):
            if _policy(before, project) != _policy(after, project):
                note(project, f"projects/{project}: effective org policy in the snapshot changed")
    return {p: out[p] for p in sorted(out)}


def _named(*results: ValidationResult) -> Iterable[str]:
    return {p for r in results for p in r.desired.projects}
