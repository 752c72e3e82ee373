"""Failures of the services become one clear message naming the project or topic and
what is needed, never a traceback or a credential."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.plan.readahead import START_ENV
from tests.specs_support import topic_doc


@pytest.fixture(autouse=True, params=["off", "0"], ids=["one-process", "read-ahead"])
def read_ahead(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every failure reads the same whether the topics are read in this process or
    ahead, in a second one (plan/readahead.py)."""
    monkeypatch.setenv(START_ENV, request.param)


def failing_plan(
    run_cli: Any, local_server: Any, specs: Any, method: str, error: str, message: str,
    projects: tuple[str, ...] = ("proj-a",),
) -> Any:
    """`reconcile plan` against the local server while `method` answers `error`."""
    local_server.faults.add(method=method, error=error, message=message)
    root = specs(*(topic_doc("orders", project=p) for p in projects))
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    assert "note: reading the live topics" not in result.stderr  # the child answered
    return result


def test_permission_denied_on_list_names_project_permission_and_role(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    result = failing_plan(
        run_cli, local_server, specs, "ListTopics", "PERMISSION_DENIED", "caller lacks permission"
    )
    assert "permission denied to list topics for projects/proj-a" in result.stderr
    assert "pubsub.topics.list" in result.stderr and "roles/pubsub.viewer" in result.stderr


def test_permission_denied_on_org_policy_names_its_role(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    result = failing_plan(
        run_cli, local_server, specs, "GetEffectivePolicy", "PERMISSION_DENIED", "denied"
    )
    assert "orgpolicy.policy.get" in result.stderr
    assert "roles/orgpolicy.policyViewer" in result.stderr


def test_missing_project_is_named(run_cli: Any, local_server: Any, specs: Any) -> None:
    result = failing_plan(
        run_cli, local_server, specs, "ListTopics", "NOT_FOUND", "Resource not found",
        projects=("ghost-project",),
    )
    assert "project projects/ghost-project not found while trying to list topics" in (
        result.stderr
    )


def test_unauthenticated_says_how_to_log_in(run_cli: Any, local_server: Any, specs: Any) -> None:
    result = failing_plan(
        run_cli, local_server, specs, "ListTopics", "UNAUTHENTICATED", "bad token"
    )
    assert "not authenticated" in result.stderr
    assert "gcloud auth application-default login" in result.stderr


def test_emulator_without_org_policy_api_asks_for_a_snapshot(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    # What Google's Pub/Sub emulator answers to the Org Policy API.
    result = failing_plan(
        run_cli, local_server, specs, "GetEffectivePolicy", "UNIMPLEMENTED", "Method not found"
    )
    assert "does not serve the Org Policy API" in result.stderr
    assert "--org-policy FILE" in result.stderr


def test_every_failing_project_is_reported_once(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    result = failing_plan(
        run_cli, local_server, specs, "ListTopics", "PERMISSION_DENIED", "no",
        projects=("proj-a", "proj-b"),
    )
    lines = result.stderr.splitlines()
    assert sum("projects/proj-a" in line for line in lines) == 1
    assert sum("projects/proj-b" in line for line in lines) == 1


def test_missing_credentials_is_a_message_not_a_traceback(
    run_cli: Any, specs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    root = specs(topic_doc("orders"))
    result = run_cli("plan", str(root))
    assert result.exit_code == 1
    assert "Error: no Google Cloud credentials found" in result.stderr
    assert "gcloud auth application-default login" in result.stderr
    assert "Traceback" not in result.stderr
    # google-auth's own reason, not only ours.
    assert f"File {tmp_path / 'missing-key.json'} was not found" in result.stderr


def test_local_and_emulator_together_is_a_usage_error(run_cli: Any, specs: Any) -> None:
    root = specs(topic_doc("orders"))
    result = run_cli("plan", str(root), "--local", "--emulator", "127.0.0.1:1")
    assert result.exit_code == 1
    assert "--local and --emulator are alternatives" in result.stderr


def test_unreachable_emulator_fails_fast_with_a_message(run_cli: Any, specs: Any) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = specs(topic_doc("orders"))
    result = run_cli("plan", str(root), "--emulator", f"127.0.0.1:{port}", "--timeout", "0.5")
    assert result.exit_code == 1
    assert f"Error: cannot connect to the emulator at 127.0.0.1:{port}" in result.stderr
    assert "(no answer within 0.5 s)" in result.stderr
