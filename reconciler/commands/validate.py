"""`reconcile validate [PATH...]`: check the specs offline, the org-policy snapshot
included, and report every problem.

Output: with `--format text` the diagnostics on stdout and the summary on stderr;
with `--format json` only the diagnostics' JSON list on stdout. Exit code 1 when any
diagnostic is an error, else 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import click

from reconciler.commands import output
from reconciler.commands._options import format_option, strict_groups_option
from reconciler.errors import EXIT_ERROR, EXIT_OK
from reconciler.render import diagnostics as report
from reconciler.spec.validate import validate_paths


class ValidateOptions(NamedTuple):
    paths: tuple[Path, ...]
    org_policy: Path | None = None
    require_org_policy: bool = False
    fmt: str = "text"
    strict_groups: bool = False


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
    "org-policy checks did not run).",
)
@format_option(
    ("text", "json"),
    help="text: one line per problem, and a summary on stderr; json: the diagnostics "
    "as a JSON list.",
)
@strict_groups_option
def command(
    paths: tuple[Path, ...],
    org_policy: Path | None,
    require_org_policy: bool,
    fmt: str,
    strict_groups: bool,
) -> int:
    """Check the specs under PATH... (default: specs/) and report every problem.

    Offline, no credentials. A folder is read completely (`*.yaml`, `*.yml`; hidden
    entries skipped); each problem is one line, `path:line:col: error[code]: message`
    (warnings likewise). Exit 1 when any is an error.
    """
    return run(ValidateOptions(paths, org_policy, require_org_policy, fmt, strict_groups))


def run(options: ValidateOptions) -> int:
    """The whole validate flow."""
    result = validate_paths(
        options.paths,
        options.org_policy,
        missing_snapshot="require" if options.require_org_policy else "warn",
        strict_groups=options.strict_groups,
    )
    diagnostics = result.diagnostics.sorted()
    if options.fmt == "json":
        output.stdout().data(report.as_json(diagnostics))
    else:
        output.stdout().document(report.text(diagnostics))
        output.stderr().line(report.summary(diagnostics, result.files))
    return EXIT_ERROR if any(d.is_error for d in diagnostics) else EXIT_OK
