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

Ownership (docs/cli.md): a change that takes over a topic another spec tree owns
is refused, before any call, unless `--adopt-from OWNER` names that tree. Each create
and update also records the plan's marker on the topic (apply/executor.py), which is
how a replayed saved plan is told "already applied" or "superseded".

Output: the plan and per-topic lines/bar go to stdout with `--format text`; with
`--format json` stdout carries only one outcome document (reconciler/apply/outcome.py),
whatever happened, refusals and errors included, and everything else goes to stderr.
Exit codes (reconciler/errors.py): 0 applied (or nothing to do), 1 an error before any
change, 3 partial failure (at least one topic failed), 4 the saved plan refused before
any change (`PlanRefused`: stale, already applied, superseded, digest mismatch,
retarget, damaged), 130 interrupted by Ctrl-C, 143 by SIGTERM (after the summary,
either way). Once a change is made, a stream that cannot be written (a full disk)
never turns the outcome into 1: it is said on stderr and the code stays (`say_lost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
from reconciler.apply.interrupt import stop_on_signals
from reconciler.apply.outcome import ApplyOutcome, finished, no_changes, stopped
from reconciler.apply.ratelimit import DEFAULT_RATE, ProjectRateLimiter
from reconciler.apply.retry import DEFAULT_PROPAGATION_WAIT, AdminRetry
from reconciler.backends.base import Backend, TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.commands import output
from reconciler.commands._options import (
    allow_unjudged_option,
    format_option,
    project_option,
    prune_subscribed_option,
    strict_groups_option,
    target_options,
)
from reconciler.commands._planning import (
    conflict,
    open_target,
    planning_gate,
    say_target,
    show_plan,
    tree_snapshot,
    validate_specs,
)
from reconciler.commands.apply_view import progress_for, summary_text
from reconciler.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_REFUSED,
    OwnershipRefused,
    ReconcileError,
    UsageError,
    ValidationFailed,
)
from reconciler.orgpolicy.unjudged import AllowUnjudged
from reconciler.perf import gc_resumed
from reconciler.plan.differ import taken_from
from reconciler.plan.make import PlanOptions, make_plan, takeover_hint
from reconciler.plan.model import Plan
from reconciler.plan.observe import observe
from reconciler.plan.origin import anchored, apply_target
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
    adopt_from: tuple[str, ...] = ()  # --adopt-from: owners whose topics may be taken over
    prune_subscribed: bool = False  # --prune-subscribed (implies prune)
    # --allow-unjudged (a plan from specs; refused with a saved plan)
    allow_unjudged: AllowUnjudged = field(default_factory=AllowUnjudged)

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
@project_option()
@click.option("--auto-approve", is_flag=True, help="Apply without asking for confirmation.")
@click.option(
    "--prune",
    is_flag=True,
    help="Delete undeclared topics that this spec tree owns (label reconcile-owner).",
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
@click.option(
    "--adopt-from",
    "adopt_from",
    multiple=True,
    metavar="OWNER",
    help="Take over declared topics that the spec tree OWNER owns (label reconcile-owner); "
    "without it apply refuses to. Repeatable.",
)
@format_option(
    ("text", "json"),
    help="text: the plan, progress and a summary; json: one outcome document "
    "(docs/apply-outcome.schema.json) whatever happened.",
)
@prune_subscribed_option
@strict_groups_option
@allow_unjudged_option
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
    adopt_from: tuple[str, ...],
    prune_subscribed: bool,
    allow_unjudged: AllowUnjudged,
) -> int:
    """Apply the specs under PATH... (default: specs/), or a saved PLANFILE (with
    --strict-groups: refused if it records a refusal resting on inferred membership)."""
    options = ApplyOptions(
        auto_approve,
        prune or prune_subscribed,
        concurrency,
        rate_limit,
        fmt,
        output.colour_wanted(),
        propagation_wait=propagation_wait,
        readback_wait=readback_wait,
        expect_digest=expect_digest,
        projects=projects,
        strict_groups=strict_groups,
        adopt_from=adopt_from,
        prune_subscribed=prune_subscribed,
        allow_unjudged=allow_unjudged,
    )
    target = TargetOptions(local, emulator, org_policy, timeout)
    seen = Seen()
    if options.fmt == "json":  # one outcome document on stdout, whatever happens
        output.on_failure(lambda failure, code: print_outcome(stopped(failure, seen.plan, code)))
    outcome = run(paths, target, options, seen)
    if options.fmt == "json":
        print_outcome(outcome)
    return outcome.exit_code


def print_outcome(outcome: ApplyOutcome) -> None:
    """The one outcome document on stdout; if stdout cannot take it, said on stderr
    with the exit code it keeps."""
    try:
        output.stdout().data(outcome.dumps())
    except output.OutputFailed as exc:
        say_lost(exc, "the outcome document", outcome.exit_code)


class Seen:
    """The plan an apply has read or made so far, for the outcome of a refusal or an
    error (its digest and its changes, none attempted)."""

    plan: Plan | None = None


def say_lost(exc: output.OutputFailed, what: str, exit_code: int, summary: str = "") -> None:
    """A write that failed after the apply decided what it did: said on stderr (when
    that is not the stream that failed), with the exit code it keeps: the code says
    what happened to the topics, never "nothing was changed" after a change."""
    if exc.stream == "stderr":
        return
    meaning = {EXIT_ERROR: "nothing was changed", EXIT_OK: "the plan was applied",
               EXIT_PARTIAL: "some topics failed, others may be applied",
               EXIT_REFUSED: "the plan was refused; nothing was changed"}.get(
        exit_code, "the apply was interrupted; what was applied is kept")
    output.last_word(f"Error: {what} could not be written to {exc.stream} ({exc.why}); exit "
                     f"code {exit_code}: {meaning}" + (f".\n{summary}" if summary else "."))


def run(
    paths: Sequence[Path], target: TargetOptions, options: ApplyOptions, seen: Seen | None = None
) -> ApplyOutcome:
    """One argument naming a saved plan applies that plan; otherwise PATH... specs."""
    seen = seen or Seen()
    if looks_like_plan_file(paths):
        if options.allow_unjudged:
            raise UsageError(
                "--allow-unjudged decides how a plan is made, and a saved plan is "
                "already made: pass it to `reconcile plan` (the saved plan records what "
                "it let through)",
                hint=f"reconcile plan {options.allow_unjudged.describe()} --out PLANFILE",
            )
        return apply_planfile(paths[0], target, options, seen)
    if options.expect_digest is not None:
        raise UsageError(
            "--expect-digest applies to a saved plan: `reconcile apply PLANFILE "
            "--expect-digest sha256:...`",
            hint="save the plan with `reconcile plan --out PLANFILE` and review its digest",
        )
    return apply_specs(paths, target, options, seen)


