"""`reconcile ci checklist [PATH]`: what a team creates to run the example pipelines
unchanged on this spec tree: the files to copy as they are, the CI variables (the
install line among them, from where this reconcile was installed:
reconciler/install_source.py), one environment per declared project, the branch
protection, and the `gh` commands that create them. Offline: nothing is contacted.

A checklist is only printed for a tree `validate` accepts and that declares a topic:
a mistyped PATH, a tree with errors or one with no project would list no environment,
and GitHub creates a missing environment on first use without its reviewers; those
are refused (exit 1) with the errors, as `validate` reports them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click

from reconciler.commands import output
from reconciler.errors import EXIT_OK, ValidationFailed
from reconciler.install_source import InstallSource, install_spec
from reconciler.render import diagnostics as report
from reconciler.spec.touched import declared
from reconciler.spec.validate import DEFAULT_PATH, validate_paths


@click.group("ci")
def command() -> None:
    """Setting up the CI examples (docs/ci.md) for a spec tree."""


@command.command("checklist")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--platform",
    type=click.Choice(["github", "gitlab"]),  # PLATFORMS
    default="github",
    show_default=True,
    help="The CI the checklist is for.",
)
@click.option(
    "--install",
    "install",
    metavar="REQUIREMENT",
    help="What CI installs (default: where this reconcile was installed from, pinned "
    "to its commit), e.g. 'pubsub-reconcile @ git+https://HOST/ORG/reconcile@COMMIT'.",
)
def checklist(path: Path | None, platform: str, install: str | None) -> int:
    """Print what to create for the CI examples to run unchanged on the tree at PATH
    (default: specs/): variables, environments, protections."""
    tree = path or DEFAULT_PATH
    projects = _projects(tree)
    source = InstallSource(install) if install else install_spec()
    output.stdout().line("\n".join(_lines(PLATFORMS[platform], tree, projects, source)))
    if source.spec is None:
        output.stderr().line(
            f"note: the install line is not known ({source.why}); pass --install REQUIREMENT"
        )
    return EXIT_OK


def _projects(tree: Path) -> list[str]:
    """The tree's projects; ValidationFailed, with validate's errors on stderr, for a
    tree that is missing, has errors or declares no topic."""
    result = validate_paths([tree])
    errors = [d for d in result.diagnostics.sorted() if d.is_error]
    hint = f"`reconcile validate {tree}` lists each problem; fix them and run the " \
        "checklist again"
    if errors:
        output.stderr().document(report.text(errors))
        raise ValidationFailed(
            f"no checklist for {tree}: the spec tree has {len(errors)} error(s), and a "
            "checklist for it would miss the environments of the projects it cannot read",
            hint=hint,
        )
    projects = declared(result)
    if not projects:
        raise ValidationFailed(
            f"no checklist for {tree}: it declares no topic, so no project and no "
            "environment to list",
            hint="name the spec tree as PATH (default: specs/)",
        )
    return projects


@dataclass(frozen=True)
class Platform:
    """What differs between the two CI examples' checklists."""

    title: str
    files: tuple[str, ...]
    variables_at: str
    specs_variable: str
    variables: tuple[str, ...]
    secret: tuple[str, ...]
    environments_at: str
    environment: str  # the name of a project's environment, {} the project
    protections: tuple[str, ...]


