"""`reconcile residency [PATH...]`: for every declared topic (with --all-live, every
live topic of the managed projects), where its messages are stored (by the by-region
gauges, each subscription's backlog named), which of those regions its live policy, its declared
policy or the effective org policy does not allow, when the last of them ages out, and
every export paused by in-transit restriction (docs/residency.md).

Exit codes: 0 clean, 1 error (the specs, a project that cannot be read), 2 with
--detailed-exitcode when anything is stored outside the allowed regions or an export
is paused, or a topic could not be checked for either. What cannot be read
(metrics, subscriptions) is reported as unknown, with why, and does not fail the run.
Per project: one ListTopics pager, one ListSubscriptions pager, the org policy, and
one PromQL query of every gauge it needs (none when nothing can be stored;
backends/residency_reads.py). On a large tree these are read by the plan's
read-ahead process while this one validates the specs (plan/readahead.py), and this
process loads no client library.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path

import click

from reconciler.backends.base import Reads, TargetOptions
from reconciler.backends.residency_reads import ProjectReads, read_project
from reconciler.commands import output
from reconciler.commands._options import format_option, project_option, target_options
from reconciler.commands._planning import open_reads, validate_specs
from reconciler.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, BackendError
from reconciler.plan.observe import MAX_WORKERS
from reconciler.plan.origin import anchored
from reconciler.plan.projects import select_projects
from reconciler.plan.readahead import ReadAhead
from reconciler.render import diagnostics as report_text
from reconciler.render.residency import render
from reconciler.residency.build import build_report

# Projects from which a progress line is drawn on a terminal.
PROGRESS_FROM = 2


@click.command("residency")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
@project_option(
    "Only the declared topics of project P (repeatable): only P is read and reported."
)
@format_option(
    ("text", "json", "markdown"),
    help="text; json: the residency report (docs/residency.schema.json); markdown: a "
    "pull-request comment.",
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 2 when messages are stored outside the allowed regions or an export is "
    "paused, or when a topic cannot be checked for that (its figures are unknown).",
)
@click.option(
    "--all-live",
    is_flag=True,
    help="Also report the live topics of the managed projects that no spec declares "
    "(judged against their live policy and the effective org policy), so that a "
    "compliance run covers the whole project.",
)
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    timeout: float,
    projects: tuple[str, ...],
    fmt: str,
    detailed_exitcode: bool,
    all_live: bool,
) -> int:
    """Where the declared topics' messages are stored, and what is outside the allowed."""
    return run(paths, TargetOptions(local, emulator, org_policy, timeout), projects, fmt,
               detailed_exitcode, all_live)


def run(
    paths: Sequence[Path],
    target: TargetOptions,
    projects: Sequence[str],
    fmt: str,
    detailed_exitcode: bool,
    all_live: bool = False,
) -> int:
    with ReadAhead.reading(target, projects, reads="residency") as read_ahead:
        return _run(paths, target, projects, fmt, detailed_exitcode, read_ahead, all_live)


def _run(
    paths: Sequence[Path],
    target: TargetOptions,
    projects: Sequence[str],
    fmt: str,
    detailed_exitcode: bool,
    read_ahead: ReadAhead | None,
    all_live: bool,
) -> int:
    result = validate_specs(
        paths, target.org_policy,
        on_document=read_ahead.document if read_ahead is not None else None,
    )
    if result.diagnostics.has_errors:
        output.stderr().line(
            report_text.summary(result.diagnostics.sorted(), result.files)
            + "; no residency report made"
        )
        return EXIT_ERROR
    desired = select_projects(result.desired, projects)
    target = anchored(target, paths)
    live = open_reads(target, result, read_ahead, desired.projects)
    try:
        reads = _read(live, desired.projects)
        label = live.info.label
    finally:
        live.close()
    report = build_report(
        desired.topics, reads, label, datetime.now(UTC).isoformat(timespec="seconds"),
        all_live=all_live,
    )
    text = render(report, fmt)
    if fmt == "json":
        output.stdout().data(text)
    else:
        output.stdout().document(text)
    if detailed_exitcode and (report.has_findings or report.unchecked):
        return EXIT_CHANGES
    return EXIT_OK


def _read(live: Reads, projects: Sequence[str]) -> dict[str, ProjectReads]:
    """Every project in parallel; all failures reported together, naming the project."""
    err = output.stderr()
    progress = len(projects) >= PROGRESS_FROM and err.is_terminal()
    reads: dict[str, ProjectReads] = {}
    errors: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_WORKERS, len(projects)))) as pool:
        futures = {pool.submit(read_project, live, p): p for p in projects}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                reads[futures[future]] = future.result()
            except BackendError as exc:
                errors.append(str(exc))
            if progress:
                err.redraw(f"residency: read {done}/{len(projects)} projects")
    if progress:
        err.end_line()
    if errors:
        raise BackendError("\n".join(sorted(errors)))
    return reads
