"""`reconcile ci checklist [PATH]`: what a team creates to run the example pipelines
unchanged on this spec tree: the files to copy as they are, the CI variables (the
install line among them, from where this reconcile was installed:
reconciler/install_source.py), one environment per declared project, the branch
protection, and the `gh` commands that create them. Offline: nothing is contacted.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from reconciler.commands import output
from reconciler.errors import EXIT_OK
from reconciler.install_source import InstallSource, install_spec
from reconciler.spec.touched import declared
from reconciler.spec.validate import DEFAULT_PATH, validate_paths


@click.group("ci")
def command() -> None:
    """Setting up the CI examples (docs/ci.md) for a spec tree."""


@command.command("checklist")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--platform",
    type=click.Choice(["github", "gitlab"]),
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
    projects = declared(validate_paths([tree]))
    source = InstallSource(install) if install else install_spec()
    lines = _github(tree, projects, source) if platform == "github" else _gitlab(
        tree, projects, source
    )
    output.stdout().line("\n".join(lines))
    if source.spec is None:
        output.stderr().line(
            f"note: the install line is not known ({source.why}); pass --install REQUIREMENT"
        )
    return EXIT_OK


def _spec_line(source: InstallSource) -> str:
    return source.spec if source.spec is not None else "(set it: see the note below)"


def _github(tree: Path, projects: list[str], source: InstallSource) -> list[str]:
    spec = _spec_line(source)
    specs = tree.as_posix().rstrip("/") + "/"
    lines = [
        f"# reconcile in GitHub Actions for {specs} ({len(projects)} project(s): "
        f"{', '.join(projects) or 'none'})",
        "",
        "Files, copied unchanged from reconcile's examples/:",
        "- [ ] .github/workflows/reconcile.yml  (examples/github/reconcile.yml)",
        "- [ ] .github/workflows/reconcile-drift.yml  (examples/github/drift.yml; optional)",
        "- [ ] ci/reconcile_ci.py  (examples/ci/reconcile_ci.py)",
        "",
        "Repository variables (Settings > Secrets and variables > Actions > Variables):",
        f"- [ ] RECONCILE_PIP_SPEC = {spec}",
    ]
    if specs != "specs/":
        lines.append(f"- [ ] RECONCILE_SPECS = {specs}")
    lines += [
        "- [ ] GCP_WIF_PROVIDER = projects/NUMBER/locations/global/workloadIdentityPools/"
        "POOL/providers/PROVIDER",
        "- [ ] GCP_PLAN_SA = the read-only service account (roles/pubsub.viewer and "
        "roles/orgpolicy.policyViewer on each project)",
        "- [ ] GCP_APPLY_SA = the service account that applies (roles/pubsub.editor and "
        "roles/orgpolicy.policyViewer on each project; impersonated from main only)",
        "",
        "Secret, only when the reconcile repository is private:",
        "- [ ] RECONCILE_SOURCE_TOKEN = a token with read access to its contents",
        "",
        "Environments (Settings > Environments), one per project, with the reviewers "
        "who approve its apply:",
        *(f"- [ ] reconcile-{p}" for p in projects),
        "",
        "Branch protection on main:",
        "- [ ] require the status check `reconcile`",
        "- [ ] require branches to be up to date before merging",
        *_pre_commit(source),
        "",
        "With the GitHub CLI, in the spec repository:",
    ]
    if source.spec is not None:
        lines.append(f"  gh variable set RECONCILE_PIP_SPEC --body {shlex.quote(spec)}")
    if specs != "specs/":
        lines.append(f"  gh variable set RECONCILE_SPECS --body {shlex.quote(specs)}")
    lines += [
        f"  gh api --method PUT repos/{{owner}}/{{repo}}/environments/reconcile-{p}"
        for p in projects
    ]
    return lines


def _gitlab(tree: Path, projects: list[str], source: InstallSource) -> list[str]:
    specs = tree.as_posix().rstrip("/") + "/"
    lines = [
        f"# reconcile in GitLab CI for {specs} ({len(projects)} project(s): "
        f"{', '.join(projects) or 'none'})",
        "",
        "Files, copied unchanged from reconcile's examples/:",
        "- [ ] .gitlab-ci.yml  (examples/gitlab/.gitlab-ci.yml)",
        "- [ ] ci/reconcile_ci.py  (examples/ci/reconcile_ci.py)",
        "",
        "CI/CD variables (Settings > CI/CD > Variables):",
        f"- [ ] RECONCILE_PIP_SPEC = {_spec_line(source)}",
    ]
    if specs != "specs/":
        lines.append(f"- [ ] SPECS = {specs}")
    lines += [
        "- [ ] GCP_WIF_AUDIENCE, GCP_SERVICE_ACCOUNT (Workload Identity Federation)",
        "- [ ] RECONCILE_NOTE_TOKEN = a project access token (api scope) for the notes",
        "",
        "Environments (Operate > Environments), one per project, protected:",
        *(f"- [ ] reconcile/{p}" for p in projects),
        "",
        "Merge requests: \"Pipelines must succeed\"; the resource groups "
        "reconcile-PROJECT with process_mode oldest_first.",
        *_pre_commit(source),
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
