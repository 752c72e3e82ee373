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
from reconciler.errors import EXIT_OK
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
@server_options
def pull_command(
    projects: tuple[str, ...], out: Path, local: bool, emulator: str | None, timeout: float
) -> int:
    """Write the effective org policy of each --project P to FILE."""
    if out.is_dir():
        raise click.UsageError(f"--out {out} is a directory; name a file")
    names = list(dict.fromkeys(projects))
    backend = open_backend(TargetOptions(local, emulator, None, timeout))
    try:
        store, defaults = pull(backend, names)
        source = backend.info.label
    finally:
        backend.close()
    dump_snapshot(store, out, header(source, names, defaults))
    output.stderr().line(
        f"wrote {out} ({len(store.policies)} policies for {len(names)} project(s))"
    )
    return EXIT_OK
