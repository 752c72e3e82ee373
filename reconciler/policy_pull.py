"""The effective org policy of projects, read for a snapshot (the `reconcile policy
pull` flow: commands/policy.py), so that `validate` (pre-commit, CI without
credentials) checks what the service enforces.

    pull(backend, projects, organization=None) -> Pulled
    header(source, pulled) -> str   the file's comment

Where each project sits comes first, from Cloud Resource Manager (the backend's
`ancestry`: GetProject, then GetFolder up to the organization), and is written as the
snapshot's `ancestry` (project -> folder -> ... -> organization), which is how the
snapshot knows which custom constraints a project obeys and which folder policies it
inherits. `--organization ORG` still names the organization: when Resource Manager
places the project elsewhere, that is an error saying both (nothing is read further);
when it cannot tell, the given organization is used and a note says why.

Each project's *effective* policy (GetEffectivePolicy, through the backend: the
hierarchy already merged, value groups expanded) is written as that project's own
policy, named `projects/P/policies/<constraint>`: the location and in-transit
constraints and Pub/Sub's managed transform constraints. For each organization the
projects are in, its custom constraints that name a Pub/Sub resource type are written
too (ListCustomConstraints, in the shape `gcloud org-policies set-custom-constraint`
takes), with each of its projects' effective policy of each (`spec` enforced, or
`dryRunSpec` for a dry run).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

from reconciler.backends.base import Ancestry, placed
from reconciler.backends.client_backend import ClientBackend
from reconciler.errors import BackendError, UsageError
from reconciler.orgpolicy.custom import names_pubsub
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.snapshot import READ_CONSTRAINTS
from reconciler.orgpolicy.store import PolicyStore

T = TypeVar("T")
UNSERVED_HINT = (
    "pull from Google Cloud (the default target) or from `--local`; Google's Pub/Sub "
    "emulator does not serve the Org Policy API"
)


@dataclass
class Pulled:
    """What a pull read: the snapshot's content (`store`), the policy names the service
    had no policy for (`defaults`), each project's organization whose custom
    constraints were pulled, and why a project has none (`notes`, one a project)."""

    store: PolicyStore = field(default_factory=PolicyStore)
    defaults: list[str] = field(default_factory=list)
    organizations: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def custom_count(self, organization: str) -> int:
        return sum(1 for c in self.store.custom_constraints.values()
                   if c.organization == organization)


def place(
    pulled: Pulled, project: str, ancestry: Ancestry, organization: str | None
) -> str | None:
    """Record where `project` sits and its organization; a disagreement with
    --organization, as a sentence (None: none)."""
    name = f"projects/{project}"
    if not ancestry.known:
        if organization is None:
            pulled.notes.append(
                f"custom constraints of {name} not pulled: its organization is unknown "
                f"({ancestry.unavailable}); pass --organization ORG, or grant "
                "resourcemanager.projects.get (roles/browser)"
            )
            return None
        pulled.store.ancestry[name] = organization
        pulled.organizations[project] = organization
        pulled.notes.append(
            f"the ancestry of {name} could not be read ({ancestry.unavailable}); "
            f"--organization {organization} is used for it"
        )
        return None
    nodes = (name, *ancestry.parents)
    pulled.store.ancestry.update(itertools.pairwise(nodes))
    found = ancestry.organization
    if organization is not None and found != organization:
        return (
            f"Resource Manager places {name} {placed(ancestry.parents)}, not in "
            f"{organization} as --organization says"
        )
    if found is None:
        if not ancestry.parents:  # written `projects/P: none`: known, not left out
            pulled.store.unparented.add(name)
        pulled.notes.append(
            f"{name} is in no organization (Resource Manager places it "
            f"{placed(ancestry.parents)}): no custom constraint applies to it"
        )
    else:
        pulled.organizations[project] = found
    return None


def pull(
    backend: ClientBackend, projects: Sequence[str], organization: str | None = None
) -> Pulled:
    """Every constraint reconcile reads, for every project, and the Pub/Sub custom
    constraints of each project's organization (Resource Manager's, or `organization`,
    organizations/ORG, where Resource Manager cannot tell). A UsageError, before any
    Org Policy call, when `organization` disagrees with Resource Manager."""
    pulled = Pulled()
    disagreements = [
        found for project in projects
        if (found := place(pulled, project, backend.ancestry(project), organization))
    ]
    if disagreements:
        raise UsageError(
            "; ".join(disagreements) + "; nothing written",
            hint="drop --organization (the organization is read from Resource Manager), "
            "or pull the projects of each organization apart",
        )
    custom_ids: dict[str, list[str]] = {}
    for org in sorted(set(pulled.organizations.values())):
        listed = _served(
            partial(backend.list_custom_constraints, org), f"ListCustomConstraints for {org}"
        )
        custom_ids[org] = []
        for custom in listed:
            if names_pubsub(custom):
                pulled.store.put_custom(custom)
                custom_ids[org].append(custom.constraint_id)
    for project in projects:
        org_ids = custom_ids.get(pulled.organizations.get(project, ""), [])
        for constraint in (*READ_CONSTRAINTS, *org_ids):
            name = f"projects/{project}/policies/{constraint}"

            def read(p: str = project, c: str = constraint) -> Policy | None:
                return backend.read_effective_policy(p, c)

            policy = _served(read, f"GetEffectivePolicy for {name}")
            if policy is None:
                pulled.defaults.append(name)
            else:
                pulled.store.put(policy)
    return pulled


def _served(call: Callable[[], T], what: str) -> T:
    """The call's answer; UNIMPLEMENTED (a server without the Org Policy API) said as
    such."""
    try:
        return call()
    except BackendError as exc:
        if exc.status != "UNIMPLEMENTED":
            raise
        raise BackendError(
            f"the server does not implement the Org Policy API ({what} answered "
            "UNIMPLEMENTED); nothing written",
            hint=UNSERVED_HINT,
        ) from None


def header(source: str, projects: Sequence[str], pulled: Pulled) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        f"Org-policy snapshot written by `reconcile policy pull` at {stamp}",
        f"from {source} (GetEffectivePolicy) for: {', '.join(projects)}.",
        "Effective policies: the hierarchy is already merged into each project's policy.",
        "Ancestry: as Resource Manager states it (GetProject, GetFolder).",
        "Refresh with `reconcile policy pull` when the org policy changes.",
    ]
    for org in sorted(set(pulled.organizations.values())):
        lines.append(
            f"Custom constraints of {org} that name Pub/Sub resource types: "
            f"{pulled.custom_count(org)} (ListCustomConstraints)."
        )
    lines += pulled.notes
    if pulled.defaults:
        lines.append(f"No policy reported (constraint default): {', '.join(pulled.defaults)}.")
    return "\n".join(lines)
