"""`reconcile show PLANFILE`: render a saved plan in any format (nothing is contacted)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands import output
from reconciler.commands._options import format_option
from reconciler.commands._planning import show_plan
from reconciler.errors import EXIT_OK
from reconciler.plan.planfile import read_plan


@click.command("show")
@click.argument("planfile", type=click.Path(path_type=Path))
@format_option()
def command(planfile: Path, fmt: str) -> int:
    """Print the plan saved in PLANFILE (by `reconcile plan --out`)."""
    show_plan(read_plan(planfile), fmt, output.colour_wanted())
    return EXIT_OK
