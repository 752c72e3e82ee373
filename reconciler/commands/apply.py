"""`reconcile apply [PATH... | PLANFILE]`: make (or load and re-check) a plan, then
execute it with the fewest calls, concurrently, within the admin quota.

Output: the plan and per-topic lines/bar go to stdout with `--format text`; with
`--format json` stdout carries only the results JSON and everything else goes to
stderr. Exit codes: 0 applied (or nothing to do), 1 any failure or refusal, 130
interrupted (after the summary).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

import click

from reconciler.apply.executor import DEFAULT_CONCURRENCY, Executor
from reconciler.apply.freshness import check_fresh
from reconciler.apply.guard import Guard, GuardedBackend
from reconciler.apply.progress import Reporter, make_reporter
from reconciler.apply.ratelimit import DEFAULT_RATE, ProjectRateLimiter
from reconciler.apply.result import ApplyResult, summary_text
from reconciler.commands._options import read_plan, render_plan, target_options, use_colour
from reconciler.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    StalePlanError,
    UsageError,
    ValidationFailed,
)
from reconciler.orgpolicy.store import PolicyStore
from reconciler.plan.model import Plan

CONFIRM_WORD = "yes"


def looks_like_plan_file(paths: tuple[Path, ...]) -> bool:
    """One argument naming a file whose JSON has `format_version`: a saved plan."""
    if len(paths) != 1 or not paths[0].is_file():
        return False
    try:
        with paths[0].open(encoding="utf-8") as fh:
            head = fh.read(1)
            if head != "{":
                return False
            fh.seek(0)
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "format_version" in data


@click.command("apply")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
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
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    auto_approve: bool,
    prune: bool,
    concurrency: int,
    rate_limit: float,
    fmt: str,
) -> None:
    """Apply the specs under PATH... (default: specs/), or a saved PLANFILE."""
    out: TextIO = sys.stdout if fmt == "text" else sys.stderr
    guard = Guard(ProjectRateLimiter(rate_limit or None))
    if looks_like_plan_file(paths):
        if prune:
            raise UsageError(
                "--prune is decided when the plan is made; it cannot be added to a saved plan",
                hint="make the plan with `reconcile plan --prune --out PLANFILE`",
            )
        plan = read_plan(paths[0])
        _refuse_plan_with_errors(plan)
        backend = _open(local, emulator, org_policy, guard)
        try:
            if plan.target and plan.target != backend.target:
                raise StalePlanError(
                    f"the plan was made against {plan.target}, not {backend.target}; "
                    "nothing was applied",
                    hint="apply it with the same --local/--emulator target it was made for",
                )
            check_fresh(plan, backend)
            _execute(plan, backend, guard, concurrency, fmt, out)
        finally:
            backend.close()
        return

    if not auto_approve and not _interactive():
        raise UsageError(
            "refusing to apply without confirmation: there is no terminal to ask on, "
            "and --auto-approve was not given; nothing was changed",
            hint="review `reconcile plan` and rerun with --auto-approve, or apply a "
            "saved plan: `reconcile plan --out PLANFILE` then `reconcile apply PLANFILE`",
        )
    from reconciler.plan.make import make_plan
    from reconciler.render import diagnostics as report
    from reconciler.spec.validate import validate_paths

    result = validate_paths(list(paths) or [Path("specs")], org_policy)
    diagnostics = result.diagnostics.sorted()
    if diagnostics:
        click.echo(report.text(diagnostics), nl=False, err=True)
    if result.diagnostics.has_errors:
        raise ValidationFailed("the specs have errors; nothing was applied")
    store = result.policy_store if org_policy is not None else None
    backend = _open(local, emulator, org_policy, guard, store, seed=result.policy_store)
    try:
        plan = make_plan(result.desired, backend, store, prune=prune, reported=diagnostics)
        _show(plan, out)
        _refuse_plan_with_errors(plan)
        if not plan.has_changes:
            click.echo(
                "No changes. The live topics match the specs; nothing to apply.", err=fmt != "text"
            )
            if fmt == "json":
                click.echo(ApplyResult(unchanged=len(plan.resource_changes)).dumps(), nl=False)
            return
        if not auto_approve and not _confirm():
            click.echo("Apply cancelled; nothing was changed.", err=True)
            sys.exit(EXIT_ERROR)
        _execute(plan, backend, guard, concurrency, fmt, out)
    finally:
        backend.close()


def _open(
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    guard: Guard,
    store: PolicyStore | None = None,
    seed: PolicyStore | None = None,
) -> GuardedBackend:
    from reconciler.backends.target import open_backend

    inner = open_backend(local, emulator, org_policy, store, local_seed=seed)
    inner.client_retry = False  # apply.retry is the only, bounded, counted retry
    return GuardedBackend(inner, guard)


def _show(plan: Plan, out: TextIO) -> None:
    color = use_colour() and out is sys.stdout
    click.echo(render_plan(plan, "text", color), nl=False, color=color, file=out)


def _refuse_plan_with_errors(plan: Plan) -> None:
    errors = [d for d in plan.diagnostics if d.get("severity") == "error"]
    if errors:
        for d in errors:
            where = ":".join(str(d[k]) for k in ("file", "line", "col") if d.get(k))
            click.echo(f"{where}: error[{d.get('code', '')}]: {d.get('message', '')}", err=True)
        raise ValidationFailed("the specs conflict with the live org policy; nothing was applied")


def _interactive() -> bool:
    """A person can answer the confirmation prompt."""
    return sys.stdin.isatty()


def _confirm() -> bool:
    click.echo("Only 'yes' will be accepted to approve.")
    answer = click.prompt("Do you want to perform these actions?", default="", show_default=False)
    return bool(answer.strip() == CONFIRM_WORD)


@contextmanager
def _stop_on_sigint(stop: threading.Event, reporter: Reporter) -> Iterator[None]:
    """First Ctrl-C: start no new call, let those in flight finish. Second: abort."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        reporter.message(
            "Interrupt: starting no new calls; waiting for those in flight "
            "(Ctrl-C again to abort at once)"
        )

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _execute(
    plan: Plan, backend: GuardedBackend, guard: Guard, concurrency: int, fmt: str, out: TextIO
) -> None:
    work = sum(1 for rc in plan.resource_changes if rc.action != "no-op")
    reporter = make_reporter(out, work)
    executor = Executor(
        backend.inner, guard, concurrency=concurrency, reporter=reporter, allow_delete=plan.prune
    )
    with _stop_on_sigint(guard.stop, reporter):
        result = executor.run(plan.resource_changes)
    reporter.close()
    click.echo(summary_text(result), nl=False, err=fmt != "text")
    if fmt == "json":
        click.echo(result.dumps(), nl=False)
    if result.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_ERROR if result.failed else EXIT_OK)
