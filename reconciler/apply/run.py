"""`reconcile apply [PATH... | PLANFILE]` from end to end: make (or load and re-check)
a plan, then execute it with the fewest calls, concurrently, within the admin quota.

    run_apply(paths, target, settings) -> exit code   (a saved PLANFILE, or specs)
    apply_planfile(path, target, settings) -> exit code
    apply_specs(paths, target, settings) -> exit code

A PLANFILE is refused before any call when it is damaged, edited (its digest or its
requests: plan/planfile.py), not the `--expect-digest` one, or aimed elsewhere than
where it was made (plan/origin.py); with no target flag it goes where it was made.
Then every fingerprint is re-checked, the plan is printed, and it is executed.

Output: the plan and per-topic lines/bar go to stdout with `--format text`; with
`--format json` stdout carries only the results JSON and everything else goes to
stderr. Exit codes: 0 applied (or nothing to do), 1 any failure or refusal, 130
interrupted (after the summary).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click

from reconciler.apply.executor import (
    DEFAULT_CONCURRENCY,
    DEFAULT_READBACK_WAIT,
    Executor,
    readback_policy,
)
from reconciler.apply.freshness import check_fresh
from reconciler.apply.guard import Guard, GuardedBackend
from reconciler.apply.interrupt import stop_on_sigint
from reconciler.apply.progress import make_reporter
from reconciler.apply.ratelimit import DEFAULT_RATE, ProjectRateLimiter
from reconciler.apply.result import ApplyResult, summary_text
from reconciler.apply.retry import DEFAULT_PROPAGATION_WAIT, RetryPolicy
from reconciler.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ReconcileError,
    UsageError,
    ValidationFailed,
)
from reconciler.plan.model import Plan
from reconciler.plan.run import Target, open_target, validate_specs
from reconciler.spec.validate import ValidationResult

CONFIRM_WORD = "yes"


@dataclass(frozen=True)
class Settings:
    """How to apply: the CLI's apply options."""

    auto_approve: bool = False
    prune: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    rate_limit: float = DEFAULT_RATE  # admin calls per second per project; 0 = no limit
    fmt: str = "text"
    color: bool = False
    propagation_wait: float = DEFAULT_PROPAGATION_WAIT  # s: "recently created" refusals
    readback_wait: float = DEFAULT_READBACK_WAIT  # s: polling a new topic's read-back
    expect_digest: str | None = None
    projects: tuple[str, ...] = ()  # --project: only these projects' declared topics

    def guard(self) -> Guard:
        """The rate limit and retry policy these settings ask for."""
        limiter = ProjectRateLimiter(self.rate_limit or None)
        return Guard(limiter, RetryPolicy(propagation_wait=self.propagation_wait))

    @property
    def out(self) -> TextIO:
        return sys.stdout if self.fmt == "text" else sys.stderr


def open_guarded(
    target: Target, guard: Guard, result: ValidationResult | None = None
) -> GuardedBackend:
    """The target with the client library's retry off (apply.retry is the only,
    bounded, counted retry), rate limited and retried by `guard`."""
    if result is None:
        from reconciler.backends.target import open_backend

        inner = open_backend(
            target.local,
            target.emulator,
            target.org_policy,
            client_retry=False,
            timeout=target.timeout,
            state_dir=target.state_dir,
        )
    else:
        inner = open_target(target, result, client_retry=False)
    return GuardedBackend(inner, guard)


def run_apply(paths: Sequence[Path], target: Target, settings: Settings) -> int:
    """One argument naming a saved plan applies that plan; otherwise PATH... specs."""
    from reconciler.plan.planfile import looks_like_plan_file

    if looks_like_plan_file(paths):
        return apply_planfile(paths[0], target, settings)
    if settings.expect_digest is not None:
        raise UsageError(
            "--expect-digest applies to a saved plan: `reconcile apply PLANFILE "
            "--expect-digest sha256:...`",
            hint="save the plan with `reconcile plan --out PLANFILE` and review its digest",
        )
    return apply_specs(paths, target, settings)


