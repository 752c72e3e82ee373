"""`reconcile projects [PATH...] [--changed-from GIT_REF]`: the projects a tree declares,
and which ones a change touches, decided on the desired state (a Defaults file or a
hedging profile touches the projects whose topics use it; a topic moved to another
file or a file reformatted touches none) and the snapshot's org policy. Offline: git
is asked for the tree at GIT_REF, nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.gitops.repo_support import git_env, run_git
from tests.gitops.workflow_lines import ROOT

ALL = ["acme-analytics", "acme-payments", "acme-platform"]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reference specs committed in a git repository (the current directory)."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "specs", root / "specs")
    env = git_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "specs")):
        assert run_git(root, env, *args).returncode == 0
    for key in ("HOME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.chdir(root)
    return root


def touched(run_cli: Any, *paths: str, ref: str = "HEAD") -> dict[str, Any]:
    result = run_cli("projects", *paths, "--changed-from", ref, "--format", "json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_lists_the_declared_projects(run_cli: Any, repo: Path) -> None:
    text = run_cli("projects")
    assert text.exit_code == 0
    assert text.stdout.splitlines() == ALL
    assert "3 project(s) declared" in text.stderr
    document = json.loads(run_cli("projects", "specs", "--format", "json").stdout)
    assert document == {"declared": ALL, "changed_from": None, "commit": None,
                        "touched": ALL, "undeclared": [], "changes": {}}


def test_nothing_changed_touches_nothing(run_cli: Any, repo: Path) -> None:
    document = touched(run_cli)
    assert document["touched"] == [] and document["changes"] == {}
    assert len(document["commit"]) == 40


def test_a_defaults_file_touches_every_topic_of_its_project(run_cli: Any, repo: Path) -> None:
    edit(repo / "specs" / "acme-payments" / "defaults.yaml", "team: payments", "team: pay")
    document = touched(run_cli)
    assert document["touched"] == ["acme-payments"]
    assert document["changes"]["acme-payments"] == [
        f"projects/acme-payments/topics/{t}: changed"
        for t in ("orders", "payment-audit", "refunds")
    ]
    text = run_cli("projects", "--changed-from", "HEAD")
    assert text.stdout == "acme-payments\n"
    assert "touched since HEAD: acme-payments" in text.stderr


def test_a_profile_touches_the_projects_whose_topics_use_it(run_cli: Any, repo: Path) -> None:
    edit(repo / "specs" / "profiles" / "hedging.yaml", "hedgeDelay: 2s", "hedgeDelay: 1s")
    assert touched(run_cli)["touched"] == ["acme-platform"]  # only it uses `conservative`


def test_moving_or_reformatting_a_topic_touches_nothing(run_cli: Any, repo: Path) -> None:
    topics = repo / "specs" / "acme-platform" / "topics.yaml"
    text = topics.read_text()
    first, rest = text.split("\n---\n", 1)
    topics.write_text(first.replace("labels: {team: platform}", "labels:\n    team: platform"))
    (repo / "specs" / "acme-platform" / "more.yaml").write_text(rest)
    assert touched(run_cli)["touched"] == []


def test_the_snapshot_touches_the_projects_whose_policy_changed(
    run_cli: Any, repo: Path
) -> None:
    edit(repo / "specs" / "org-policy.yaml", "allowedValues: [in:eu-locations]",
         "allowedValues: [in:eu-locations, in:us-locations]")
    document = touched(run_cli)
    assert document["touched"] == ["acme-analytics"]
    assert document["changes"]["acme-analytics"] == [
        "projects/acme-analytics: effective org policy in the snapshot changed"
    ]


def test_added_and_removed_topics_and_a_retired_project(run_cli: Any, repo: Path) -> None:
    (repo / "specs" / "acme-analytics" / "topics.yaml").unlink()
    (repo / "specs" / "new.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: acme-new, name: hello}\n"
    )
    document = touched(run_cli)
    assert document["declared"] == ["acme-new", "acme-payments", "acme-platform"]
    assert document["touched"] == ["acme-new"]
    assert document["undeclared"] == ["acme-analytics"]
    assert document["changes"]["acme-new"] == ["projects/acme-new/topics/hello: added"]
    assert "projects/acme-analytics/topics/sessions: removed from the specs" in (
        document["changes"]["acme-analytics"]
    )


def test_a_tree_that_did_not_exist_at_the_ref_touches_all_it_declares(
    run_cli: Any, repo: Path
) -> None:
    env = git_env(repo.parent / "home")
    assert run_git(repo, env, "mv", "specs", "specs2").returncode == 0
    document = touched(run_cli, "specs2")
    assert document["touched"] == ALL


def test_a_bad_ref_or_no_repository_is_a_clear_error(
    run_cli: Any, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = run_cli("projects", "--changed-from", "origin/main")
    assert missing.exit_code == 1
    assert "--changed-from origin/main: no such commit in" in missing.stderr
    assert "fetch-depth: 0" in missing.stderr
    option = run_cli("projects", "--changed-from", "--output=/tmp/x")
    assert option.exit_code == 1 and "not a git revision" in option.stderr
    outside = tmp_path / "plain"
    shutil.copytree(ROOT / "specs", outside / "specs")
    monkeypatch.chdir(outside)
    alone = run_cli("projects", "--changed-from", "HEAD")
    assert alone.exit_code == 1 and "is not in a git repository" in alone.stderr
    assert "Traceback" not in alone.stderr
