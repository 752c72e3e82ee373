"""`reconcile plan` from end to end: validate, observe, diff, render; optionally save.

    run_plan(paths, target, out=None, fmt="text", detailed_exitcode=False, prune=False,
             projects=())
        -> exit code: 0 no changes (drift warnings do not count), 1 error, 2 changes
           with --detailed-exitcode
    validate_specs(paths, org_policy) -> ValidationResult   (diagnostics on stderr)
    open_target(target, result) -> Backend                   (the caller closes it)

`validate_specs` and `open_target` are shared with `apply PATH...`: validation runs
first and a tree with errors is never planned. Every format carries the diagnostics:
with errors, `--format json` prints a plan document with no changes and the
`diagnostics`, `--format markdown` a comment whose body is the errors (exit 1 either
way); text prints them on stderr. The plan records where it was made (plan/origin.py).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.diagnostics import Diagnostic
from reconciler.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, InputError
from reconciler.plan.model import Plan, PlanTarget
from reconciler.plan.origin import Target, anchored, record_target
from reconciler.render import diagnostics as report
from reconciler.spec.orgrules import promote_inferred
from reconciler.spec.validate import DEFAULT_PATH, ValidationResult, validate_paths

if TYPE_CHECKING:
    from reconciler.backends.base import Backend
    from reconciler.backends.gcp import GcpBackend
    from reconciler.plan.readahead import ReadAhead

__all__ = ["Target", "open_target", "run_plan", "validate_specs"]


def validate_specs(
    paths: Sequence[Path],
    org_policy: Path | None,
    strict_groups: bool = False,
    on_document: Callable[[str | None], None] | None = None,
) -> ValidationResult:
    """Validate PATH... (default specs/), printing every diagnostic on stderr;
    `strict_groups` makes refusals resting on inferred group membership errors;
    `on_document`: spec/loader.py's load_tree."""
    result = validate_paths(list(paths) or [DEFAULT_PATH], org_policy, on_document=on_document)
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
        state_dir=target.state_dir,
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
    projects: Sequence[str] = (),
) -> int:
    from reconciler.gcpause import without_cyclic_gc

    # A 50,000-topic plan is a few million small objects and no cycles to speak of:
    # with the cyclic collector on, building the plan's document for its digest and
    # rendering re-scanned all of them again and again (more than the diff itself).
    from reconciler.plan.readahead import ReadAhead

    read_ahead = ReadAhead.for_target(target, projects)
    with without_cyclic_gc():
        try:
            return _run_plan(
                paths, target, out, fmt, detailed_exitcode, prune, color, strict_groups,
                projects, read_ahead,
            )
        finally:
            if read_ahead is not None:
                read_ahead.close()


def _run_plan(
    paths: Sequence[Path],
    target: Target,
    out: Path | None,
    fmt: str,
    detailed_exitcode: bool,
    prune: bool,
    color: bool,
    strict_groups: bool,
    projects: Sequence[str],
    read_ahead: ReadAhead | None,
) -> int:
    from reconciler.plan.make import make_plan
    from reconciler.plan.planfile import write_plan
    from reconciler.plan.projects import select_projects
    from reconciler.render import render

    result = validate_specs(
        paths, target.org_policy, strict_groups,
        read_ahead.document if read_ahead is not None else None,
    )
    validation = result.diagnostics.sorted()
    if result.diagnostics.has_errors:
        click.echo(report.summary(validation, result.files) + "; no plan made", err=True)
        return _errors_only(validation, _record(target), fmt)
    desired = select_projects(result.desired, projects, prune)
    target = anchored(target, paths)
    origin = record_target(target)
    read = read_ahead.backend(desired.projects) if read_ahead is not None else None
    backend: Backend = read or open_target(target, result)
    try:
        plan = make_plan(
            desired, backend, prune=prune, validation=validation, origin=origin,
            projects=projects,
        )
    finally:
        backend.close()
    if strict_groups:
        plan = replace(plan, diagnostics=promote_inferred(plan.diagnostics))
    if plan.has_errors:
        click.echo(report.text(new_diagnostics(plan, validation)), nl=False, err=True)
        click.echo(
            "the specs conflict with the live org policy; no plan made, nothing changed",
            err=True,
        )
        return _errors_only(plan.diagnostics, origin, fmt)
    if out is not None:
        write_plan(plan, out)
    click.echo(render(plan, fmt, color and fmt == "text"), nl=False, color=color)
    if out is not None:
        click.echo(
            f"Saved the plan to {out} (digest {plan.digest}); apply exactly this plan with "
            f"`reconcile apply {out} --expect-digest {plan.digest}`.",
            err=True,
        )
    leave_to_exit(result, plan)
    if detailed_exitcode and plan.has_changes:
        return EXIT_CHANGES
    return EXIT_OK


LARGE = 10_000  # declared topics from which freeing the run's records one by one shows


def leave_to_exit(*records: object) -> None:
    """A large run's records (validation result and plan: millions of small objects at
    50,000 topics) are left for the process's exit to drop instead of being freed one
    by one when the command returns (half a second at 50k). They are held by a list
    that holds itself, and `gc.freeze()` keeps the collector, here and at interpreter
    shutdown, from ever examining them. Everything has been written by then; small runs
    (tests calling the CLI in-process) free as usual."""
    plan = records[-1]
    if not isinstance(plan, Plan) or len(plan.resource_changes) < LARGE:
        return
    held: list[object] = [*records]
    held.append(held)
    gc.freeze()


def _record(target: Target) -> PlanTarget:
    """The target to show with errors (a snapshot that cannot be read has no hash)."""
    try:
        return record_target(target)
    except InputError:
        return PlanTarget(org_policy="snapshot", snapshot=str(target.org_policy))


def _errors_only(diagnostics: Sequence[Diagnostic], origin: PlanTarget, fmt: str) -> int:
    """No plan is made from a tree with errors; JSON and markdown still print a
    document carrying them (text has printed them on stderr)."""
    if fmt != "text":
        from reconciler.render import render

        plan = Plan(
            diagnostics=list(diagnostics),
            target=origin,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        click.echo(render(plan, fmt), nl=False)
    return EXIT_ERROR
