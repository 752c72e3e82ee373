"""Fixtures for the verbs that talk to a server: run the CLI in-process through its
real error boundary, against the suite's loopback server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.cli import main


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """`reconcile ARGS...` as a user runs it (cwd is the test's temporary directory,
    no PUBSUB_EMULATOR_HOST leaking in from the environment)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return CliResult(code if isinstance(code, int) else 1, out, err)

    return run
