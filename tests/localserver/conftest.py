"""`reconcile local-server` as a child process, as users and `--emulator` run it."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_support import reconcile_process, start_reconcile

ROOT = Path(__file__).parents[2]


class ServerProcess:
    """One `python -m reconciler local-server --port 0 ...` child; `address` is the
    host:port from its export line, `notes` what it printed to stderr before it."""

    def __init__(self, *args: str) -> None:
        self.proc = start_reconcile("local-server", "--port", "0", *args, cwd=ROOT).proc
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("export PUBSUB_EMULATOR_HOST="):
            _, err = self.proc.communicate(timeout=60)
            raise AssertionError(f"server did not start (exit {self.proc.returncode}): {err}")
        self.address = line.strip().split("=", 1)[1]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> str:
        """SIGTERM (clean stop, journal compacted); returns stderr, asserts exit 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return err

    def kill9(self) -> str:
        """SIGKILL: the state directory is left exactly as a crash leaves it."""
        os.kill(self.proc.pid, signal.SIGKILL)
        _, err = self.proc.communicate(timeout=60)
        return err


def refused(*args: str) -> tuple[int, str]:
    """Run a local server that is expected not to start: (exit code, stderr)."""
    result = reconcile_process("local-server", "--port", "0", *args, cwd=ROOT, timeout=120)
    assert not result.stdout.startswith("export"), "the server started"
    return result.exit_code, result.stderr


@pytest.fixture
def server_process() -> Iterator[type[ServerProcess]]:
    """Start servers with `server_process(*args)`; any still running are killed."""
    started: list[ServerProcess] = []

    class Tracked(ServerProcess):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.communicate(timeout=60)


@pytest.fixture
def refused_start() -> object:
    """`refused_start(*args)` -> (exit code, stderr) of a server that must not start."""
    return refused


@pytest.fixture(scope="session")
def server_process_class() -> type[ServerProcess]:
    """The untracked class, for module-scoped fixtures that stop what they start."""
    return ServerProcess

