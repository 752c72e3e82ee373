"""The `reconcile-validate` hook through the real pre-commit framework, in a throwaway
git repository holding one good and then one bad spec: the hook pinned in a
.pre-commit-config.yaml, as a user writes it, to the session's one-commit copy of the
working tree (tests/hooksource.py; `pre-commit try-repo` would build the hook's
environment again in a home of its own on every call)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hooksource import HookSource
from tests.specs_support import cmek_snapshot

ROOT = Path(__file__).parents[1]
GOOD = (ROOT / "examples" / "specs" / "minimal.yaml").read_text()
BAD = GOOD.replace("name: hello", "name: goog-hello")


def _git_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
        PRE_COMMIT_HOME=str(home),
    )
    env.pop("PUBSUB_EMULATOR_HOST", None)
    return env


def _pre_commit(
    repo: Path, env: dict[str, str], source: HookSource, *extra: str
) -> subprocess.CompletedProcess[str]:
    config = repo / ".pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {source.repo}\n  rev: {source.rev}\n"
        "  hooks:\n  - id: reconcile-validate\n"
    )
    subprocess.run(["git", "add", str(config)], cwd=repo, env=env, check=True)
    return subprocess.run(
        [
            sys.executable, "-m", "pre_commit", "run", "reconcile-validate", "--all-files",
            *extra,
        ],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )


def _spec_repository(
    tmp_path: Path, wheels: dict[str, str], source: HookSource
) -> tuple[Path, dict[str, str]]:
    """An empty git repository with a specs/ folder, and the environment to commit in
    it (the session's pre-commit home, where the hook's environment is built once for
    `source`; its dependencies from `wheels`)."""
    if shutil.which("git") is None:
        pytest.fail("git is required for the pre-commit test")
    repo = tmp_path / "specs-repo"
    (repo / "specs").mkdir(parents=True)
    env = _git_env(source.home)
    env.update(wheels)
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    return repo, env


@pytest.mark.slow
def test_hook_passes_good_specs_and_fails_bad_ones(
    tmp_path: Path, local_wheels: dict[str, str], hook_source: HookSource
) -> None:
    repo, env = _spec_repository(tmp_path, local_wheels, hook_source)
    (repo / "specs" / "good.yaml").write_text(GOOD)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)

    passed = _pre_commit(repo, env, hook_source)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "reconcile validate" in passed.stdout and "Passed" in passed.stdout

    (repo / "specs" / "bad.yaml").write_text(BAD)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    failed = _pre_commit(repo, env, hook_source)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Failed" in failed.stdout
    assert (
        "specs/bad.yaml:6:9: error[topic-id]: topic ID 'goog-hello' must not start with "
        "'goog' (reserved by Google)"
    ) in failed.stdout


CMEK_SNAPSHOT = cmek_snapshot("acme-payments", "organizations/1001")
ACCEPTED = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata:
  project: acme-payments
  # reconcile: accept existing-cmek-required REASON until=2999-03-31
  name: ledger
"""


@pytest.mark.slow
def test_hook_lists_an_accepted_finding_and_refuses_one_without_a_reason(
    tmp_path: Path, local_wheels: dict[str, str], hook_source: HookSource
) -> None:
    """The hook validates the staged tree: an acceptance with a reason passes and is
    counted, under the repository's own path; one without a reason fails the commit
    at its line."""
    repo, env = _spec_repository(tmp_path, local_wheels, hook_source)
    (repo / "specs" / "org-policy.yaml").write_text(CMEK_SNAPSHOT)
    topic = repo / "specs" / "ledger.yaml"
    topic.write_text(ACCEPTED.replace("REASON", 'reason="keys rotate in Q3"'))
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)

    # A hook that passes shows its output with --verbose.
    passed = _pre_commit(repo, env, hook_source, "--verbose")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "specs/ledger.yaml:6:9: accepted[org-cmek-required]: " in passed.stdout
    assert (
        "(accepted at specs/ledger.yaml:5: keys rotate in Q3 (until 2999-03-31))"
    ) in passed.stdout
    assert "1 file checked: 0 errors, 0 warnings, 1 accepted" in passed.stdout

    topic.write_text(ACCEPTED.replace("REASON ", ""))
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    failed = _pre_commit(repo, env, hook_source)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert (
        "specs/ledger.yaml:5:3: error[acceptance-invalid]: the acceptance of "
        "existing-cmek-required has no reason"
    ) in failed.stdout
