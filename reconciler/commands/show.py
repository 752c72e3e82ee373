"""`reconcile show PLANFILE`: render a saved plan in any format (nothing is contacted)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import format_option, use_colour
from reconciler.errors import EXIT_OK


@click.command("show")
@click.argument("planfile", type=click.Path(path_type=Path))
@format_option()
def command(planfile: Path, fmt: str) -> int:
    """Print the plan saved in PLANFILE (by `reconcile plan --out`)."""
    from reconciler.plan.planfile import read_plan
    from reconciler.render import render

    color = use_colour() and fmt == "text"
    click.echo(render(read_plan(planfile), fmt, color), nl=False, color=color)
    return EXIT_OK