def apply_planfile(path: Path, target: Target, settings: Settings) -> int:
    """Apply a saved plan: checked whole and unedited, where it was made, still fresh."""
    from reconciler.plan.origin import apply_target
    from reconciler.plan.planfile import check_expected_digest, read_plan
    from reconciler.plan.projects import check_plan_projects

    if settings.prune:
        raise UsageError(
            "--prune is decided when the plan is made; it cannot be added to a saved plan",
            hint="make the plan with `reconcile plan --prune --out PLANFILE`",
        )
    plan = read_plan(path)
    if settings.expect_digest is not None:
        check_expected_digest(plan, settings.expect_digest, path)
    check_plan_projects(plan.projects, settings.projects, path)
    refuse_plan_with_errors(plan)
    use, notes = apply_target(plan.target, target, path)
    for note in notes:
        click.echo(note, err=True)
    guard = settings.guard()
    try:
        backend = open_guarded(use, guard)
    except ReconcileError as exc:
        raise _naming(path, exc) from None
    try:
        try:
            check_fresh(plan, backend)
        except ReconcileError as exc:
            raise _naming(path, exc) from None
        _show(plan, settings)
        return execute(plan, backend, guard, settings)
    finally:
        backend.close()


def _naming(path: Path, exc: ReconcileError) -> ReconcileError:
    """The same refusal, saying which plan file it is about."""
    exc.message = f"{path}: {exc.message}"
    return exc


def apply_specs(paths: Sequence[Path], target: Target, settings: Settings) -> int:
    """Validate, plan, show, confirm (unless --auto-approve), execute."""
    from reconciler.plan.make import make_plan

    if not settings.auto_approve and not _interactive():
        raise UsageError(
            "refusing to apply without confirmation: there is no terminal to ask on, "
            "and --auto-approve was not given; nothing was changed",
            hint="review `reconcile plan` and rerun with --auto-approve, or apply a "
            "saved plan: `reconcile plan --out PLANFILE` then `reconcile apply PLANFILE`",
        )
    from reconciler.plan.origin import anchored, record_target
    from reconciler.plan.projects import select_projects

    result = validate_specs(paths, target.org_policy)
    if result.diagnostics.has_errors:
        raise ValidationFailed("the specs have errors; nothing was applied")
    desired = select_projects(result.desired, settings.projects, settings.prune)
    target = anchored(target, paths)
    origin = record_target(target)
    guard = settings.guard()
    backend = open_guarded(target, guard, result)
    try:
        validation = result.diagnostics.sorted()
        plan = make_plan(
            desired, backend, prune=settings.prune, validation=validation, origin=origin,
            projects=settings.projects,
        )
        _show(plan, settings)
        refuse_plan_with_errors(plan)
        text = settings.fmt == "text"
        if not plan.has_changes:
            click.echo(
                "No changes. The live topics match the specs; nothing to apply.", err=not text
            )
            if not text:
                click.echo(ApplyResult(unchanged=len(plan.resource_changes)).dumps(), nl=False)
            return EXIT_OK
        if not settings.auto_approve and not _confirm():
            click.echo("Apply cancelled; nothing was changed.", err=True)
            return EXIT_ERROR
        return execute(plan, backend, guard, settings)
    finally:
        backend.close()


def _show(plan: Plan, settings: Settings) -> None:
    from reconciler.render import render

    color = settings.color and settings.out is sys.stdout
    click.echo(render(plan, "text", color), nl=False, color=color, file=settings.out)


def refuse_plan_with_errors(plan: Plan) -> None:
    """A plan whose specs break the live org policy is never applied."""
    if plan.has_errors:
        from reconciler.render import diagnostics as report

        click.echo(report.text(plan.errors), nl=False, err=True)
        raise ValidationFailed("the specs conflict with the live org policy; nothing was applied")


def _interactive() -> bool:
    """A person can answer the confirmation prompt."""
    return sys.stdin.isatty()


def _confirm() -> bool:
    click.echo("Only 'yes' will be accepted to approve.")
    answer = click.prompt("Do you want to perform these actions?", default="", show_default=False)
    return bool(answer.strip() == CONFIRM_WORD)


def execute(plan: Plan, backend: GuardedBackend, guard: Guard, settings: Settings) -> int:
    """Run the plan's changes; Ctrl-C stops starting new calls. Returns the exit code."""
    work = sum(1 for rc in plan.resource_changes if rc.action != "no-op")
    reporter = make_reporter(settings.out, work)
    executor = Executor(
        backend.inner,
        guard,
        concurrency=settings.concurrency,
        reporter=reporter,
        allow_delete=plan.prune,
        readback=readback_policy(settings.readback_wait),
    )
    guard.notify = reporter.message
    with stop_on_sigint(guard.stop, reporter):
        result = executor.run(plan.resource_changes)
    reporter.close()
    text = settings.fmt == "text"
    click.echo(summary_text(result), nl=False, err=not text)
    if not text:
        click.echo(result.dumps(), nl=False)
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_ERROR if result.failed else EXIT_OK
