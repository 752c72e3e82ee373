"""Whether the org-policy snapshot `validate` used still says what the live org policy
says, project by project: a plan against the live policy names each difference, so
that a tree that validated against a stale snapshot is not a surprise at plan time.

    differences(snapshot, project, live) -> [str]      one sentence per difference
    stale_warning(path, project, found) -> Diagnostic  pointing at `reconcile policy pull`
    ancestry_difference(project, recorded, live) -> str
    stale_ancestry_warning(path, line, project, text) -> Diagnostic   at the snapshot's line

Compared: where the project sits (the snapshot's `ancestry:` and Resource Manager's),
what each constraint means for topics (the regions the location policy
allows, in-transit enforcement, whether new topics need a customer-managed key and
whose keys may protect them), not how the policies are written (a snapshot may name
a value group where the live effective policy lists its regions), and the custom
constraints on topics each project enforces or dry-runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.backends.base import OrgInputs, placed
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.orgpolicy.cmek import (
    PUBSUB_SERVICE,
    cmek_required,
    describe_key_projects,
    key_projects_restricted,
)
from reconciler.orgpolicy.custom import TOPIC, CustomConstraint
from reconciler.orgpolicy.locations import enforce_in_transit, location_restriction
from reconciler.orgpolicy.model import (
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
)
from reconciler.orgpolicy.store import Enforcement, PolicyStore

STALE = "org-policy-stale"
_SHOWN = 5  # regions named per difference before "and N more"


def _regions(names: frozenset[str]) -> str:
    ordered = sorted(names)
    more = len(ordered) - _SHOWN
    return ", ".join(ordered[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def differences(
    snapshot: PolicyStore, project: str, live: OrgInputs,
    custom: Sequence[tuple[CustomConstraint, Enforcement]] = (),
) -> list[str]:
    """How the snapshot's effective policy of `project` differs from the live one
    (`custom`: the live custom constraints on topics the project enforces or
    dry-runs)."""
    resource = f"projects/{project}"
    out = []
    was = location_restriction(snapshot.effective_spec(RESOURCE_LOCATIONS, resource)).allowed
    now = location_restriction(live.resource_locations).allowed
    if was != now:
        if was is None or now is None:
            said = "allows every region" if was is None else f"allows {_regions(was)}"
            says = "allows every region" if now is None else f"allows {_regions(now)}"
            out.append(
                f"constraints/{RESOURCE_LOCATIONS}: the snapshot {said}, the live policy {says}"
            )
        else:
            parts = []
            if now - was:
                parts.append(f"now also allows {_regions(now - was)}")
            if was - now:
                parts.append(f"no longer allows {_regions(was - now)}")
            out.append(f"constraints/{RESOURCE_LOCATIONS}: the live policy {' and '.join(parts)}")
    was_on = enforce_in_transit(snapshot.effective_spec(ENFORCE_IN_TRANSIT, resource))
    now_on = enforce_in_transit(live.enforce_in_transit)
    if was_on != now_on:
        state = "enforced" if now_on else "not enforced"
        out.append(
            f"constraints/{ENFORCE_IN_TRANSIT}: {state} now, {'not ' if now_on else ''}"
            "enforced in the snapshot"
        )
    out.extend(_cmek_differences(snapshot, resource, live))
    out.extend(_custom_differences(snapshot, resource, custom))
    return out


def _cmek_differences(snapshot: PolicyStore, resource: str, live: OrgInputs) -> list[str]:
    """What the CMEK constraints ask of a new topic, in the snapshot and live."""
    out = []
    was = cmek_required(snapshot.effective_spec(RESTRICT_NON_CMEK, resource))
    now = cmek_required(live.restrict_non_cmek)
    if was != now:
        out.append(
            f"constraints/{RESTRICT_NON_CMEK}: "
            + ("requires" if now else "no longer requires")
            + f" a customer-managed key for new {PUBSUB_SERVICE} topics now, "
            + ("not in the snapshot" if now else "the snapshot does")
        )
    was_keys = key_projects_restricted(snapshot.effective_spec(RESTRICT_KEY_PROJECTS, resource))
    now_keys = key_projects_restricted(live.key_projects)
    if was_keys != now_keys:
        out.append(
            f"constraints/{RESTRICT_KEY_PROJECTS}: the snapshot "
            f"{describe_key_projects(was_keys)}, the live policy "
            f"{describe_key_projects(now_keys)}"
        )
    return out


def _custom_differences(
    snapshot: PolicyStore, resource: str,
    live: Sequence[tuple[CustomConstraint, Enforcement]],
) -> list[str]:
    was = {c.constraint_id: (c, mode) for c, mode in snapshot.custom_constraints_for(
        resource, TOPIC
    )}
    now = {c.constraint_id: (c, mode) for c, mode in live}
    out = []
    for cid in sorted(set(was) | set(now)):
        if cid not in was:
            out.append(f"{cid} is {now[cid][1]} now, and not in the snapshot")
        elif cid not in now:
            out.append(f"{cid} is {was[cid][1]} in the snapshot, and no longer applies")
        elif was[cid][1] != now[cid][1]:
            out.append(f"{cid} is {now[cid][1]} now, {was[cid][1]} in the snapshot")
        elif was[cid][0] != now[cid][0]:
            out.append(f"{cid} has changed (its condition, action, methods or description)")
    return out


def stale_warning(snapshot: str, project: str, found: Sequence[str]) -> Diagnostic:
    """One warning per project whose live policy differs from the snapshot."""
    return Diagnostic(
        snapshot, 0, 0, Severity.WARNING, STALE,
        f"the org-policy snapshot no longer matches the live effective policy of project "
        f"{project}: {'; '.join(found)}; validate checked the specs against the snapshot, "
        "the plan against the live policy",
        f"refresh the snapshot: `reconcile policy pull --project {project} ... --out "
        f"{snapshot} --force` (it pulls the custom constraints of the organization Resource "
        "Manager places each project in)",
    )


def ancestry_difference(project: str, recorded: Sequence[str], live: Sequence[str]) -> str:
    """How the snapshot's ancestry of `project` differs from Resource Manager's."""
    return (
        f"the org-policy snapshot places projects/{project} {placed(recorded)}; Resource "
        f"Manager places it {placed(live)}"
    )


def stale_ancestry_warning(snapshot: str, line: int, project: str, text: str) -> Diagnostic:
    """One warning per project the snapshot places elsewhere than Resource Manager."""
    return Diagnostic(
        snapshot, line, 1 if line else 0, Severity.WARNING, STALE,
        f"{text}: validate judged the specs by the snapshot's organization and folders, "
        "the plan by Resource Manager's",
        f"refresh the snapshot with `reconcile policy pull --project {project} ... --out "
        f"{snapshot} --force`, which writes the ancestry Resource Manager states",
    )
