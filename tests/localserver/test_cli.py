"""`reconcile local-server` as a user runs it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import publisher_client
from tests.cli_support import start_reconcile

ROOT = Path(__file__).parents[2]


def _run(*args: str) -> subprocess.Popen[str]:
    return start_reconcile("local-server", *args, cwd=ROOT).proc


def _stderr_until(proc: subprocess.Popen[str], text: str, guard: float = 60.0) -> str:
    """The process's stderr up to and including the line holding `text`.

    Reads the pipe's descriptor itself (not the text wrapper, which would buffer
    past the line and hide it from `communicate`); `guard` only keeps a broken
    server from hanging the suite.
    """
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + guard
    while text.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            raise AssertionError(f"no {text!r} on stderr; it had: {seen.decode()!r}")
        seen += chunk
    return seen.decode()


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


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("Pubish:error=UNAVAILABLE", "unknown method 'Pubish'; did you mean 'Publish'?"),
        ("Publish:error=UNAVAILABL", "unknown gRPC status code 'UNAVAILABL'; did you mean"),
        ("Publish:eror=UNAVAILABLE", "did you mean 'error'?"),
        ("Publish:error=INTERNAL,error_fraction=1.5", "error_fraction must be between 0 and 1"),
        ("Publish:error=INTERNAL,error_next=0", "error_next must be at least 1"),
        ("Publish:error_next=2", "need error=CODE"),
        ("Publish:tail_fraction=0.1", "tail_fraction and tail_delay go together"),
        ("Publish:delay=5ms,delay=6ms", "delay is given twice"),
        ("Publish:delay=20ms,delay_max=10ms", "delay_max must be at least delay"),
        ("Publish:error=INTERNAL,resource=orders", "is not a resource name"),
        ("Publish:error=OK", "error=OK injects nothing"),
    ],
)
def test_fault_specs_that_could_never_fire_are_refused(spec: str, expected: str) -> None:
    proc = _run("--port", "0", "--fault", spec)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "--fault" in err and expected in err
    assert "Traceback" not in err


def test_unknown_method_lists_the_valid_ones() -> None:
    proc = _run("--port", "0", "--fault", "Frobnicate:delay=1s")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    for method in ("CreateTopic", "Publish", "GetEffectivePolicy", "UpdatePolicy"):
        assert method in err
    assert "did you mean" not in err  # nothing is near


def test_a_valid_spec_fires_through_the_client() -> None:
    proc = _run("--port", "0", "--fault", "Publish:error=UNAVAILABLE,error_next=1")
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip().split("=", 1)[1]
        client = publisher_client(address)
        client.create_topic(name="projects/proj-alpha/topics/orders")
        topic = "projects/proj-alpha/topics/orders"
        with pytest.raises(exceptions.ServiceUnavailable):
            client.publish(topic=topic, messages=[{"data": b"x"}], retry=None)
        assert client.publish(topic=topic, messages=[{"data": b"x"}], retry=None).message_ids
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stops_at_once_while_a_delayed_call_is_in_flight(sig: signal.Signals) -> None:
    """Issue 21 item 5: a call sleeping in a 600 s injected delay neither keeps the
    process alive nor is left unanswered: it gets UNAVAILABLE and the process exits 0
    (the 60 s safety net of `communicate` is a tenth of the delay)."""
    from google.pubsub_v1.types import Topic

    proc = _run("--port", "0", "--fault", "CreateTopic:delay=600s")
    assert proc.stdout is not None
    address = proc.stdout.readline().strip().split("=", 1)[1]
    client = publisher_client(address)
    # The transport's own stub, started without waiting for its answer.
    delayed = client.transport.create_topic.future(
        Topic(name="projects/proj-alpha/topics/slow"), timeout=900
    )
    # The server says when a rule matches its first call, on the handler's thread just
    # before the delay: from then on the call is in its handler, not queued in gRPC.
    seen = _stderr_until(proc, "fault CreateTopic:delay=600s matched its first call")
    assert "CreateTopic on projects/proj-alpha/topics/slow" in seen
    assert not delayed.done()
    proc.send_signal(sig)
    _, rest = proc.communicate(timeout=60)
    err = seen + rest
    assert proc.returncode == 0, err
    assert "Local server stopped." in err
    error = delayed.exception(timeout=60)
    assert error is not None and error.code().name == "UNAVAILABLE"
    # The woken handler's own answer, not gRPC's shutdown GOAWAY: the stop waits a
    # short grace for woken calls' answers to reach their clients (issue 48).
    assert error.details() == "local server is stopping", error.details()
