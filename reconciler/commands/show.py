"""`reconcile show PLANFILE`: render a saved plan in any format (nothing is contacted)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import emit_plan, format_option, read_plan


@click.command("show")
@click.argument("planfile", type=click.Path(path_type=Path))
@format_option()
def command(planfile: Path, fmt: str) -> None:
    """Print the plan saved in PLANFILE (by `reconcile plan --out`)."""
    emit_plan(read_plan(planfile), fmt)
