"""`reconcile --version` names the installed version, and the package's own when the
distribution's metadata is missing (a source tree run without installing)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

import reconciler


def test_version_option_prints_the_installed_version(run_cli: Any) -> None:
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"reconcile {importlib.metadata.version('reconcile')}\n"
    assert importlib.metadata.version("reconcile") == reconciler.__version__


def test_version_falls_back_to_the_package_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.clickapp import version

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr(reconciler, "__version__", "9.8.7")
    assert version() == "9.8.7"
