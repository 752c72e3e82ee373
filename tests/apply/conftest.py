"""Fixtures for apply: a fresh local server per test (faults and counters never leak
between tests), a real client and apply's own backend pointed at it, and a spec tree
in a temporary cwd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apply_support import Tree, apply_backend, quick_guard


@pytest.fixture
def server() -> Iterator[Any]:
    from reconciler.localserver import LocalServer

    with LocalServer(state_dir=None, host="127.0.0.1", port=0) as srv:
        yield srv


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    return Tree(tmp_path, "apply-e2e")


@pytest.fixture
def client(server: Any) -> Iterator[Any]:
    from reconciler.backends.clients import publisher_client

    pub = publisher_client(server.address)
    yield pub
    transport = getattr(pub, "transport", None)
    if transport is not None:
        transport.close()


@pytest.fixture
def backend(server: Any) -> Iterator[Any]:
    """What `reconcile apply --emulator` runs with (real clients, client retry off,
    the guard in front), with a quick retry policy; `backend.guard.stop` is Ctrl-C."""
    guarded = apply_backend(server.address, quick_guard())
    yield guarded
    guarded.close()
