"""The effective org policy of projects, read for a snapshot (the `reconcile policy
pull` flow: commands/policy.py), so that `validate` (pre-commit, CI without
credentials) checks what the service enforces.

    pull(backend, projects) -> (PolicyStore, [constraints with no policy])
    header(source, projects, defaults) -> str      the snapshot file's comment

Each project's *effective* policy (GetEffectivePolicy, through the backend: the
hierarchy already merged, value groups expanded) is written as that project's own
policy, named `projects/P/policies/<constraint>`, so the snapshot needs no ancestry to
evaluate.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from reconciler.backends.gcp import GcpBackend
from reconciler.errors import BackendError
from reconciler.orgpolicy.model import KNOWN_CONSTRAINTS
from reconciler.orgpolicy.store import PolicyStore

UNSERVED_HINT = (
    "pull from Google Cloud (the default target) or from `--local`; Google's Pub/Sub "
    "emulator does not serve the Org Policy API"
)


def pull(backend: GcpBackend, projects: Sequence[str]) -> tuple[PolicyStore, list[str]]:
    """Every known constraint of every project; also the (project, constraint) pairs
    the service had no policy for."""
    store = PolicyStore()
    defaults = []
    for project in projects:
        for constraint in KNOWN_CONSTRAINTS:
            name = f"projects/{project}/policies/{constraint}"
            try:
                policy = backend.read_effective_policy(project, constraint)
            except BackendError as exc:
                if exc.status != "UNIMPLEMENTED":
                    raise
                raise BackendError(
                    f"the server does not implement the Org Policy API (GetEffectivePolicy "
                    f"answered UNIMPLEMENTED for {name}); nothing written",
                    hint=UNSERVED_HINT,
                ) from None
            if policy is None:
                defaults.append(name)
            else:
                store.put(policy)
    return store, defaults


def header(source: str, projects: Sequence[str], defaults: Sequence[str]) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        f"Org-policy snapshot written by `reconcile policy pull` at {stamp}",
        f"from {source} (GetEffectivePolicy) for: {', '.join(projects)}.",
        "Effective policies: the hierarchy is already merged into each project's policy.",
        "Refresh with `reconcile policy pull` when the org policy changes.",
    ]
    if defaults:
        lines.append(f"No policy reported (constraint default): {', '.join(defaults)}.")
    return "\n".join(lines)
