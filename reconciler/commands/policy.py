"""`reconcile policy pull --project P... --out FILE`: save the effective org policy
of each project as a snapshot (what it holds: reconciler/policy_pull.py).

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
from reconciler.policy_pull import NO_ORGANIZATION, header, pull


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
    help="The projects' organization (its number): also pull its custom constraints that "
    "name Pub/Sub resource types, and whether each project enforces or dry-runs each.",
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
    """Write the effective org policy of each --project P to FILE."""
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
        store, defaults = pull(backend, names, org)
        source = backend.info.label
    finally:
        backend.close()
    count = len(store.custom_constraints)
    dump_snapshot(store, out, header(source, names, defaults, org, count))
    err = output.stderr()
    custom = f", {count} custom constraint(s) of {org}" if org else ""
    err.line(f"wrote {out} ({len(store.policies)} policies{custom} for {len(names)} project(s))")
    if org is None:
        err.line(f"note: {NO_ORGANIZATION}")
    return EXIT_OK