def open_guarded(
    target: TargetOptions, guard: Guard, result: ValidationResult | None = None
) -> GuardedBackend:
    """The target with the client library's retry off (apply/retry.py is the only,
    bounded, counted retry), rate limited and retried by `guard`. `result`: the
    validation the plan is made from (its snapshot is the --org-policy one)."""
    inner: Backend
    if result is None:
        inner = open_backend(target, client_retry=False)
        say_target(inner.info)
    else:
        inner = open_target(target, result, client_retry=False)
    return GuardedBackend(inner, guard)


def apply_planfile(
    path: Path, target: TargetOptions, options: ApplyOptions, seen: Seen
) -> ApplyOutcome:
    """Apply a saved plan: checked whole and unedited, where it was made, still fresh."""
    if options.prune:
        raise UsageError(
            "--prune is decided when the plan is made; it cannot be added to a saved plan",
            hint="make the plan with `reconcile plan --prune --out PLANFILE`",
        )
    plan = seen.plan = read_plan(path)
    if options.expect_digest is not None:
        check_expected_digest(plan, options.expect_digest, path)
    check_plan_projects(plan.projects, options.projects, path)
    refuse_plan_with_errors(plan, options.strict_groups)
    refuse_takeovers(plan, options.adopt_from)
    use, notes = apply_target(plan.target, target, path)
    for note in notes:
        output.stderr().line(note)
    try:
        backend = open_guarded(use, options.guard())
    except ReconcileError as exc:
        raise _naming(path, exc) from None
    try:
        try:
            check_fresh(plan, backend)
        except ReconcileError as exc:
            raise _naming(path, exc) from None
        _show(plan, options)
        return execute(plan, backend, options, saved=True)
    finally:
        backend.close()


def _naming(path: Path, exc: ReconcileError) -> ReconcileError:
    """The same refusal, saying which plan file it is about."""
    exc.message = f"{path}: {exc.message}"
    return exc