# What plan reads besides Pub/Sub, for both accounts (docs/authentication.md's rows
# for plan and apply, which tests/docs/test_permissions_table.py holds this to).
_READ_ROLES = (
    "roles/orgpolicy.policyViewer, roles/browser and roles/monitoring.viewer on each "
    "project, roles/browser on the folders above them and roles/orgpolicy.policyViewer "
    "on their organization"
)
GITHUB = Platform(
    title="GitHub Actions",
    files=(
        ".github/workflows/reconcile.yml  (examples/github/reconcile.yml)",
        ".github/workflows/reconcile-drift.yml  (examples/github/drift.yml; optional)",
        "ci/reconcile_ci.py  (examples/ci/reconcile_ci.py)",
    ),
    variables_at="Repository variables (Settings > Secrets and variables > Actions > Variables)",
    specs_variable="RECONCILE_SPECS",
    variables=(
        "GCP_WIF_PROVIDER = projects/NUMBER/locations/global/workloadIdentityPools/POOL/"
        "providers/PROVIDER",
        "GCP_PLAN_SA = the read-only service account (roles/pubsub.viewer, "
        f"{_READ_ROLES}; docs/authentication.md)",
        "GCP_APPLY_SA = the service account that applies (roles/pubsub.editor, "
        f"{_READ_ROLES}; impersonated from main only)",
    ),
    secret=(
        "Secret, only when the reconcile repository is private:",
        "- [ ] RECONCILE_SOURCE_TOKEN = a token with read access to its contents",
    ),
    environments_at="Environments (Settings > Environments), one per project, with the "
    "reviewers who approve its apply:",
    environment="reconcile-{}",
    protections=(
        "Branch protection on main:",
        "- [ ] require the status check `reconcile`",
        "- [ ] require branches to be up to date before merging",
    ),
)
GITLAB = Platform(
    title="GitLab CI",
    files=(
        ".gitlab-ci.yml  (examples/gitlab/.gitlab-ci.yml)",
        "ci/reconcile_ci.py  (examples/ci/reconcile_ci.py)",
    ),
    variables_at="CI/CD variables (Settings > CI/CD > Variables)",
    specs_variable="SPECS",
    variables=(
        "GCP_WIF_AUDIENCE, GCP_SERVICE_ACCOUNT (Workload Identity Federation)",
        "RECONCILE_NOTE_TOKEN = a project access token (api scope) for the notes",
    ),
    secret=(
        "Only when the reconcile project is private (on this GitLab):",
        "- [ ] RECONCILE_SOURCE_USER = gitlab-ci-token, RECONCILE_SOURCE_TOKEN = "
        "$CI_JOB_TOKEN (this project in its job token allowlist)",
    ),
    environments_at="Environments (Operate > Environments), one per project, protected:",
    environment="reconcile/{}",
    protections=(
        "Merge requests: \"Pipelines must succeed\"; the resource groups "
        "reconcile-PROJECT with process_mode oldest_first.",
    ),
)
PLATFORMS = {"github": GITHUB, "gitlab": GITLAB}


def _lines(
    platform: Platform, tree: Path, projects: list[str], source: InstallSource
) -> list[str]:
    spec = source.spec if source.spec is not None else "(set it: see the note below)"
    specs = tree.as_posix().rstrip("/") + "/"
    moved = [f"{platform.specs_variable} = {specs}"] if specs != "specs/" else []
    lines = [
        f"# reconcile in {platform.title} for {specs} ({len(projects)} project(s): "
        f"{', '.join(projects) or 'none'})",
        "",
        "Files, copied unchanged from reconcile's examples/:",
        *(f"- [ ] {f}" for f in platform.files),
        "",
        f"{platform.variables_at}:",
        *(f"- [ ] {v}" for v in (f"RECONCILE_PIP_SPEC = {spec}", *moved, *platform.variables)),
        "",
        *platform.secret,
        "",
        platform.environments_at,
        *(f"- [ ] {platform.environment.format(p)}" for p in projects),
        "",
        *platform.protections,
        *_pre_commit(source),
    ]
    if platform is GITHUB:
        lines += ["", "With the GitHub CLI, in the spec repository:"]
        if source.spec is not None:
            lines.append(f"  gh variable set RECONCILE_PIP_SPEC --body {shlex.quote(spec)}")
        if moved:
            lines.append(f"  gh variable set RECONCILE_SPECS --body {shlex.quote(specs)}")
        lines += [
            f"  gh api --method PUT repos/{{owner}}/{{repo}}/environments/reconcile-{p}"
            for p in projects
        ]
    return lines


def _pre_commit(source: InstallSource) -> list[str]:
    """The pre-commit example's `repo:` and `rev:`, from a git requirement."""
    found = re.fullmatch(r"[\w.-]+ @ git\+(\S+)@([0-9a-f]{40})", source.spec or "")
    if found is None:
        return []
    return [
        "",
        ".pre-commit-config.yaml (examples/pre-commit-config.yaml), its two values:",
        f"- [ ] repo: {found.group(1)}",
        f"- [ ] rev: {found.group(2)}",
    ]
