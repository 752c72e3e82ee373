"""`reconcile policy pull`: save the effective org policy of projects as a snapshot, so
that `validate` (pre-commit, CI without credentials) checks what the service enforces.

    pull_snapshot(projects, out, local, emulator, timeout) -> exit code

Each project's *effective* policy (GetEffectivePolicy, through the backend: the
hierarchy already merged, value groups expanded) is written as that project's own
policy, named `projects/P/policies/<constraint>`, so the snapshot needs no ancestry to
evaluate. Nothing is written unless every read succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.errors import EXIT_OK, BackendError
from reconciler.orgpolicy.model import KNOWN_CONSTRAINTS
from reconciler.orgpolicy.store import PolicyStore, dump_snapshot

if TYPE_CHECKING:
    from reconciler.backends.gcp import GcpBackend

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


def header(target: str, projects: Sequence[str], defaults: Sequence[str]) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        f"Org-policy snapshot written by `reconcile policy pull` at {stamp}",
        f"from {target} (GetEffectivePolicy) for: {', '.join(projects)}.",
        "Effective policies: the hierarchy is already merged into each project's policy.",
        "Refresh with `reconcile policy pull` when the org policy changes.",
    ]
    if defaults:
        lines.append(f"No policy reported (constraint default): {', '.join(defaults)}.")
    return "\n".join(lines)


def pull_snapshot(
    projects: Sequence[str],
    out: Path,
    local: bool = False,
    emulator: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> int:
    """Check the command line first (no call is made for a usage error), then read
    every project's policies and write the snapshot atomically."""
    if out.is_dir():
        raise click.UsageError(f"--out {out} is a directory; name a file")
    from reconciler.backends.target import open_backend

    projects = list(dict.fromkeys(projects))
    backend = open_backend(local, emulator, None, timeout=timeout)
    try:
        store, defaults = pull(backend, projects)
        target = backend.target
    finally:
        backend.close()
    dump_snapshot(store, out, header(target, projects, defaults))
    click.echo(
        f"wrote {out} ({len(store.policies)} policies for {len(projects)} project(s))",
        err=True,
    )
    return EXIT_OK
