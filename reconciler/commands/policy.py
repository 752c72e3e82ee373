"""`reconcile policy pull`: options in, one call to reconciler.policy_pull, exit
code out (what the snapshot holds is documented there)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import server_options


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
    from reconciler.policy_pull import pull_snapshot

    return pull_snapshot(projects, out, local, emulator, timeout)
