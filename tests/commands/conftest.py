"""Fixtures for the verbs that talk to a server: run the CLI in-process through its
real error boundary, against the suite's loopback server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def run_cli(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    """The suite's CLI runner, with the test's temporary directory as cwd (import and
    policy pull write files relative to it)."""
    monkeypatch.chdir(tmp_path)
    return run_cli
