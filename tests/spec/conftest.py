from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from reconciler.cli import main


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `reconcile ARGS...` in-process through the real entry point and its error
    boundary, returning what a user would see."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return CliResult(code if isinstance(code, int) else 1, out, err)

    return run
