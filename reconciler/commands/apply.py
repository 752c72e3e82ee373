"""`reconcile apply [PATH... | PLANFILE]`: make (or load and re-check) a plan, show
it, confirm, then execute it with the fewest calls, concurrently, within the admin
quota.

A PLANFILE is refused before any call when it is damaged, edited (its digest or its
requests: plan/planfile.py), not the `--expect-digest` one, or aimed elsewhere than
where it was made (plan/origin.py); with no target flag it goes where it was made.
Then every fingerprint is re-checked, the plan is printed, and it is executed.

`--strict-groups` is an input to validation and to the plan's org-policy checks, as
for `plan`: `apply PATH... --strict-groups` refuses what `plan PATH...
--strict-groups` refuses. A saved plan is executed as it was reviewed; with
`--strict-groups` the rule is applied to the diagnostics the plan recorded, so a plan
made without it that carries a refusal resting on inferred membership is refused
(one made with it never carries one: it would not have been made).

Output: the plan and per-topic lines/bar go to stdout with `--format text`; with
`--format json` stdout carries only the results JSON and everything else goes to
stderr. Exit codes: 0 applied (or nothing to do), 1 any failure or refusal, 130
interrupted (after the summary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
from reconciler.apply.ratelimit import DEFAULT_RATE, ProjectRateLimiter
from reconciler.apply.result import ApplyResult
from reconciler.apply.retry import DEFAULT_PROPAGATION_WAIT, AdminRetry
from reconciler.backends.base import Backend, TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.commands import output
from reconciler.commands._options import (
    format_option,
    project_option,
    strict_groups_option,
    target_options,
)
from reconciler.commands._planning import open_target, show_plan, validate_specs
from reconciler.commands.apply_view import progress_for, summary_text
from reconciler.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ReconcileError,
    UsageError,
    ValidationFailed,
)
from reconciler.perf import gc_resumed
from reconciler.plan.make import make_plan
from reconciler.plan.model import Plan
from reconciler.plan.origin import anchored, apply_target, record_target
from reconciler.plan.planfile import check_expected_digest, looks_like_plan_file, read_plan
from reconciler.plan.projects import check_plan_projects, select_projects
from reconciler.render import diagnostics as report
from reconciler.spec.orgrules import promote_inferred
from reconciler.spec.validate import ValidationResult

CONFIRM_WORD = "yes"


@dataclass(frozen=True)
class ApplyOptions:
    """How to apply: the CLI's apply options (the target apart)."""

    auto_approve: bool = False
    prune: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    rate_limit: float = DEFAULT_RATE  # admin calls per second per project; 0 = no limit
    fmt: str = "text"
    colour: bool = False
    propagation_wait: float = DEFAULT_PROPAGATION_WAIT  # s: "recently created" refusals
    readback_wait: float = DEFAULT_READBACK_WAIT  # s: polling a new topic's read-back
    expect_digest: str | None = None
    projects: tuple[str, ...] = ()  # --project: only these projects' declared topics
    strict_groups: bool = False

    def guard(self) -> Guard:
        """The rate limit and retry these options ask for."""
        limiter = ProjectRateLimiter(self.rate_limit or None)
        return Guard(limiter, AdminRetry(propagation_wait=self.propagation_wait))

    @property
    def out(self) -> output.Writer:
        """Where the plan and the progress go: stdout, unless it carries the JSON."""
        return output.stdout() if self.fmt == "text" else output.stderr()


