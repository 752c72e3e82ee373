"""A --project that is not a project ID is refused before anything is read or
written, in every command that takes one: a mistyped ID (or a project number or
display name) would otherwise read as a project with nothing in it, and `policy pull`
wrote a snapshot that `validate` then refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Nothing listens here: a command that tried to read would fail differently.
NOWHERE = ("--emulator", "127.0.0.1:9", "--timeout", "1")


@pytest.mark.parametrize(
    ("project", "problem"),
    [
        ("p1", "must be 6 to 30 characters long (it has 2)"),
        ("123456789012", "must start with a lowercase letter"),
        ("My-Project", "must start with a lowercase letter"),
        ("my-project-", "must not end with a hyphen"),
    ],
)
def test_a_bad_project_id_is_a_usage_error_and_nothing_is_written(
    run_cli: Any, tmp_path: Path, project: str, problem: str
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    snapshot = tmp_path / "org-policy.yaml"
    imported = tmp_path / "imported"
    runs = {
        "policy pull": run_cli("policy", "pull", "--project", project, "--out",
                               str(snapshot), *NOWHERE),
        "import": run_cli("import", "--project", project, "--out", str(imported), *NOWHERE),
        "plan": run_cli("plan", str(specs), "--project", project, *NOWHERE),
    }
    for command, result in runs.items():
        assert result.exit_code == 2, (command, result.stderr)
        assert f"project ID {project!r} {problem}" in result.stderr, (command, result.stderr)
        assert "nothing was read or written" in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr
    assert not snapshot.exists() and not imported.exists()
