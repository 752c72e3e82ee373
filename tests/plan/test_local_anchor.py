"""`--local` keeps ONE state per spec repository: `.reconcile/local/` at the root of the
repository holding the specs (next to the spec root without a repository), whatever
the current directory. A saved `--local` plan records that absolute directory, so it
is applied to the same state from anywhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reconciler.localstate import local_state_dir
from tests.specs_support import topic_doc

SPECS = (
    topic_doc("orders", project="proj-a", labels={"team": "pay"}),
    topic_doc("events", project="proj-a", labels={"team": "data"}),
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with the specs in specs/ (and a sub-folder per project)."""
    root = tmp_path / "repo"
    (root / "specs" / "proj-a").mkdir(parents=True)
    (root / "specs" / "proj-a" / "topics.yaml").write_text("---\n".join(SPECS))
    done = subprocess.run(["git", "init", "-q", str(root)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root


def state_dirs(top: Path) -> list[Path]:
    return sorted(p.parent for p in top.rglob("local") if p.parent.name == ".reconcile")


def test_root_and_inside_specs_share_one_state(
    run_cli: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    applied = run_cli("apply", "specs", "--local", "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    assert "Target: local (.reconcile/local)" in applied.stdout
    monkeypatch.chdir(repo / "specs")
    again = run_cli("plan", ".", "--local", "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "No changes. The live topics match the specs." in again.stdout
    assert f"Target: local ({repo.resolve()}/.reconcile/local)" in again.stdout
    monkeypatch.chdir(repo / "specs" / "proj-a")
    deeper = run_cli("plan", "--local", "--detailed-exitcode", ".")
    assert deeper.exit_code == 0, deeper.stdout + deeper.stderr
    monkeypatch.chdir(repo)
    default = run_cli("plan", "--local", "--detailed-exitcode")  # no PATH: specs/
    assert default.exit_code == 0, default.stdout + default.stderr
    assert state_dirs(repo) == [repo / ".reconcile"]


def test_a_saved_local_plan_is_applied_to_its_recorded_state_from_anywhere(
    run_cli: Any, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "specs")
    made = run_cli("plan", ".", "--local", "--out", str(tmp_path / "plan.json"))
    assert made.exit_code == 0, made.stderr
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["target"]["kind"] == "local"
    assert data["target"]["address"] == str(repo.resolve() / ".reconcile" / "local")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    applied = run_cli("apply", str(tmp_path / "plan.json"))
    assert applied.exit_code == 0, applied.stderr
    assert "Apply complete: 2 applied (2 created, 0 updated, 0 deleted)" in applied.stdout
    # --local from another directory names the same kind of target: the recorded state.
    monkeypatch.chdir(repo)
    replanned = run_cli("plan", "specs", "--local", "--detailed-exitcode")
    assert replanned.exit_code == 0, replanned.stdout + replanned.stderr
    assert state_dirs(tmp_path) == [repo / ".reconcile"]


def test_local_flag_with_a_local_plan_uses_the_recorded_state(
    run_cli: Any, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    made = run_cli("plan", "specs", "--local", "--out", "plan.json")
    assert made.exit_code == 0, made.stderr
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    applied = run_cli("apply", str(repo / "plan.json"), "--local")
    assert applied.exit_code == 0, applied.stderr
    assert (
        f"Applying to the plan's recorded local state {repo.resolve()}/.reconcile/local."
        in applied.stderr
    )
    assert not (other / ".reconcile").exists()


def test_without_a_repository_the_state_sits_next_to_the_spec_root(tmp_path: Path) -> None:
    specs = tmp_path / "plain" / "specs"
    (specs / "proj-a").mkdir(parents=True)
    expected = (tmp_path / "plain").resolve() / ".reconcile" / "local"
    assert local_state_dir([Path("specs")], cwd=tmp_path / "plain") == expected
    assert local_state_dir([Path(".")], cwd=specs) == expected
    assert local_state_dir([], cwd=tmp_path / "plain") == expected
    (specs / "a.yaml").write_text("")
    assert local_state_dir([Path("a.yaml")], cwd=specs) == expected
    # Inside a repository the root wins, however deep the PATH.
    (tmp_path / "plain" / ".git").mkdir()
    assert local_state_dir([Path(".")], cwd=specs / "proj-a") == expected
    assert local_state_dir([], cwd=specs / "proj-a") == expected


def test_an_unusable_state_directory_is_a_clear_error(
    run_cli: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / ".reconcile").write_text("not a directory\n")
    monkeypatch.chdir(repo / "specs")
    result = run_cli("plan", ".", "--local")
    assert result.exit_code == 1
    assert (
        f"Error: cannot use the local state directory {repo.resolve()}/.reconcile/local"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
