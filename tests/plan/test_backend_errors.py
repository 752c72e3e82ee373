"""Failures of the services become one clear message naming the project or topic and
what is needed, never a traceback or a credential."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from plan_helpers import topic_doc

from reconciler.backends.gcp import GcpBackend
from reconciler.errors import BackendError
from reconciler.plan.observe import observe


class Raising:
    """A client whose every call raises `exc`."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise self.exc

        return call


def backend(pub_exc: Exception | None = None, org_exc: Exception | None = None) -> GcpBackend:
    class Empty:
        def list_topics(self, *a: Any, **k: Any) -> list[Any]:
            return []

    class NoPolicy:
        def get_effective_policy(self, *a: Any, **k: Any) -> Any:
            raise gexc.NotFound("no policy")

    pub = Raising(pub_exc) if pub_exc else Empty()
    org = Raising(org_exc) if org_exc else NoPolicy()
    return GcpBackend(pub, org, "test")


def test_permission_denied_on_list_names_project_permission_and_role() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(pub_exc=gexc.PermissionDenied("caller lacks permission")), ["proj-a"])
    text = str(err.value)
    assert "permission denied to list topics for projects/proj-a" in text
    assert "pubsub.topics.list" in text and "roles/pubsub.viewer" in text


def test_permission_denied_on_org_policy_names_its_role() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(org_exc=gexc.PermissionDenied("denied")), ["proj-a"])
    assert "orgpolicy.policy.get" in str(err.value)
    assert "roles/orgpolicy.policyViewer" in str(err.value)


def test_missing_project_is_named() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(pub_exc=gexc.NotFound("Resource not found")), ["ghost-project"])
    assert "project projects/ghost-project not found while trying to list topics" in str(
        err.value
    )


def test_unauthenticated_says_how_to_log_in() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(pub_exc=gexc.Unauthenticated("bad token")), ["proj-a"])
    assert "not authenticated" in str(err.value)
    assert "gcloud auth application-default login" in str(err.value)


def test_emulator_without_org_policy_api_asks_for_a_snapshot() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(org_exc=gexc.MethodNotImplemented("Method not found")), ["proj-a"])
    assert "does not serve the Org Policy API" in str(err.value)
    assert "--org-policy FILE" in str(err.value)


def test_every_failing_project_is_reported_once() -> None:
    with pytest.raises(BackendError) as err:
        observe(backend(pub_exc=gexc.PermissionDenied("no")), ["proj-a", "proj-b"])
    lines = str(err.value).splitlines()
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


def test_local_and_emulator_together_is_a_usage_error(run_cli: Any, specs: Any) -> None:
    root = specs(topic_doc("orders"))
    result = run_cli("plan", str(root), "--local", "--emulator", "127.0.0.1:1")
    assert result.exit_code == 1
    assert "--local and --emulator are alternatives" in result.stderr


def test_unreachable_emulator_fails_fast_with_a_message(
    run_cli: Any, specs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from reconciler.backends import target

    monkeypatch.setattr(target, "CONNECT_TIMEOUT", 0.5)

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = specs(topic_doc("orders"))
    result = run_cli("plan", str(root), "--emulator", f"127.0.0.1:{port}")
    assert result.exit_code == 1
    assert f"Error: cannot connect to the emulator at 127.0.0.1:{port}" in result.stderr
