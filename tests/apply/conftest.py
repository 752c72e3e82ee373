"""Fixtures for apply: a real client and apply's own backend pointed at the suite's
`local_server` (a fresh one per test: faults and counters never leak between tests),
and a spec tree in a temporary cwd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apply_support import apply_backend, quick_guard

from tests.specs_support import Tree


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    return Tree(tmp_path, "apply-e2e")


@pytest.fixture
def client(publisher_client: Any) -> Any:
    """The suite's real PublisherClient on `local_server`."""
    return publisher_client


@pytest.fixture
def backend(local_server: Any) -> Iterator[Any]:
    """What `reconcile apply --emulator` runs with (real clients, client retry off,
    the guard in front), with a quick retry policy; `backend.guard.stop` is Ctrl-C."""
    guarded = apply_backend(local_server.address, quick_guard())
    yield guarded
    guarded.close()
