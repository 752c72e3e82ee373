"""Credential problems are reported with google-auth's own reason and what to do: a
missing key file and a malformed one are different problems. Exit 1, no traceback, and
never any key material."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

HINT = "gcloud auth application-default login"
SET_KEY = "set GOOGLE_APPLICATION_CREDENTIALS to a valid service-account key file"
SECRET = "NOT-A-REAL-KEY-7f3a9c"
BAD_PEM = f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"


def verbs(spec_dir: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "plan": ["plan", str(spec_dir)],
        "import": ["import", "--project", "proj-a", "--out", str(tmp_path / "imported")],
        "policy pull": [
            "policy", "pull", "--project", "proj-a", "--out", str(tmp_path / "pulled.yaml")
        ],
    }


def failing(run_cli: Any, args: list[str]) -> str:
    result = run_cli(*args)
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr
    assert HINT in result.stderr and SET_KEY in result.stderr
    assert SECRET not in result.stderr + result.stdout
    return str(result.stderr)


@pytest.mark.parametrize("verb", ["plan", "import", "policy pull"])
def test_missing_key_file_carries_google_auths_reason(
    verb: str, run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-key.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(missing))
    stderr = failing(run_cli, verbs(spec_dir, tmp_path)[verb])
    assert f"Error: no Google Cloud credentials found: File {missing} was not found" in stderr


@pytest.mark.parametrize("verb", ["plan", "import", "policy pull"])
def test_malformed_private_key_is_not_reported_as_missing(
    verb: str, run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "bad-key.json"
    key.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "proj-a",
                "private_key_id": "1",
                "private_key": BAD_PEM,
                "client_email": "x@proj-a.iam.gserviceaccount.com",
                "token_uri": "https://oauth2.googleapis.com/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    stderr = failing(run_cli, verbs(spec_dir, tmp_path)[verb])
    assert "no Google Cloud credentials found" not in stderr
    assert (
        "Error: Google Cloud credentials could not be loaded: Failed to load service "
        f"account credentials from {key}: " in stderr
    )


def test_key_missing_fields_names_them(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "partial-key.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": SECRET}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    stderr = failing(run_cli, ["plan", str(spec_dir)])
    assert "Service account info was not in the expected format, missing fields" in stderr
    assert "client_email" in stderr and "token_uri" in stderr


def test_key_file_that_is_not_json(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    key.write_text(f"{SECRET} {{")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    stderr = failing(run_cli, ["plan", str(spec_dir)])
    assert f"could not be loaded: File {key} is not a valid json file: Expecting value" in stderr


def test_key_path_that_is_a_directory(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path))
    stderr = failing(run_cli, ["plan", str(spec_dir)])
    assert f"Error: Google Cloud credentials could not be read: {tmp_path}: Is a directory" in (
        stderr
    )
