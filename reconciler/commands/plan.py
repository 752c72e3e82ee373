"""`reconcile plan`: options in, one call to reconciler.plan.run, exit code out.

Exit codes: 0 no changes (drift warnings do not count), 1 error, 2 changes with
--detailed-exitcode.
"""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import (
    format_option,
    project_option,
    strict_groups_option,
    target_options,
    use_colour,
)


@click.command("plan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
@project_option
@click.option(
    "--out", "out", type=click.Path(path_type=Path), help="Save the plan (JSON) for apply."
)
@format_option()
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the plan has changes (0 when none)."
)
@click.option(
    "--prune",
    is_flag=True,
    help="Also delete undeclared topics of the named projects that carry the "
    "reconcile-managed label.",
)
@strict_groups_option
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    out: Path | None,
    fmt: str,
    detailed_exitcode: bool,
    prune: bool,
    timeout: float,
    strict_groups: bool,
    projects: tuple[str, ...],
) -> int:
    """Show what apply would change for the specs under PATH... (default: specs/)."""
    from reconciler.plan.run import Target, run_plan

    return run_plan(
        paths,
        Target(local, emulator, org_policy, timeout),
        out=out,
        fmt=fmt,
        detailed_exitcode=detailed_exitcode,
        prune=prune,
        color=use_colour(),
        strict_groups=strict_groups,
        projects=projects,
    )
