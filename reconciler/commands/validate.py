"""`reconcile validate`: check specs offline, the org policy snapshot included."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands._options import strict_groups_option
from reconciler.commands.validate_run import ValidateOptions, run


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
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@strict_groups_option
def command(
    paths: tuple[Path, ...],
    org_policy: Path | None,
    require_org_policy: bool,
    fmt: str,
    strict_groups: bool,
) -> int:
    """Check the specs under PATH... (default: specs/) and report every problem."""
    options = ValidateOptions(paths, org_policy, require_org_policy, fmt, strict_groups)
    return run(options)
