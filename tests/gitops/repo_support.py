"""Helpers for the tests that need a real git repository: an isolated git/pre-commit
environment and a one-commit copy of the working tree (uncommitted changes included),
so that nothing is ever built or installed from the checkout itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.gitops.workflow_lines import ROOT


def git_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.invalid",
        PRE_COMMIT_HOME=str(home), GIT_CONFIG_NOSYSTEM="1", HOME=str(home),
    )
    env.pop("PUBSUB_EMULATOR_HOST", None)
    # `git commit` runs the hook script, which finds pre-commit next to this Python.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_git(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def snapshot_of_working_tree(dest: Path, env: dict[str, str]) -> str:
    """A one-commit repository holding the working tree as it is now (tracked and
    untracked, ignored files left out); returns its HEAD."""
    listed = run_git(ROOT, env, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    assert listed.returncode == 0, listed.stderr
    for rel in filter(None, listed.stdout.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "snapshot")):
        assert run_git(dest, env, *args).returncode == 0
    return run_git(dest, env, "rev-parse", "HEAD").stdout.strip()


def working_tree_repository(
    tmp: Path, name: str = "reconcile-src"
) -> tuple[Path, dict[str, str], str]:
    """An isolated git environment (its home under `tmp`) and a one-commit repository
    of the working tree at tmp/NAME: (the repository, the environment, its HEAD)."""
    env = git_env(tmp / "home")
    (tmp / "home").mkdir(exist_ok=True)
    source = tmp / name
    source.mkdir()
    return source, env, snapshot_of_working_tree(source, env)
