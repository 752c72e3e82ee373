"""`reconcile plan [PATH...]`: validate, observe (every read), make the plan (no read),
render; optionally save.

Exit codes: 0 no changes (drift warnings do not count), 1 error, 2 changes with
--detailed-exitcode.

Every format carries the diagnostics: with errors, `--format json` prints a plan
document with no changes and the `diagnostics`, `--format markdown` a comment whose
body is the errors (exit 1 either way); text prints them on stderr. The plan records
where it was made (plan/origin.py); a large tree's live topics are read by a second
process while this one validates (plan/readahead.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from reconciler.backends.base import TargetOptions
from reconciler.backends.target import target_info
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
    errors_only,
    open_reads,
    planning_gate,
    show_plan,
    tree_snapshot,
    validate_specs,
)
from reconciler.commands._promised_log import PromisedLog
from reconciler.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK
from reconciler.orgpolicy.unjudged import AllowUnjudged
from reconciler.perf import leave_to_exit
from reconciler.plan.make import PlanOptions, make_plan
from reconciler.plan.model import Plan
from reconciler.plan.observe import observe
from reconciler.plan.origin import anchored, made_at
from reconciler.plan.planfile import write_plan
from reconciler.plan.projects import select_projects
from reconciler.plan.readahead import ReadAhead
from reconciler.render import diagnostics as report
from reconciler.render.text import custom_constraint_lines


@dataclass(frozen=True)
class PlanCommandOptions:
    """The CLI's plan options (the target apart): how to plan, what to show and save."""

    out: Path | None = None
    fmt: str = "text"
    detailed_exitcode: bool = False
    prune: bool = False
    colour: bool = False
    strict_groups: bool = False
    projects: tuple[str, ...] = ()
    prune_subscribed: bool = False
    allow_unjudged: AllowUnjudged = field(default_factory=AllowUnjudged)


@click.command("plan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
@project_option()
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
    help="Also delete undeclared topics of the named projects that this spec tree owns "
    "(label reconcile-owner).",
)
@prune_subscribed_option
@strict_groups_option
@allow_unjudged_option
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
    prune_subscribed: bool,
    allow_unjudged: AllowUnjudged,
) -> int:
    """Show what apply would change for the specs under PATH... (default: specs/)."""
    options = PlanCommandOptions(
        out, fmt, detailed_exitcode, prune or prune_subscribed, output.colour_wanted(),
        strict_groups, projects, prune_subscribed, allow_unjudged,
    )
    return run(paths, TargetOptions(local, emulator, org_policy, timeout), options)


def run(paths: Sequence[Path], target: TargetOptions, options: PlanCommandOptions) -> int:
    """The whole plan flow."""
    promised = PromisedLog(options.fmt)
    with ReadAhead.reading(target, options.projects) as read_ahead:
        return _run(paths, target, options, read_ahead, promised)


def _run(
    paths: Sequence[Path],
    target: TargetOptions,
    options: PlanCommandOptions,
    read_ahead: ReadAhead | None,
    promised: PromisedLog,
) -> int:
    gate = planning_gate(paths, options.allow_unjudged)
    result = validate_specs(
        paths,
        target.org_policy,
        options.strict_groups,
        read_ahead.document if read_ahead is not None else None,
        gate,
        planned=True,
    )
    validation = result.diagnostics.sorted()
    promised.findings = validation
    if result.diagnostics.has_errors:
        output.stderr().line(report.summary(validation, result.files) + "; no plan made")
        owner = result.desired.owner.name
        plan = errors_only(validation, made_at(target_info(target)), owner)
        return _refused(plan, options.fmt, promised)
    desired = select_projects(result.desired, options.projects, options.prune)
    target = anchored(target, paths)
    reads = open_reads(target, result, read_ahead, desired.projects)
    try:
        observation = observe(reads, desired, options.prune, snapshot=tree_snapshot(result))
    finally:
        reads.close()
    planning = PlanOptions(
        options.prune, options.prune_subscribed, options.strict_groups, options.projects
    )
    plan = make_plan(desired, observation, planning, validation, gate)
    promised.findings = plan.diagnostics
    if plan.has_errors:
        found = [*plan.diagnostics, *plan.accepted]
        output.stderr().document(report.text(found))
        for line in custom_constraint_lines(plan):
            output.stderr().line(line)
        output.stderr().line(f"{conflict(plan.diagnostics)}; no plan made, nothing changed")
        refused = errors_only(found, plan.target, plan.owner, plan.custom_constraints)
        return _refused(refused, options.fmt, promised)
    if options.out is not None:
        write_plan(plan, options.out)
    show_plan(plan, options.fmt, options.colour)
    promised.delivered()
    if options.out is not None:
        output.stderr().line(
            f"Saved the plan to {options.out} (digest {plan.digest}); apply exactly this "
            f"plan with `reconcile apply {options.out} --expect-digest {plan.digest}`."
        )
    leave_to_exit(result, plan, size=len(plan.resource_changes))
    if options.detailed_exitcode and plan.has_changes:
        return EXIT_CHANGES
    return EXIT_OK


def _refused(plan: Plan, fmt: str, promised: PromisedLog) -> int:
    """Text has printed the errors on stderr; JSON and markdown print a document."""
    if fmt != "text":
        show_plan(plan, fmt)
        promised.delivered()
    return EXIT_ERROR
