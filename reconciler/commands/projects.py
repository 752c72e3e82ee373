"""`reconcile projects [PATH...] [--changed-from GIT_REF]`: the projects the spec tree
declares and, with `--changed-from`, the ones a change touches, so that a CI matrix is
built from the specs (never typed twice) and only touched projects are planned and
applied (docs/ci.md).

A project is touched when its desired state moved between GIT_REF and the working
tree: a topic added, removed or changed (its own file, a Defaults file, a hedging
profile it uses), or its effective org policy in the snapshot. Offline: nothing is
contacted; git is asked for the tree at GIT_REF (reconciler/gitrev.py).

Output: `--format text` prints one project per line (the touched ones with
`--changed-from`, else every declared one) and what touched them on stderr;
`--format json` one document: `declared`, `touched`, `undeclared` (touched, but no
topic of theirs is left: nothing to plan), `changes` (per project, what moved),
`changed_from` and `commit`. A tree with errors still lists what it can (exit 0:
`validate` is the check that fails on errors).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from reconciler.codec import indented_json
from reconciler.commands import output
from reconciler.commands._options import format_option
from reconciler.errors import EXIT_OK
from reconciler.gitrev import at_revision, repository_of, resolve
from reconciler.spec.touched import declared, touched
from reconciler.spec.validate import DEFAULT_PATH, ValidationResult, validate_paths


@dataclass
class ProjectsReport:
    """`--format json`'s document, written by reconciler/codec.py (every member, in
    this order): the declared projects, the touched ones, those touched with no topic
    left (`undeclared`), what moved per project, and the ref and its commit (null
    without `--changed-from`)."""

    declared: list[str]
    changed_from: str | None
    commit: str | None
    touched: list[str]
    undeclared: list[str]
    changes: dict[str, list[str]]


@click.command("projects")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--changed-from",
    "changed_from",
    metavar="GIT_REF",
    help="Also say which projects the change from GIT_REF (a branch, tag or commit) to "
    "the working tree touches.",
)
@format_option(
    ("text", "json"),
    help="text: one project a line; json: the declared and the touched projects, for a "
    "CI matrix.",
)
def command(paths: tuple[Path, ...], changed_from: str | None, fmt: str) -> int:
    """List the projects the specs under PATH... declare (default: specs/)."""
    specs = list(paths) or [DEFAULT_PATH]
    now = _validated(specs, "the specs")
    report = ProjectsReport(declared(now), changed_from, None, declared(now), [], {})
    if changed_from is not None:
        changes, commit = _changes(specs, now, changed_from)
        report.commit = commit
        report.touched = [p for p in changes if p in report.declared]
        report.undeclared = [p for p in changes if p not in report.declared]
        report.changes = changes
    if fmt == "json":
        output.stdout().data(indented_json(report, ascii=True))
    else:
        for project in report.touched:
            output.stdout().line(project)
        output.stderr().line(_summary(report))
    return EXIT_OK


def _validated(paths: list[Path], what: str) -> ValidationResult:
    result = validate_paths(paths)
    errors = [d for d in result.diagnostics.sorted() if d.is_error]
    if errors:
        output.stderr().line(
            f"note: {what} have {len(errors)} error(s) (`reconcile validate` lists them); "
            "the projects of the topics that could be read are listed"
        )
    return result


def _changes(
    paths: list[Path], now: ValidationResult, ref: str
) -> tuple[dict[str, list[str]], str]:
    """What moved per project from `ref` to the working tree, and the commit of `ref`."""
    root = repository_of(paths[0])
    commit = resolve(root, ref)
    snapshot = [now.policy_source] if now.policy_source is not None else []
    with tempfile.TemporaryDirectory(prefix="reconcile-rev-") as scratch:
        then_paths = at_revision(root, commit, paths, snapshot, Path(scratch))
        then = _validated(then_paths, f"the specs at {ref}") if then_paths else None
        return touched(then, now), commit


def _summary(report: ProjectsReport) -> str:
    head = f"{len(report.declared)} project(s) declared: {', '.join(report.declared) or 'none'}"
    if report.changed_from is None:
        return head
    lines = [head + f"; touched since {report.changed_from}: "
             + (", ".join(report.touched) or "none")]
    for project, reasons in report.changes.items():
        lines += [f"  {project}: {reason}" for reason in reasons]
    if report.undeclared:
        lines.append(
            "no topic is declared any more in " + ", ".join(report.undeclared)
            + ": nothing to plan there (their topics are left as they are)"
        )
    return "\n".join(lines)
