"""`reconcile plan`: validate, observe, diff, render; optionally save the plan file.

Exit codes: 0 no changes (drift warnings do not count), 1 error, 2 changes with
--detailed-exitcode.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reconciler.commands._options import emit_plan, format_option, target_options, write_plan
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK
from reconciler.render import diagnostics as report
from reconciler.spec.validate import validate_paths


def _from_json(d: dict[str, object]) -> Diagnostic:
    return Diagnostic(
        str(d.get("file", "")),
        int(str(d.get("line") or 0)),
        int(str(d.get("col") or 0)),
        Severity(str(d.get("severity", "error"))),
        str(d.get("code", "")),
        str(d.get("message", "")),
        d.get("hint") if isinstance(d.get("hint"), str) else None,  # type: ignore[arg-type]
    )


@click.command("plan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
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
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    out: Path | None,
    fmt: str,
    detailed_exitcode: bool,
    prune: bool,
) -> None:
    """Show what apply would change for the specs under PATH... (default: specs/)."""
    result = validate_paths(list(paths) or [Path("specs")], org_policy)
    diagnostics = result.diagnostics.sorted()
    if diagnostics:
        click.echo(report.text(diagnostics), nl=False, err=True)
    if result.diagnostics.has_errors:
        click.echo(report.summary(diagnostics, result.files) + "; no plan made", err=True)
        sys.exit(EXIT_ERROR)

    from reconciler.backends.target import open_backend
    from reconciler.plan.make import has_errors, make_plan

    store = result.policy_store if org_policy is not None else None
    backend = open_backend(
        local, emulator, org_policy, policy_store=store, local_seed=result.policy_store
    )
    try:
        plan = make_plan(result.desired, backend, store, prune=prune, reported=diagnostics)
    finally:
        backend.close()
    if has_errors(plan):
        found = [_from_json(d) for d in plan.diagnostics]
        click.echo(report.text(found), nl=False, err=True)
        click.echo(
            "the specs conflict with the live org policy; no plan made, nothing changed",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    plan.diagnostics = [d.to_json() for d in diagnostics] + plan.diagnostics
    if out is not None:
        write_plan(plan, out)
    emit_plan(plan, fmt)
    if out is not None:
        click.echo(f"Saved the plan to {out}; apply it with `reconcile apply {out}`.", err=True)
    if detailed_exitcode and plan.has_changes:
        sys.exit(EXIT_CHANGES)
    sys.exit(EXIT_OK)
