"""`reconcile validate [PATH...]`: check the specs offline, the org-policy snapshot
included, and report every problem.

Output: with `--format text` (or `github`: workflow annotations) the diagnostics on
stdout and the summary on stderr; with `--format json` (or `sarif`) only the
diagnostics' document on stdout. Exit code 1 when any
diagnostic is an error, else 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import click

from reconciler.acceptance import AcceptedDiagnostic
from reconciler.commands import output
from reconciler.commands._options import (
    allow_unjudged_option,
    format_option,
    strict_groups_option,
)
from reconciler.commands._promised_log import PromisedLog
from reconciler.diagnostics import Diagnostic
from reconciler.errors import EXIT_ERROR, EXIT_OK
from reconciler.orgpolicy.unjudged import AllowUnjudged, Gate
from reconciler.render import diagnostics as report
from reconciler.spec.validate import DEFAULT_PATH, validate_paths


class ValidateOptions(NamedTuple):
    paths: tuple[Path, ...]
    org_policy: Path | None = None
    require_org_policy: bool = False
    fmt: str = "text"
    strict_groups: bool = False
    staged: bool = False
    allow_unjudged: AllowUnjudged = AllowUnjudged()


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--org-policy",
    "org_policy",
    type=click.Path(path_type=Path),
    help="Org-policy snapshot (default: org-policy.yaml at the spec root, if any).",
)
@click.option(
    "--require-org-policy",
    "require_org_policy",
    is_flag=True,
    help="Fail when no org-policy snapshot is found (default: a warning that the "
    "org-policy checks did not run), when it places a project in no organization, when "
    "it enforces a custom constraint it does not define, or when a custom constraint's "
    "condition cannot be compiled (default: warnings).",
)
@format_option(
    tuple(report.REPORTERS),
    help="text: one line per problem, and a summary on stderr; json: the diagnostics "
    "as a JSON list; github: GitHub Actions annotations at each spec line; sarif: a "
    "SARIF 2.1.0 log for code scanning.",
)
@strict_groups_option
@allow_unjudged_option
@click.option(
    "--staged",
    is_flag=True,
    help="Check the tree as git's index holds it (what `git commit` would record: "
    "untracked files and unstaged edits left out), as one tree; the pre-commit hook's way.",
)
def command(
    paths: tuple[Path, ...],
    org_policy: Path | None,
    require_org_policy: bool,
    fmt: str,
    strict_groups: bool,
    staged: bool,
    allow_unjudged: AllowUnjudged,
) -> int:
    """Check the specs under PATH... (default: specs/) and report every problem.

    Offline, no credentials. A folder is read completely (`*.yaml`, `*.yml`; hidden
    entries skipped); each problem is one line, `path:line:col: error[code]: message`
    (warnings likewise). Exit 1 when any is an error.
    """
    return run(ValidateOptions(
        paths, org_policy, require_org_policy, fmt, strict_groups, staged, allow_unjudged
    ))


def run(options: ValidateOptions) -> int:
    """The whole validate flow."""
    promised = PromisedLog(options.fmt)
    if options.staged:
        diagnostics, files = _staged(options)
    else:
        diagnostics, files = _validated(options)
    promised.findings = diagnostics
    rendered = report.REPORTERS[options.fmt](diagnostics)
    if options.fmt in ("json", "sarif"):
        output.stdout().data(rendered)
        promised.delivered()
    else:
        output.stdout().document(rendered)
        output.stderr().line(report.summary(diagnostics, files))
    return EXIT_ERROR if any(d.is_error for d in diagnostics) else EXIT_OK


def _validated(options: ValidateOptions) -> tuple[list[Diagnostic], int]:
    result = validate_paths(
        options.paths,
        options.org_policy,
        missing_snapshot="require" if options.require_org_policy else "warn",
        strict_groups=options.strict_groups,
        gate=Gate(require=options.require_org_policy, allow=options.allow_unjudged),
    )
    result.settle_acceptances()
    return result.diagnostics.sorted(), result.files


def _staged(options: ValidateOptions) -> tuple[list[Diagnostic], int]:
    """The tree as it is staged, validated whole in a scratch copy (reconciler/gitrev.py)
    and reported under the repository's own paths."""
    import tempfile  # only for --staged, as the git index reader

    from reconciler.gitrev import Relocation, repository_of, staged  # only for --staged

    specs = list(options.paths) or [DEFAULT_PATH]
    root = repository_of(specs[0], "--staged")
    extra = [options.org_policy] if options.org_policy is not None else []
    with tempfile.TemporaryDirectory(prefix="reconcile-staged-") as scratch:
        where = Path(scratch).resolve()
        written, links = staged(root, [*specs, *extra], where)
        org_policy = written[-1] if extra else None
        diagnostics, files = _validated(
            options._replace(paths=tuple(written[: len(specs)]), org_policy=org_policy)
        )
        diagnostics = sorted(
            {*diagnostics, *links}, key=lambda d: (d.file, d.line, d.col, d.code, d.message)
        )
        shown = Relocation(where, root).shown
        return [
            _accepted_at(
                replace(
                    d,
                    file=shown(d.file),
                    message=shown(d.message),
                    hint=None if d.hint is None else shown(d.hint),
                ),
                shown,
            )
            for d in diagnostics
        ], files


def _accepted_at(d: Diagnostic, shown: Callable[[str], str]) -> Diagnostic:
    """An accepted finding's acceptance under the repository's own path too."""
    if isinstance(d, AcceptedDiagnostic) and d.acceptance is not None:
        return replace(d, acceptance=replace(d.acceptance, file=shown(d.acceptance.file)))
    return d
