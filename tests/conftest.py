"""Suite-wide fixtures: a real loopback Pub/Sub + Org Policy server and real Google
clients talking to it over gRPC."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import CliResult, reconcile
from tests.hooksource import HookSource, shared_hook_source
from tests.server_support import ResourceManager, resource_manager, running_local_server
from tests.wheelhouse import gather


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` spread evenly over the first half of the order, the
    other tests around them in their collection order.

    pytest-xdist (`--dist load`) gives each worker a contiguous first slice of the
    collection (a quarter of it in all), then hands out the rest as workers finish. A
    long test collected last can start on one worker when the other is nearly done, and
    the suite waits for it alone; all the long ones at the front would all go to the
    first worker's slice. Spread over the first half, each first slice gets its share,
    the rest are done by mid-run, and the short tests of the second half even the
    workers out. Deterministic, as xdist requires (every worker sorts alike)."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow:
        return
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    span = max(0, len(items) // 2 - len(slow))  # the short tests they are spread among
    ordered: list[pytest.Item] = []
    taken = 0
    for i, item in enumerate(slow):
        until = i * span // len(slow)
        ordered += rest[taken:until]
        taken = max(taken, until)
        ordered.append(item)
    items[:] = ordered + rest[taken:]


@pytest.fixture
def local_server() -> Iterator[Any]:
    """An in-memory `LocalServer` on a free loopback port, stopped after the test: the
    suite's one server fixture (tests/server_support.py)."""
    with running_local_server() as server:
        yield server


@pytest.fixture
def publisher_client(local_server: Any) -> Iterator[Any]:
    """A real `google.pubsub_v1.PublisherClient` pointed at `local_server`."""
    from reconciler.backends.clients import publisher_client

    client = publisher_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def orgpolicy_client(local_server: Any) -> Iterator[Any]:
    """A real `google.cloud.orgpolicy_v2.OrgPolicyClient` pointed at `local_server`."""
    from reconciler.backends.clients import orgpolicy_client

    client = orgpolicy_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def subscriber_client(local_server: Any) -> Iterator[Any]:
    """A real `google.pubsub_v1.SubscriberClient` pointed at `local_server`."""
    from reconciler.backends.clients import subscriber_client

    client = subscriber_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def schema_client(local_server: Any) -> Iterator[Any]:
    """A real `google.pubsub_v1.SchemaServiceClient` pointed at `local_server`."""
    from reconciler.backends.clients import schema_client

    client = schema_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def hierarchy(local_server: Any) -> Iterator[ResourceManager]:
    """Resource Manager v3's real Projects, Folders and Organizations clients pointed
    at `local_server` (tests/server_support.py)."""
    clients = resource_manager(local_server.address)
    yield clients
    clients.close()


@pytest.fixture
def monitoring_client(local_server: Any) -> Iterator[Any]:
    """A real `google.cloud.monitoring_v3.MetricServiceClient` pointed at `local_server`."""
    from reconciler.backends.clients import monitoring_client

    client = monitoring_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """`reconcile ARGS...` in-process through the real entry point and its error
    boundary (tests/cli_support.py), returning what a user would see; no
    PUBSUB_EMULATOR_HOST leaking in."""
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    return reconcile


SPECIAL_KINDS = ("fifo", "dev-zero", "socket")


@pytest.fixture
def special_file() -> Iterator[Callable[[str, Path], tuple[Path, str]]]:
    """Make a path that is not a regular file, where a user file is expected: "fifo"
    (a named pipe: `open` blocks), "dev-zero" (a symlink to /dev/zero: endless) or
    "socket" (a bound Unix socket). Returns the path and what the reader calls it."""
    if not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"):
        pytest.skip("needs POSIX FIFOs, Unix sockets and /dev/zero")
    bound: list[socket.socket] = []

    def make(kind: str, path: Path) -> tuple[Path, str]:
        if kind == "fifo":
            os.mkfifo(path)
            return path, "a FIFO (named pipe)"
        if kind == "dev-zero":
            path.symlink_to("/dev/zero")
            return path, "a symlink to /dev/zero, a character device"
        assert kind == "socket", kind
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bound.append(sock)
        sock.bind(str(path))
        return path, "a socket"

    try:
        yield make
    finally:
        for sock in bound:
            sock.close()


START_TIMEOUT = 60.0  # a safety net for a wedged JVM start, not a latency expectation


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def google_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Google's Pub/Sub emulator (`gcloud beta emulators pubsub start`) on a free
    loopback port for the module, stopped after it; host:port. Skipped, with the
    reason printed, only where gcloud or its emulator component is absent."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        reason = "gcloud is not installed: Google's Pub/Sub emulator cannot be started"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("emulator") / "emulator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port={address}", "--quiet"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: gcloud starts a JVM child
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while "Server started" not in log.read_text():
            if proc.poll() is not None:
                reason = f"Google's Pub/Sub emulator did not start: {log.read_text()[-500:]}"
                print(f"SKIPPED: {reason}")
                pytest.skip(reason)
            if time.monotonic() > deadline:
                pytest.fail(f"the emulator did not start within {START_TIMEOUT:g} s")
            time.sleep(0.2)
        yield address
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this fixture started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="session")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> HookSource:
    """The working tree as a one-commit repository and one pre-commit home, shared by
    the session's pre-commit tests (tests/hooksource.py)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by its workers
    return shared_hook_source(base / "reconcile-hook-source")


@pytest.fixture(scope="session")
def local_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """pip settings for installing this project's dependencies from wheels gathered
    once per session (tests/wheelhouse.py); empty when they could not be gathered."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by its workers
    return gather(base / "reconcile-wheelhouse") or {}
