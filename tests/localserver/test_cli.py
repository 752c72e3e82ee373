"""`reconcile local-server` as a user runs it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import publisher_client

ROOT = Path(__file__).parents[2]


def _run(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", "local-server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_prints_export_line_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    snapshot = tmp_path / "org.yaml"
    snapshot.write_text(
        "name: projects/proj-alpha/policies/gcp.resourceLocations\n"
        "spec: {rules: [{values: {allowedValues: [us-east1]}}]}\n"
    )
    fault = "GetTopic:error=PERMISSION_DENIED,resource=projects/proj-alpha/topics/x-denied"
    proc = _run(
        "--port",
        "0",
        "--org-policy",
        str(snapshot),
        "--client-region",
        "us-west1",
        "--fault",
        fault,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("export PUBSUB_EMULATOR_HOST=127.0.0.1:")
        client = publisher_client(line.split("=", 1)[1])
        topic = client.create_topic(name="projects/proj-alpha/topics/orders")
        assert list(topic.message_storage_policy.allowed_persistence_regions) == ["us-east1"]
        with pytest.raises(exceptions.PermissionDenied):
            client.get_topic(topic="projects/proj-alpha/topics/x-denied")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in err


def test_stops_cleanly_on_ctrl_c() -> None:
    proc = _run("--port", "0")
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("export PUBSUB_EMULATOR_HOST=")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_bad_fault_spec_is_a_usage_error() -> None:
    proc = _run("--port", "0", "--fault", "Publish:bogus=1")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "--fault" in err and "bogus" in err


def test_port_in_use_is_reported(tmp_path: Path) -> None:
    from reconciler.localserver import LocalServer

    with LocalServer() as server:
        proc = _run("--port", str(server.port))
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "cannot listen" in err


def test_state_directory_in_use_is_reported(tmp_path: Path) -> None:
    from reconciler.localserver import LocalServer

    with LocalServer(state_dir=tmp_path):
        proc = _run("--port", "0", "--state", str(tmp_path))
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "in use by another local server" in err and "hint:" in err
