"""`reconcile policy pull`: save the effective org policy of projects as a snapshot, so
that `validate` (pre-commit, CI without credentials) checks what the service enforces.

Each project's *effective* policy (GetEffectivePolicy: the hierarchy already merged,
value groups expanded) is written as that project's own policy, named
`projects/P/policies/<constraint>`, so the snapshot needs no ancestry to evaluate.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from reconciler.commands._options import server_options
from reconciler.errors import BackendError
from reconciler.orgpolicy.model import KNOWN_CONSTRAINTS, Policy, PolicyFormatError
from reconciler.orgpolicy.store import PolicyStore, dump_snapshot

RPC_TIMEOUT = 60.0
UNSERVED_HINT = (
    "pull from Google Cloud (the default target) or from `--local`; Google's Pub/Sub "
    "emulator does not serve the Org Policy API"
)


def effective_policy(client: Any, project: str, constraint: str) -> Policy | None:
    """The project's effective policy for one constraint; None when the service has
    none to report (NOT_FOUND: the constraint's default applies)."""
    from google.api_core import exceptions as gexc
    from google.protobuf.json_format import MessageToDict

    from reconciler.backends.gcp import API_ERRORS, api_error

    name = f"projects/{project}/policies/{constraint}"
    try:
        pb = client.get_effective_policy(request={"name": name}, timeout=RPC_TIMEOUT)
    except gexc.NotFound:
        return None
    except gexc.MethodNotImplemented:
        raise BackendError(
            f"the server does not implement the Org Policy API (GetEffectivePolicy "
            f"answered UNIMPLEMENTED for {name}); nothing written",
            hint=UNSERVED_HINT,
        ) from None
    except API_ERRORS as exc:
        raise api_error(exc, "read org policy", f"projects/{project}") from None
    data = MessageToDict(type(pb).pb(pb))
    data["name"] = name  # the service may answer with the project number
    data.pop("etag", None)
    try:
        return Policy.from_dict(data)
    except PolicyFormatError as exc:
        raise BackendError(f"unreadable effective policy {name}: {exc}") from None


def pull(client: Any, projects: Sequence[str]) -> tuple[PolicyStore, list[str]]:
    """Every known constraint of every project; also the (project, constraint) pairs
    the service had no policy for."""
    store = PolicyStore()
    defaults = []
    for project in projects:
        for constraint in KNOWN_CONSTRAINTS:
            policy = effective_policy(client, project, constraint)
            if policy is None:
                defaults.append(f"projects/{project}/policies/{constraint}")
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


@click.group("policy")
def command() -> None:
    """Org policy snapshots for offline validation."""


@command.command("pull")
@click.option(
    "--project",
    "projects",
    multiple=True,
    required=True,
    metavar="P",
    help="Project whose effective org policy to pull (repeatable).",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Snapshot file to write (YAML).",
)
@server_options
def pull_command(projects: tuple[str, ...], out: Path, local: bool, emulator: str | None) -> None:
    """Write the effective org policy of each --project P to FILE."""
    from reconciler.backends.target import open_backend

    projects = tuple(dict.fromkeys(projects))
    backend: Any = open_backend(local, emulator, None)
    try:
        store, defaults = pull(backend.orgpolicy, projects)
        target = str(backend.target)
    finally:
        backend.close()
    if out.is_dir():
        raise BackendError(f"--out {out} is a directory; name a file")
    dump_snapshot(store, out, header(target, projects, defaults))
    click.echo(
        f"wrote {out} ({len(store.policies)} policies for {len(projects)} project(s))",
        err=True,
    )
