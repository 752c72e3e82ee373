"""The README's test command on a fresh clone, as a new contributor runs it: with node
and npm on PATH the Node client tests install their client and run (never skip); with
neither they are skipped and pytest's summary says why. Run on a copy of the
repository's files (no node_modules), with the README's own pytest options."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitops.repo_support import working_tree_repository

NODE_TESTS = ["tests/interop/test_node_client.py", "tests/interop/test_node_rest.py"]


def _fresh_clone(tmp_path: Path) -> Path:
    """The repository's files as a clone has them: tracked and new, nothing ignored."""
    clone, _, _ = working_tree_repository(tmp_path, "reconcile")
    assert not (clone / "tests/interop/node/node_modules").exists()
    return clone


def _pytest(clone: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", *NODE_TESTS],
        cwd=clone, env=env, capture_output=True, text=True, timeout=1200,
    )


@pytest.mark.slow
def test_without_node_the_node_tests_skip_and_say_why(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path)
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    done = _pytest(clone, str(empty_bin))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout, done.stdout
    assert "SKIPPED [2] tests/interop/node_support.py:" in done.stdout, done.stdout
    assert (
        ": the Node client tests need node and npm; node and npm not on PATH\n"
    ) in done.stdout, done.stdout


@pytest.mark.slow
def test_with_node_the_node_tests_install_their_client_and_run(tmp_path: Path) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not on PATH here: the case with node cannot run")
    clone = _fresh_clone(tmp_path)
    done = _pytest(clone, os.environ["PATH"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "skipped" not in done.stdout, done.stdout
    assert (clone / "tests/interop/node/node_modules/@google-cloud/pubsub").is_dir()
