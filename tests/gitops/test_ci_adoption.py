"""CI a team adopts unchanged: the example workflows hold no placeholder to edit (what
differs per team is a CI variable); `reconcile ci checklist` lists, for a spec tree,
the variables with the install line, one environment per declared project and the
protections; the install line is derived from where reconcile was installed, and the
glue's `install` step installs exactly it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitops.repo_support import run_git, working_tree_repository
from tests.gitops.workflow_lines import ROOT, WORKFLOWS

CI_SCRIPT = ROOT / "examples" / "ci" / "reconcile_ci.py"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_workflows_have_nothing_to_edit(path: Path) -> None:
    text = path.read_text()
    for placeholder in ("YOUR-", "your-group", "example.com/"):
        assert placeholder not in text, f"{path.name} still says {placeholder}"
    assert "pip install" not in text  # one way to install: the glue's, from the variable
    assert '"$RECONCILE_CI" install' in text


def test_checklist_names_every_project_environment_and_the_install_line(
    run_cli: Any,
) -> None:
    spec = "pubsub-reconcile @ git+https://github.com/acme/reconcile@" + "a" * 40
    result = run_cli("ci", "checklist", str(ROOT / "specs"), "--install", spec)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "(3 project(s): acme-analytics, acme-payments, acme-platform)" in out
    assert f"- [ ] RECONCILE_PIP_SPEC = {spec}" in out
    for project in ("acme-analytics", "acme-payments", "acme-platform"):
        assert f"- [ ] reconcile-{project}\n" in out
        environment = f"repos/{{owner}}/{{repo}}/environments/reconcile-{project}"
        assert f"gh api --method PUT {environment}" in out
    assert "- [ ] require the status check `reconcile`" in out
    assert f"gh variable set RECONCILE_PIP_SPEC --body '{spec}'" in out
    assert "- [ ] repo: https://github.com/acme/reconcile\n- [ ] rev: " + "a" * 40 in out
    for variable in ("GCP_WIF_PROVIDER", "GCP_PLAN_SA", "GCP_APPLY_SA", "RECONCILE_SOURCE_TOKEN"):
        assert f"- [ ] {variable} = " in out
    gitlab = run_cli("ci", "checklist", str(ROOT / "specs"), "--platform", "gitlab",
                     "--install", spec)
    assert "- [ ] reconcile/acme-payments" in gitlab.stdout
    assert f"- [ ] RECONCILE_PIP_SPEC = {spec}" in gitlab.stdout


def _checkout_with_origin(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    checkout, env, commit = working_tree_repository(tmp_path, "reconcile")
    origin = tmp_path / "origin.git"
    assert run_git(tmp_path, env, "init", "-q", "--bare", str(origin)).returncode == 0
    run_git(checkout, env, "remote", "add", "origin", str(origin))
    assert run_git(checkout, env, "push", "-q", "origin", "HEAD:main").returncode == 0
    run_git(checkout, env, "fetch", "-q", "origin")
    run_git(checkout, env, "remote", "set-url", "origin", "git@github.com:acme/reconcile.git")
    return checkout, env, commit


def test_the_install_line_of_a_checkout_is_its_origin_at_its_pushed_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reconciler.install_source import from_direct_url

    checkout, env, commit = _checkout_with_origin(tmp_path)
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    editable = {"url": checkout.as_uri(), "dir_info": {"editable": True}}
    assert from_direct_url(editable).spec == (
        f"pubsub-reconcile @ git+https://github.com/acme/reconcile.git@{commit}"
    )
    # A commit that is only here cannot be installed by CI: said, not guessed.
    (checkout / "README.md").write_text("changed\n")
    dirty = from_direct_url(editable)
    assert dirty.spec is None and "uncommitted changes" in dirty.why
    run_git(checkout, env, "commit", "-q", "-am", "local only")
    local = from_direct_url(editable)
    assert local.spec is None and "is on no remote branch: push it first" in local.why
    vcs = {"url": "https://github.com/acme/reconcile", "vcs_info": {"vcs": "git",
                                                                     "commit_id": commit}}
    assert from_direct_url(vcs).spec == (
        f"pubsub-reconcile @ git+https://github.com/acme/reconcile@{commit}"
    )


# Every origin form git takes: those a CI job can reach give an https requirement;
# one on this machine gives none, and says what to pass (issue 46: a local-path origin
# gave `pubsub-reconcile @ git+/srv/...`, which pip refuses as "Invalid requirement").
ORIGINS = {
    "git@github.com:acme/reconcile.git": "https://github.com/acme/reconcile.git",
    "ssh://git@github.com:22/acme/reconcile.git": "https://github.com/acme/reconcile.git",
    "https://gitlab.example.com:8443/platform/reconcile": (
        "https://gitlab.example.com:8443/platform/reconcile"
    ),
    "https://ci:SECRET@git.example.com/reconcile.git": "https://git.example.com/reconcile.git",
    "git://git.example.com/reconcile.git": "https://git.example.com/reconcile.git",
    "/srv/git/reconcile.git": None,
    "../reconcile.git": None,
    "file:///srv/git/reconcile.git": None,
}


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_install_line_is_one_pip_accepts_for_every_origin_or_says_what_to_fill_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    from pip._internal.req.constructors import install_req_from_line

    from reconciler.install_source import from_direct_url

    checkout, env, commit = _checkout_with_origin(tmp_path)
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    run_git(checkout, env, "remote", "set-url", "origin", origin)
    found = from_direct_url({"url": checkout.as_uri(), "dir_info": {"editable": True}})
    expected = ORIGINS[origin]
    if expected is None:
        assert found.spec is None
        assert f"the checkout {checkout} has the origin {origin}, a path on this machine" \
            in found.why
        assert (
            f"pass --install 'pubsub-reconcile @ git+https://HOST/OWNER/REPO@{commit}'"
        ) in found.why
        # No line: a path names this machine's disk, which a CI runner does not have
        # (pip 23 to 25 refused the old `git+/srv/...` line outright; pip 26 parses it
        # as a plain path, not a git URL: either way it installs nothing in CI).
        return
    assert found.spec == f"pubsub-reconcile @ git+{expected}@{commit}"
    assert "SECRET" not in found.spec
    parsed = install_req_from_line(found.spec)  # pip's own parser, as `pip install` runs it
    assert parsed.name == "pubsub-reconcile"
    assert parsed.link is not None and parsed.link.is_vcs
    # As a git URL (PEP 610's vcs_info), the same rule.
    vcs = {"url": origin, "vcs_info": {"vcs": "git", "commit_id": commit}}
    assert from_direct_url(vcs).spec == found.spec


def test_the_checklist_of_a_local_origin_says_what_to_fill_in(run_cli: Any) -> None:
    """Through the command, with --install left out: the note names the placeholder
    (this checkout's own origin may be anything: only the form is checked)."""
    result = run_cli("ci", "checklist", str(ROOT / "specs"))
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "RECONCILE_PIP_SPEC = " in x)
    spec = line.split("RECONCILE_PIP_SPEC = ", 1)[1]
    if spec.startswith("(set it"):
        assert "note: the install line is not known (" in result.stderr
        assert "pass --install REQUIREMENT" in result.stderr
    else:
        from pip._internal.req.constructors import install_req_from_line

        assert install_req_from_line(spec).name == "pubsub-reconcile"


