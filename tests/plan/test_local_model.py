"""One local model (issue 26 item 8): while `reconcile local-server --local` serves a
repository's local state, `plan --local` and `apply --local` use that server (one
state, not a refusal and not a second one); the text names the org-policy source as
the local server; `.reconcile/` ignores itself in Git; the snapshot search climbs to
the repository root, or the home directory, never to `/`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.spec.discover import find_snapshot_looked
from tests.specs_support import topic_doc

SPECS = (
    topic_doc("orders", project="proj-a", labels={"team": "pay"}),
    topic_doc("events", project="proj-a", labels={"team": "data"}),
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "topics.yaml").write_text("---\n".join(SPECS))
    done = subprocess.run(["git", "init", "-q", str(root)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(root)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    return root


@pytest.fixture
def served(repo: Path) -> Iterator[subprocess.Popen[str]]:
    """`reconcile local-server --local --port 0` in the repository, once it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "local-server", "--local", "--port", "0"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once it serves and published its address
        assert line.startswith("export PUBSUB_EMULATOR_HOST="), line + proc.stderr.read()
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_local_commands_use_the_running_local_server(
    run_cli: Any, repo: Path, served: subprocess.Popen[str]
) -> None:
    plan = run_cli("plan", "--local")
    assert plan.exit_code == 0, plan.stderr
    assert "using the running `reconcile local-server` at 127.0.0.1:" in plan.stderr
    assert "Target: local (.reconcile/local); org policy: local server" in plan.stdout
    assert "Org Policy API" not in plan.stdout
    applied = run_cli("apply", "--local", "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    again = run_cli("plan", "--local", "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout  # the same state: nothing left to do
    assert (repo / ".reconcile" / ".gitignore").read_text().splitlines()[-1] == "*"
    ignored = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                             cwd=repo, capture_output=True, text=True)
    assert ".reconcile" not in ignored.stdout


def test_after_the_server_stops_local_commands_see_the_same_state(
    run_cli: Any, repo: Path, served: subprocess.Popen[str]
) -> None:
    assert run_cli("apply", "--local", "--auto-approve").exit_code == 0
    served.send_signal(signal.SIGTERM)
    served.communicate(timeout=30)
    assert not (repo / ".reconcile" / "local" / "server.json").exists()
    after = run_cli("plan", "--local", "--detailed-exitcode")
    assert after.exit_code == 0, after.stdout + after.stderr  # embedded, same topics
    assert "running `reconcile local-server`" not in after.stderr


def test_the_snapshot_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "org-policy.yaml").write_text("policies: []\n")  # outside the repository
    specs = tmp_path / "repo" / "specs"
    specs.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    found, looked = find_snapshot_looked(specs)
    assert found is None
    assert looked == [specs.resolve(), specs.parent.resolve()]


def test_outside_a_repository_it_stops_at_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    specs = home / "work" / "specs"
    specs.mkdir(parents=True)
    (tmp_path / "org-policy.yaml").write_text("policies: []\n")  # above home: never read
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    found, looked = find_snapshot_looked(specs)
    assert found is None
    assert looked[-1] == home.resolve()
    elsewhere = tmp_path / "elsewhere" / "specs"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(home)  # neither under home nor under the current directory
    assert find_snapshot_looked(elsewhere) == (None, [elsewhere.resolve()])
