"""`reconcile import`: options in, one call to reconciler.importer, exit code out
(what is written, and when nothing is, is documented there)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import server_options


@click.command("import")
@click.option(
    "--project",
    "projects",
    multiple=True,
    required=True,
    metavar="P",
    help="Project to import (repeatable); writes DIR/<project>.yaml.",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="T",
    help="Only this topic (ID or projects/P/topics/T; repeatable).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Directory to write the spec files into.",
)
@click.option("--force", is_flag=True, help="Overwrite spec files that already exist.")
@server_options
def command(
    projects: tuple[str, ...],
    topics: tuple[str, ...],
    out_dir: Path,
    force: bool,
    local: bool,
    emulator: str | None,
    timeout: float,
) -> int:
    """Write specs that reproduce the live topics of --project P into DIR."""
    from reconciler.importer import run_import

    return run_import(projects, topics, out_dir, force, local, emulator, timeout)