@click.command("apply")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
@project_option
@click.option("--auto-approve", is_flag=True, help="Apply without asking for confirmation.")
@click.option(
    "--prune", is_flag=True, help="Delete undeclared topics that carry the ownership label."
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Topics applied in parallel.",
)
@click.option(
    "--rate-limit",
    "rate_limit",
    type=click.FloatRange(min=0),
    default=DEFAULT_RATE,
    show_default=True,
    help="Admin calls per second per project (Pub/Sub administrator-operation quota); "
    "0 = no limit.",
)
@click.option(
    "--propagation-wait",
    "propagation_wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_PROPAGATION_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="How long to keep retrying calls that a recently created project refuses "
    "while its organization policy propagates (0 = fail at once).",
)
@click.option(
    "--readback-wait",
    "readback_wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_READBACK_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="How long to poll a new topic until it is readable; then warn (never fail).",
)
@click.option(
    "--expect-digest",
    "expect_digest",
    metavar="sha256:HEX",
    help="Apply the PLANFILE only if its digest is this one (the digest the reviewer saw).",
)
@format_option(
    ("text", "json"),
    help="text: the plan, progress and a summary; json: the summary and the per-topic results.",
)
@strict_groups_option
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    auto_approve: bool,
    prune: bool,
    concurrency: int,
    rate_limit: float,
    propagation_wait: float,
    readback_wait: float,
    fmt: str,
    timeout: float,
    expect_digest: str | None,
    projects: tuple[str, ...],
    strict_groups: bool,
) -> int:
    """Apply the specs under PATH... (default: specs/), or a saved PLANFILE (with
    --strict-groups: refused if it records a refusal resting on inferred membership)."""
    options = ApplyOptions(
        auto_approve,
        prune,
        concurrency,
        rate_limit,
        fmt,
        output.colour_wanted(),
        propagation_wait=propagation_wait,
        readback_wait=readback_wait,
        expect_digest=expect_digest,
        projects=projects,
        strict_groups=strict_groups,
    )
    return run(paths, TargetOptions(local, emulator, org_policy, timeout), options)


def run(paths: Sequence[Path], target: TargetOptions, options: ApplyOptions) -> int:
    """One argument naming a saved plan applies that plan; otherwise PATH... specs."""
    if looks_like_plan_file(paths):
        return apply_planfile(paths[0], target, options)
    if options.expect_digest is not None:
        raise UsageError(
            "--expect-digest applies to a saved plan: `reconcile apply PLANFILE "
            "--expect-digest sha256:...`",
            hint="save the plan with `reconcile plan --out PLANFILE` and review its digest",
        )
    return apply_specs(paths, target, options)


def open_guarded(
    target: TargetOptions, guard: Guard, result: ValidationResult | None = None
) -> GuardedBackend:
    """The target with the client library's retry off (apply/retry.py is the only,
    bounded, counted retry), rate limited and retried by `guard`. `result`: the
    validation the plan is made from (its snapshot is the --org-policy one)."""
    inner: Backend
    if result is None:
        inner = open_backend(target, client_retry=False)
    else:
        inner = open_target(target, result, client_retry=False)
    return GuardedBackend(inner, guard)


def apply_planfile(path: Path, target: TargetOptions, options: ApplyOptions) -> int:
    """Apply a saved plan: checked whole and unedited, where it was made, still fresh."""
    if options.prune:
        raise UsageError(
            "--prune is decided when the plan is made; it cannot be added to a saved plan",
            hint="make the plan with `reconcile plan --prune --out PLANFILE`",
        )
    plan = read_plan(path)
    if options.expect_digest is not None:
        check_expected_digest(plan, options.expect_digest, path)
    check_plan_projects(plan.projects, options.projects, path)
    refuse_plan_with_errors(plan, options.strict_groups)
    use, notes = apply_target(plan.target, target, path)
    for note in notes:
        output.stderr().line(note)
    guard = options.guard()
    try:
        backend = open_guarded(use, guard)
    except ReconcileError as exc:
        raise _naming(path, exc) from None
    try:
        try:
            check_fresh(plan, backend)
        except ReconcileError as exc:
            raise _naming(path, exc) from None
        _show(plan, options)
        return execute(plan, backend, guard, options)
    finally:
        backend.close()


