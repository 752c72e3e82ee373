"""`reconcile plan` from end to end: validate, observe, diff, render; optionally save.

    run_plan(paths, target, out=None, fmt="text", detailed_exitcode=False, prune=False)
        -> exit code: 0 no changes (drift warnings do not count), 1 error, 2 changes
           with --detailed-exitcode
    validate_specs(paths, org_policy) -> ValidationResult   (diagnostics on stderr)
    open_target(target, result) -> Backend                   (the caller closes it)

`validate_specs` and `open_target` are shared with `apply PATH...`: validation runs
first and a tree with errors is never planned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.diagnostics import Diagnostic
from reconciler.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK
from reconciler.plan.model import Plan
from reconciler.render import diagnostics as report
from reconciler.spec.orgrules import promote_inferred
from reconciler.spec.validate import DEFAULT_PATH, ValidationResult, validate_paths

if TYPE_CHECKING:
    from reconciler.backends.gcp import GcpBackend

@dataclass(frozen=True)
class Target:
    """Where plan and apply look: --local, --emulator HOST:PORT, --org-policy FILE, and
    --timeout SECONDS (the deadline of each call to it)."""

    local: bool = False
    emulator: str | None = None
    org_policy: Path | None = None
    timeout: float = DEFAULT_TIMEOUT


def validate_specs(
    paths: Sequence[Path], org_policy: Path | None, strict_groups: bool = False
) -> ValidationResult:
    """Validate PATH... (default specs/), printing every diagnostic on stderr;
    `strict_groups` makes refusals resting on inferred group membership errors."""
    result = validate_paths(list(paths) or [DEFAULT_PATH], org_policy)
    if strict_groups:
        result.diagnostics.items = promote_inferred(result.diagnostics.items)
    diagnostics = result.diagnostics.sorted()
    if diagnostics:
        click.echo(report.text(diagnostics), nl=False, err=True)
    return result


def open_target(
    target: Target, result: ValidationResult, client_retry: bool = True
) -> GcpBackend:
    """The backend, its org-policy source decided here: the --org-policy snapshot
    (already loaded by validation) or the Org Policy API. The spec tree's snapshot
    seeds a brand-new --local server."""
    from reconciler.backends.target import open_backend

    store = result.policy_store if target.org_policy is not None else None
    return open_backend(
        target.local,
        target.emulator,
        target.org_policy,
        policy_store=store,
        local_seed=result.policy_store,
        client_retry=client_retry,
        timeout=target.timeout,
    )


def new_diagnostics(plan: Plan, validation: Sequence[Diagnostic]) -> list[Diagnostic]:
    """What the live org policy added to the plan (validation's were printed already)."""
    seen = set(validation)
    return [d for d in plan.diagnostics if d not in seen]


def run_plan(
    paths: Sequence[Path],
    target: Target,
    out: Path | None = None,
    fmt: str = "text",
    detailed_exitcode: bool = False,
    prune: bool = False,
    color: bool = False,
    strict_groups: bool = False,
) -> int:
    from reconciler.plan.make import make_plan
    from reconciler.plan.planfile import write_plan
    from reconciler.render import render
    from reconciler.spec.validate import without_cyclic_gc

    result = validate_specs(paths, target.org_policy, strict_groups)
    validation = result.diagnostics.sorted()
    if result.diagnostics.has_errors:
        click.echo(report.summary(validation, result.files) + "; no plan made", err=True)
        return EXIT_ERROR
    backend = open_target(target, result)
    try:
        with without_cyclic_gc():  # 50,000 topics' records: see validate_paths
            plan = make_plan(result.desired, backend, prune=prune, validation=validation)
    finally:
        backend.close()
    if strict_groups:
        plan.diagnostics = promote_inferred(plan.diagnostics)
    if plan.has_errors:
        click.echo(report.text(new_diagnostics(plan, validation)), nl=False, err=True)
        click.echo(
            "the specs conflict with the live org policy; no plan made, nothing changed",
            err=True,
        )
        return EXIT_ERROR
    if out is not None:
        write_plan(plan, out)
    click.echo(render(plan, fmt, color and fmt == "text"), nl=False, color=color)
    if out is not None:
        click.echo(f"Saved the plan to {out}; apply it with `reconcile apply {out}`.", err=True)
    if detailed_exitcode and plan.has_changes:
        return EXIT_CHANGES
    return EXIT_OK