def apply_specs(
    paths: Sequence[Path], target: TargetOptions, options: ApplyOptions, seen: Seen
) -> ApplyOutcome:
    """Validate, plan, show, confirm (unless --auto-approve), execute."""
    if not options.auto_approve and not _interactive():
        raise UsageError(
            "refusing to apply without confirmation: there is no terminal to ask on, "
            "and --auto-approve was not given; nothing was changed",
            hint="review `reconcile plan` and rerun with --auto-approve, or apply a "
            "saved plan: `reconcile plan --out PLANFILE` then `reconcile apply PLANFILE`",
        )
    gate = planning_gate(paths, options.allow_unjudged)
    result = validate_specs(
        paths, target.org_policy, options.strict_groups, gate=gate, planned=True
    )
    if result.diagnostics.has_errors:
        raise ValidationFailed("the specs have errors; nothing was applied")
    desired = select_projects(result.desired, options.projects, options.prune)
    target = anchored(target, paths)
    backend = open_guarded(target, options.guard(), result)
    try:
        observation = observe(backend, desired, options.prune, snapshot=tree_snapshot(result))
        planning = PlanOptions(
            options.prune, options.prune_subscribed, options.strict_groups, options.projects
        )
        plan = make_plan(desired, observation, planning, result.diagnostics.sorted(), gate)
        seen.plan = plan
        _show(plan, options)
        refuse_plan_with_errors(plan)
        refuse_takeovers(plan, options.adopt_from)
        if not plan.has_changes:
            options.out.line("No changes. The live topics match the specs; nothing to apply.")
            return no_changes(plan)
        if not options.auto_approve and not _confirm():
            message = "Apply cancelled; nothing was changed."
            output.stderr().line(message)
            return stopped(ReconcileError(message), plan, EXIT_ERROR)
        return execute(plan, backend, options)
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
        raise ValidationFailed(f"{conflict(errors)}; nothing was applied")


def refuse_takeovers(plan: Plan, adopt_from: Sequence[str]) -> None:
    """A topic another spec tree owns is never taken over silently: refused, naming the
    owner, unless `--adopt-from OWNER` names it. An --adopt-from that adopts nothing is
    said (a misspelt owner would otherwise pass unnoticed)."""
    taken: dict[str, list[str]] = {}
    for rc in plan.resource_changes:
        other = taken_from(rc)
        if other is not None:
            taken.setdefault(other, []).append(rc.address)
    for name in dict.fromkeys(adopt_from):
        if name not in taken:
            output.stderr().line(
                f"note: --adopt-from {name}: no topic of this plan is owned by {name!r}"
            )
    refused = {o: addresses for o, addresses in taken.items() if o not in adopt_from}
    if refused:
        listed = "\n".join(
            f"  - {address} (owner {other})"
            for other, addresses in sorted(refused.items())
            for address in addresses
        )
        raise OwnershipRefused(
            f"refusing to take over topics that another spec tree owns (this plan is "
            f"owner {plan.owner!r}); nothing was applied:\n{listed}",
            hint=takeover_hint(sorted(refused), plan.owner),
            details=[line.strip()[2:] for line in listed.splitlines()],
        )


def _interactive() -> bool:
    """A person can answer the confirmation prompt."""
    return output.stdin_is_terminal()


def _confirm() -> bool:
    output.stdout().line("Only 'yes' will be accepted to approve.")
    return output.ask("Do you want to perform these actions?").strip() == CONFIRM_WORD


def execute(
    plan: Plan, backend: GuardedBackend, options: ApplyOptions, saved: bool = False
) -> ApplyOutcome:
    """Run the plan's changes, showing progress; Ctrl-C or SIGTERM stops starting new
    calls. Returns the outcome (its exit code: 0, 3 partial failure, 130 or 143
    interrupted)."""
    work = sum(1 for rc in plan.resource_changes if rc.action != "no-op")
    progress = progress_for(options.out, work)
    executor = Executor(
        backend,
        concurrency=options.concurrency,
        events=progress,
        readback=readback_policy(options.readback_wait),
    )
    backend.guard.events = progress
    # Minutes of calls whose errors and retries make cycles (reconciler/perf.py).
    with gc_resumed(), stop_on_signals(backend.guard.stop, progress) as received:
        result = executor.run(plan)
    outcome = finished(result, plan.digest, received.exit_code if result.interrupted else None)
    # From here on, what was done stands: a stream that cannot be written is said, and
    # the exit code stays the outcome's.
    summary = summary_text(result, saved)
    lost = progress.lost
    if lost is None:
        progress.close()
        try:
            options.out.document(summary)
        except output.OutputFailed as exc:
            lost = exc
    if lost is not None:
        say_lost(lost, "the apply's progress and summary", outcome.exit_code, summary.rstrip())
    return outcome