def _naming(path: Path, exc: ReconcileError) -> ReconcileError:
    """The same refusal, saying which plan file it is about."""
    exc.message = f"{path}: {exc.message}"
    return exc


def apply_specs(paths: Sequence[Path], target: TargetOptions, options: ApplyOptions) -> int:
    """Validate, plan, show, confirm (unless --auto-approve), execute."""
    if not options.auto_approve and not _interactive():
        raise UsageError(
            "refusing to apply without confirmation: there is no terminal to ask on, "
            "and --auto-approve was not given; nothing was changed",
            hint="review `reconcile plan` and rerun with --auto-approve, or apply a "
            "saved plan: `reconcile plan --out PLANFILE` then `reconcile apply PLANFILE`",
        )
    result = validate_specs(paths, target.org_policy, options.strict_groups)
    if result.diagnostics.has_errors:
        raise ValidationFailed("the specs have errors; nothing was applied")
    desired = select_projects(result.desired, options.projects, options.prune)
    target = anchored(target, paths)
    origin = record_target(target)
    guard = options.guard()
    backend = open_guarded(target, guard, result)
    try:
        plan = make_plan(
            desired,
            backend,
            prune=options.prune,
            validation=result.diagnostics.sorted(),
            origin=origin,
            projects=options.projects,
            strict_groups=options.strict_groups,
        )
        _show(plan, options)
        refuse_plan_with_errors(plan)
        if not plan.has_changes:
            text = options.fmt == "text"
            writer = output.stdout() if text else output.stderr()
            writer.line("No changes. The live topics match the specs; nothing to apply.")
            if not text:
                output.stdout().data(ApplyResult(unchanged=len(plan.resource_changes)).dumps())
            return EXIT_OK
        if not options.auto_approve and not _confirm():
            output.stderr().line("Apply cancelled; nothing was changed.")
            return EXIT_ERROR
        return execute(plan, backend, guard, options)
    finally:
        backend.close()


def _show(plan: Plan, options: ApplyOptions) -> None:
    """The text plan where the progress goes; colour only on stdout."""
    show_plan(plan, "text", options.colour and options.fmt == "text", to=options.out)


def refuse_plan_with_errors(plan: Plan, strict_groups: bool = False) -> None:
    """A plan whose specs break the live org policy is never applied; with
    `strict_groups`, neither is one whose refusals rest on inferred membership."""
    diagnostics = promote_inferred(plan.diagnostics) if strict_groups else plan.diagnostics
    errors = [d for d in diagnostics if d.is_error]
    if errors:
        output.stderr().document(report.text(errors))
        raise ValidationFailed("the specs conflict with the live org policy; nothing was applied")


def _interactive() -> bool:
    """A person can answer the confirmation prompt."""
    return output.stdin_is_terminal()


def _confirm() -> bool:
    output.stdout().line("Only 'yes' will be accepted to approve.")
    return output.ask("Do you want to perform these actions?").strip() == CONFIRM_WORD


def execute(plan: Plan, backend: GuardedBackend, guard: Guard, options: ApplyOptions) -> int:
    """Run the plan's changes, showing progress; Ctrl-C stops starting new calls.
    Returns the exit code."""
    work = sum(1 for rc in plan.resource_changes if rc.action != "no-op")
    progress = progress_for(options.out, work)
    executor = Executor(
        backend.inner,
        guard,
        concurrency=options.concurrency,
        events=progress,
        allow_delete=plan.prune,
        readback=readback_policy(options.readback_wait),
    )
    guard.events = progress
    # Minutes of calls whose errors and retries make cycles (reconciler/perf.py).
    with gc_resumed(), stop_on_sigint(guard.stop, progress):
        result = executor.run(plan.resource_changes)
    progress.close()
    text = options.fmt == "text"
    (output.stdout() if text else output.stderr()).document(summary_text(result))
    if not text:
        output.stdout().data(result.dumps())
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_ERROR if result.failed else EXIT_OK
