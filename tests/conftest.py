"""Suite-wide fixtures: a real loopback Pub/Sub + Org Policy server and real Google
clients talking to it over gRPC."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@pytest.fixture
def local_server() -> Iterator[Any]:
    """An in-memory `LocalServer` on a free loopback port, stopped after the test."""
    from reconciler.localserver import LocalServer

    server = LocalServer(fault_seed=1234)
    server.start()
    try:
        yield server
    finally:
        server.stop(grace=None)


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


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """`reconcile ARGS...` in-process through the real entry point and its error
    boundary, returning what a user would see (no PUBSUB_EMULATOR_HOST leaking in)."""
    from reconciler.cli import main

    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return CliResult(code if isinstance(code, int) else 1, out, err)

    return run
