"""`reconcile policy pull --project P... --out FILE`: save the effective org policy
of each project, its ancestry and its organization's custom constraints as a
snapshot (what it holds: reconciler/policy_pull.py).

The command line is checked first (no call is made for a usage error); nothing is
written unless every read succeeded, and then atomically.
"""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.backends.base import TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.commands import output
from reconciler.commands._options import server_options
from reconciler.errors import EXIT_OK, InputError
from reconciler.orgpolicy.snapshot import dump_snapshot
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
@server_options
def pull_command(
    projects: tuple[str, ...],
    out: Path,
    organization: str | None,
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
