"""The effective org policy of projects, read for a snapshot (the `reconcile policy
pull` flow: commands/policy.py), so that `validate` (pre-commit, CI without
credentials) checks what the service enforces.

    pull(backend, projects, organization=None) -> (PolicyStore, [constraints with no policy])
    header(source, projects, defaults, organization=None) -> str   the file's comment

Each project's *effective* policy (GetEffectivePolicy, through the backend: the
hierarchy already merged, value groups expanded) is written as that project's own
policy, named `projects/P/policies/<constraint>`: the location and in-transit
constraints and Pub/Sub's managed transform constraints. With an organization, its
custom constraints that name a Pub/Sub resource type are written too (ListCustomConstraints,
in the shape `gcloud org-policies set-custom-constraint` takes), each project's
effective policy of each (`spec` enforced, or `dryRunSpec` for a dry run), and
`ancestry` links from each project to the organization, which is how the snapshot
knows which custom constraints a project obeys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from reconciler.backends.client_backend import ClientBackend
from reconciler.errors import BackendError
from reconciler.orgpolicy.custom import names_pubsub
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.snapshot import READ_CONSTRAINTS
from reconciler.orgpolicy.store import PolicyStore

T = TypeVar("T")
NO_ORGANIZATION = (
    "Custom constraints not pulled: pass --organization ORG (the projects' organization)."
)
UNSERVED_HINT = (
    "pull from Google Cloud (the default target) or from `--local`; Google's Pub/Sub "
    "emulator does not serve the Org Policy API"
)


def pull(
    backend: ClientBackend, projects: Sequence[str], organization: str | None = None
) -> tuple[PolicyStore, list[str]]:
    """Every constraint reconcile reads, for every project (with `organization`,
    organizations/ORG, also its Pub/Sub custom constraints); also the policy names
    the service had no policy for."""
    store = PolicyStore()
    constraint_ids = list(READ_CONSTRAINTS)
    if organization is not None:
        org = organization
        listed = _served(
            lambda: backend.list_custom_constraints(org), f"ListCustomConstraints for {org}"
        )
        for custom in listed:
            if names_pubsub(custom):
                store.put_custom(custom)
                constraint_ids.append(custom.constraint_id)
        for project in projects:
            store.ancestry[f"projects/{project}"] = organization
    defaults = []
    for project in projects:
        for constraint in constraint_ids:
            name = f"projects/{project}/policies/{constraint}"

            def read(p: str = project, c: str = constraint) -> Policy | None:
                return backend.read_effective_policy(p, c)

            policy = _served(read, f"GetEffectivePolicy for {name}")
            if policy is None:
                defaults.append(name)
            else:
                store.put(policy)
    return store, defaults


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


def header(
    source: str,
    projects: Sequence[str],
    defaults: Sequence[str],
    organization: str | None = None,
    custom_constraints: int = 0,
) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        f"Org-policy snapshot written by `reconcile policy pull` at {stamp}",
        f"from {source} (GetEffectivePolicy) for: {', '.join(projects)}.",
        "Effective policies: the hierarchy is already merged into each project's policy.",
        "Refresh with `reconcile policy pull` when the org policy changes.",
    ]
    if organization is not None:
        lines.append(
            f"Custom constraints of {organization} that name Pub/Sub resource types: "
            f"{custom_constraints} (ListCustomConstraints)."
        )
    else:
        lines.append(NO_ORGANIZATION)
    if defaults:
        lines.append(f"No policy reported (constraint default): {', '.join(defaults)}.")
    return "\n".join(lines)