@pytest.mark.parametrize("case", ["missing", "errors", "empty"])
def test_the_checklist_refuses_a_tree_it_cannot_read(
    run_cli: Any, tmp_path: Path, case: str
) -> None:
    """Issue 46: a mistyped path or a tree with errors printed "0 project(s)", no
    environment, exit 0 (and GitHub creates a missing environment on first use,
    without reviewers)."""
    tree = tmp_path / "specs"
    if case == "errors":
        tree.mkdir()
        (tree / "orders.yaml").write_text(
            "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
            "metadata: {project: acme-payments, name: orders}\nspec: {labelz: {}}\n"
        )
    elif case == "empty":
        tree.mkdir()
        (tree / "README.md").write_text("no specs here\n")
    spec = "pubsub-reconcile @ git+https://github.com/acme/reconcile@" + "a" * 40
    result = run_cli("ci", "checklist", str(tree), "--install", spec)
    assert result.exit_code == 1, result.stdout
    assert result.stdout == ""
    assert f"Error: no checklist for {tree}: the spec tree has 1 error(s)" in result.stderr
    assert f"hint: `reconcile validate {tree}` lists each problem" in result.stderr
    code = {"missing": "path-missing", "errors": "unknown-field", "empty": "no-specs"}[case]
    where = f"{tree}/orders.yaml:4:" if case == "errors" else f"{tree}:"
    assert any(
        line.startswith(where) and f"error[{code}]" in line
        for line in result.stderr.splitlines()
    ), result.stderr


def test_the_glue_refuses_without_the_variable_and_says_which(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RECONCILE_PIP_SPEC"}
    done = subprocess.run([sys.executable, str(CI_SCRIPT), "install"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "the CI variable RECONCILE_PIP_SPEC is not set" in done.stderr


@pytest.mark.slow
def test_the_glue_installs_the_pinned_commit_as_written(tmp_path: Path) -> None:
    """The install step as a job runs it, with a requirement of the checklist's form
    (pinned to a full commit; a git URL on this machine stands in for the host)."""
    source, env, commit = working_tree_repository(tmp_path, "reconcile")
    target = tmp_path / "site"
    # file://localhost/...: pip's requirement parser wants a host in a git URL.
    url = f"git+file://localhost{source.as_posix()}@{commit}"
    env["RECONCILE_PIP_SPEC"] = f"pubsub-reconcile @ {url}"
    # pip's own settings keep the runner's environment untouched here.
    env.update(PIP_NO_DEPS="1", PIP_TARGET=str(target), PIP_NO_BUILD_ISOLATION="0")
    done = subprocess.run(
        [sys.executable, str(CI_SCRIPT), "install"],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (info,) = target.glob("pubsub_reconcile-*.dist-info")
    direct = json.loads((info / "direct_url.json").read_text())
    assert direct["vcs_info"]["commit_id"] == commit
