"""`reconcile policy pull --project P... --out FILE`: save the effective org policy
of each project, its ancestry and its organization's custom constraints as a
snapshot (what it holds: reconciler/policy_pull.py).

The command line is checked first (no call is made for a usage error); nothing is
written unless every read succeeded, and then atomically. An existing file is replaced
only with `--force` (as `import`'s): without it the pull is refused after the reads,
saying what differs between the file and what was pulled (so that a hand edit is not
lost unseen: reconciler/orgpolicy/snapshot_diff.py).
"""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.backends.base import TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.commands import output
from reconciler.commands._options import project_ids, server_options
from reconciler.diagnostics import Diagnostics
from reconciler.errors import EXIT_OK, InputError, UsageError
from reconciler.orgpolicy.snapshot import dump_snapshot, read_snapshot
from reconciler.orgpolicy.snapshot_diff import differences
from reconciler.orgpolicy.store import PolicyStore
from reconciler.policy_pull import header, pull


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
    callback=project_ids,
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Snapshot file to write (YAML).",
)
@click.option(
    "--organization",
    "organization",
    metavar="ORG",
    help="The projects' organization (its number), checked against Resource Manager "
    "(which names it without this option; a disagreement is an error), and used where "
    "Resource Manager cannot tell.",
)
@click.option(
    "--force", is_flag=True, help="Overwrite FILE if it exists (without it, the pull is "
    "refused and what differs is listed)."
)
@server_options
def pull_command(
    projects: tuple[str, ...],
    out: Path,
    organization: str | None,
    force: bool,
    local: bool,
    emulator: str | None,
    timeout: float,
) -> int:
    """Write the effective org policy of each --project P to FILE, with the ancestry
    Resource Manager states and the Pub/Sub custom constraints of each project's
    organization."""
    if out.is_dir():
        raise InputError(
            f"{out}: cannot write the org-policy snapshot: it is a directory",
            hint="name a file for --out",
        )
    org = None
    if organization is not None:
        number = organization.removeprefix("organizations/")
        if not number.isdigit():
            raise click.UsageError(
                f"--organization {organization!r}: organizations are named by number, "
                "e.g. --organization 123456789012"
            )
        org = f"organizations/{number}"
    names = list(dict.fromkeys(projects))
    backend = open_backend(TargetOptions(local, emulator, None, timeout))
    try:
        pulled = pull(backend, names, org)
        source = backend.info.label
    finally:
        backend.close()
    if not force and (out.exists() or out.is_symlink()):
        raise UsageError(
            f"refusing to overwrite {out}; nothing written; "
            + _what_differs(out, pulled.store),
            hint="pass --force to replace it (commit or keep a hand edit first), or "
            "choose another --out file",
        )
    dump_snapshot(pulled.store, out, header(source, names, pulled))
    err = output.stderr()
    custom = "".join(
        f", {pulled.custom_count(o)} custom constraint(s) of {o}"
        for o in sorted(set(pulled.organizations.values()))
    )
    err.line(
        f"wrote {out} ({len(pulled.store.policies)} policies{custom} for {len(names)} "
        "project(s))"
    )
    for note in pulled.notes:
        err.line(f"note: {note}")
    return EXIT_OK


def _what_differs(path: Path, pulled: PolicyStore) -> str:
    """What replacing the file at `path` with the pulled snapshot would change."""
    diags = Diagnostics()
    existing = read_snapshot(path, diags)
    errors = [d for d in diags.sorted() if d.is_error]
    if errors:
        return (
            f"it cannot be compared with what was pulled: it has {len(errors)} error(s) "
            f"as a snapshot, the first: {errors[0].render()}"
        )
    found = differences(existing, pulled)
    if not found:
        return (
            "it holds the policies, custom constraints and ancestry just pulled: only its "
            "comments or layout would change"
        )
    return "what was pulled differs from it:\n" + "\n".join(f"  {line}" for line in found)
