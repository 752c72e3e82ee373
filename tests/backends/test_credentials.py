"""Credential problems are reported with google-auth's own reason and what to do: a
missing key file and a malformed one are different problems. Exit 1, no traceback, and
never any key material."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SPECIAL_KINDS

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


def service_account(private_key: Any) -> dict[str, Any]:
    """A service-account key file's fields, with this `private_key`."""
    return {
        "type": "service_account",
        "project_id": "proj-a",
        "private_key_id": "1",
        "private_key": private_key,
        "client_email": "x@proj-a.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


def plan_with_key(
    run_cli: Any, spec_dir: Path, monkeypatch: pytest.MonkeyPatch, key: Path, text: str
) -> str:
    """`reconcile plan` failing on the key file `key` holding `text`: its stderr."""
    key.write_text(text)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    return failing(run_cli, ["plan", str(spec_dir)])


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
    key.write_text(json.dumps(service_account(BAD_PEM)))
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
    text = json.dumps({"type": "service_account", "private_key": SECRET})
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, text)
    assert "Service account info was not in the expected format, missing fields" in stderr
    assert "client_email" in stderr and "token_uri" in stderr


def test_key_file_that_is_not_json(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, f"{SECRET} {{")
    assert f"could not be loaded: File {key} is not a valid json file: Expecting value" in stderr


@pytest.mark.parametrize("kind", [*SPECIAL_KINDS, "directory"])
def test_key_file_that_is_not_a_regular_file_fails_at_once(
    kind: str,
    run_cli: Any,
    spec_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    special_file: Any,
) -> None:
    """google-auth would block in `open` on a FIFO and read /dev/zero until memory
    runs out: the key file is read first, by the bounded regular-file reader."""
    if kind == "directory":
        key, what = tmp_path, "a directory"
    else:
        key, what = special_file(kind, tmp_path / "key.json")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    stderr = failing(run_cli, ["plan", str(spec_dir)])
    assert (
        f"Error: Google Cloud credentials could not be read: {key}: this path is {what}, "
        "not a regular file"
    ) in stderr


def test_key_file_over_the_bound_is_refused(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    text = json.dumps({"type": "service_account", "private_key": SECRET * 100_000})
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, text)
    size = key.stat().st_size
    assert (
        f"could not be read: {key}: the file is {size:,} bytes, over the 1,048,576-byte "
        "limit; a key file is a few kilobytes"
    ) in stderr


# -- no value of the key file in any message (issue 21) ---------------------------------

MARKER = "Mk7qZ-SECRET-Pw3x"
KEY_FIELDS = (
    "type", "project_id", "private_key_id", "private_key", "client_email", "client_id",
    "token_uri", "auth_uri", "universe_domain", "client_secret", "refresh_token",
    "audience", "subject_token_type", "token_url", "credential_source",
    "service_account_impersonation_url", "source_credentials", "quota_project_id",
)
TYPES = (
    "service_account", "authorized_user", "external_account", "impersonated_service_account",
    "external_account_authorized_user", "gdch_service_account",
)
PEM = "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n"


def planted() -> Any:
    """A string carrying the marker, in the forms a key value may take."""
    from hypothesis import strategies as st

    noise = st.text(max_size=12)
    return st.one_of(
        st.just(MARKER),
        st.builds(lambda a, b: f"{a}{MARKER}{b}", noise, noise),
        st.just(PEM.format(MARKER)),
        st.builds(lambda n: MARKER * n, st.integers(2, 20_000)),  # up to ~340 KB
        st.just(f"'{MARKER}\"\\\n\u00e9\u2028"),
    )


def key_files() -> Any:
    """Key-file shapes: known fields and junk, the marker in every string value, lists,
    objects, numbers and nulls where text belongs; any `type`; any top-level JSON."""
    from hypothesis import strategies as st

    leaf = st.one_of(planted(), st.integers(), st.floats(allow_nan=False), st.none(), st.booleans())
    value = st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEY_FIELDS) | st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )
    fields = st.dictionaries(st.sampled_from(KEY_FIELDS), value, max_size=8)
    typed = st.builds(
        lambda f, t: {**f, "type": t}, fields, st.sampled_from(TYPES) | planted()
    )
    return st.one_of(typed, fields, st.lists(value, max_size=3), planted())


def loads_without_network(info: Any) -> bool:
    """Whether google-auth would accept the key (then `plan` would go on to the
    network: not this test's subject, which is the refusal's message)."""
    import warnings

    import google.auth

    if not isinstance(info, dict):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            google.auth.load_credentials_from_dict(info)
        except Exception:
            return False
    return True


@pytest.mark.slow
def test_no_value_of_the_key_file_in_any_message(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hypothesis import HealthCheck, assume, given, settings

    key = tmp_path / "key.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))

    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(key_files())
    def check(info: Any) -> None:
        assume(not loads_without_network(info))
        key.write_text(json.dumps(info))
        result = run_cli("plan", str(spec_dir))
        assert result.exit_code == 1, result.stderr
        assert "Google Cloud credentials could not be" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        everything = result.stdout + result.stderr
        assert MARKER not in everything
        # Nor a piece of it, nor its JSON or repr escapes.
        assert MARKER[:8] not in everything and MARKER[-8:] not in everything

    check()


def test_a_private_key_that_is_a_list_is_named_not_echoed(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    text = json.dumps(service_account([SECRET, SECRET]))
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, text)
    assert (
        "Error: Google Cloud credentials could not be loaded: Failed to load service account "
        f"credentials from {key}: <private_key> could not be converted to bytes"
    ) in stderr


def test_an_unknown_type_is_named_not_echoed(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    text = json.dumps({"type": SECRET, "private_key": SECRET})
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, text)
    assert f"The file {key} does not have a valid type. Type is <type>, expected one of" in stderr


def test_a_key_file_that_is_not_an_object(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key.json"
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, key, json.dumps([SECRET]))
    assert f"could not be loaded: {key}: a key file holds a JSON object, not a list" in stderr


def test_a_key_file_missing_a_field_is_not_reported_as_no_credentials(
    run_cli: Any, spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """google-auth says "The private_key field was not found": the file was found."""
    info = {k: v for k, v in service_account(BAD_PEM).items() if k != "private_key"}
    stderr = plan_with_key(run_cli, spec_dir, monkeypatch, tmp_path / "key.json", json.dumps(info))
    assert "no Google Cloud credentials found" not in stderr
    assert "Error: Google Cloud credentials could not be loaded: " in stderr
    assert "private_key field was not found" in stderr
