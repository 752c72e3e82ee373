"""`reconcile show PLANFILE`: render a saved plan in any format (nothing is contacted).
A plan file that cannot be read is an input error here (exit 1): the refusal codes are
apply's."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands import output
from reconciler.commands._options import format_option
from reconciler.commands._planning import show_plan
from reconciler.commands._promised_log import PromisedLog
from reconciler.errors import EXIT_OK, InputError, PlanRefused
from reconciler.plan.planfile import read_plan


@click.command("show")
@click.argument("planfile", type=click.Path(path_type=Path))
@format_option()
def command(planfile: Path, fmt: str) -> int:
    """Print the plan saved in PLANFILE (by `reconcile plan --out`)."""
    promised = PromisedLog(fmt)
    try:
        plan = read_plan(planfile)
    except PlanRefused as exc:
        raise InputError(exc.message, hint=exc.hint) from None
    promised.findings = plan.diagnostics
    show_plan(plan, fmt, output.colour_wanted())
    promised.delivered()
    return EXIT_OK
