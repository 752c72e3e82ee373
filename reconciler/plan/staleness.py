"""Whether the org-policy snapshot `validate` used still says what the live org policy
says, project by project: a plan against the live policy names each difference, so
that a tree that validated against a stale snapshot is not a surprise at plan time.

    differences(snapshot, project, live) -> [str]      one sentence per difference
    stale_warning(path, project, found) -> Diagnostic  pointing at `reconcile policy pull`

Compared: what each constraint means for topics (the regions the location policy
allows, in-transit enforcement, the managed transform constraints), not how the
policies are written (a snapshot may name a value group where the live effective
policy lists its regions).
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.backends.base import OrgInputs
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.orgpolicy.locations import enforce_in_transit, location_restriction
from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESOURCE_LOCATIONS
from reconciler.orgpolicy.store import PolicyStore

STALE = "org-policy-stale"
_SHOWN = 5  # regions named per difference before "and N more"


def _regions(names: frozenset[str]) -> str:
    ordered = sorted(names)
    more = len(ordered) - _SHOWN
    return ", ".join(ordered[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def differences(snapshot: PolicyStore, project: str, live: OrgInputs) -> list[str]:
    """How the snapshot's effective policy of `project` differs from the live one."""
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
    return out


def stale_warning(snapshot: str, project: str, found: Sequence[str]) -> Diagnostic:
    """One warning per project whose live policy differs from the snapshot."""
    return Diagnostic(
        snapshot, 0, 0, Severity.WARNING, STALE,
        f"the org-policy snapshot no longer matches the live effective policy of project "
        f"{project}: {'; '.join(found)}; validate checked the specs against the snapshot, "
        "the plan against the live policy",
        f"refresh the snapshot: `reconcile policy pull --project {project} ... --out "
        f"{snapshot}` (with --organization ORG for custom constraints)",
    )
