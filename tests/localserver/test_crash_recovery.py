"""Issue 12: `kill -9` during 8 concurrent writers, then (a) a restart has every
acknowledged write; (b) one byte damaged in the middle of each state file in turn
makes a restart refuse, and `--recover` brings back every intact acknowledged write,
reporting exactly what it dropped. All through `reconcile local-server` processes and
the real client library."""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import publisher_client

P = "projects/proj-alpha"
WRITERS = 8
SEEDED = 120


def _names(address: str) -> set[str]:
    client = publisher_client(address)
    try:
        return {t.name for t in client.list_topics(request={"project": P, "page_size": 1000})}
    finally:
        client.transport.close()


def _seed(address: str) -> list[str]:
    client = publisher_client(address)
    names = [f"{P}/topics/seed-{i:04d}" for i in range(SEEDED)]
    for name in names:
        client.create_topic(name=name)
    client.transport.close()
    return names


def _write_until_killed(server: Any, at_least: int) -> list[str]:
    """8 writer threads create topics until the server is killed (mid-write) once at
    least `at_least` creates were acknowledged; the acknowledged names."""
    acked: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def writer(w: int) -> None:
        client = publisher_client(server.address)
        i = 0
        while True:
            i += 1
            name = f"{P}/topics/w{w}-{i:05d}"
            try:
                client.create_topic(name=name, retry=None, timeout=10)
            except exceptions.GoogleAPICallError:
                return  # the server is gone
            with lock:
                acked.append(name)
                if len(acked) >= at_least:
                    enough.set()

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(WRITERS)]
    for t in threads:
        t.start()
    assert enough.wait(120), f"only {len(acked)} writes acknowledged"
    server.kill9()  # the writers are still going
    for t in threads:
        t.join(60)
    return acked


@pytest.fixture(scope="module")
def crashed(
    tmp_path_factory: pytest.TempPathFactory, server_process_class: Any
) -> tuple[Path, list[str]]:
    """A state directory as `kill -9` left it (a snapshot from a clean stop, then a
    journal written by 8 concurrent writers), and every acknowledged topic name."""
    ServerProcess = server_process_class
    state = tmp_path_factory.mktemp("crashed") / "state"
    first = ServerProcess("--state", str(state))
    seeded = _seed(first.address)
    first.stop()  # compacts: the seeded topics are now in the snapshot
    second = ServerProcess("--state", str(state))
    acked = _write_until_killed(second, at_least=400)
    assert (state / "snapshot.bin").stat().st_size > 0
    assert (state / "journal.log").stat().st_size > 0
    return state, seeded + acked


def _files(state: Path) -> dict[str, bytes]:
    """The state files and their bytes (the lock file aside)."""
    return {p.name: p.read_bytes() for p in state.iterdir() if p.name != "LOCK"}


def _copy(state: Path, tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(state, target)
    (target / "LOCK").unlink(missing_ok=True)
    return target


def test_restart_after_kill_9_has_every_acknowledged_write(
    crashed: tuple[Path, list[str]], tmp_path: Path, server_process: Any
) -> None:
    state = _copy(crashed[0], tmp_path)
    server = server_process("--state", str(state))
    present = _names(server.address)
    missing = [n for n in crashed[1] if n not in present]
    assert missing == []
    assert len(present) >= len(crashed[1])  # plus, at most, writes landed but not acked
    server.stop()


@pytest.mark.parametrize("damaged", ["snapshot.bin", "journal.log"])
def test_one_damaged_byte_refuses_then_recover_keeps_every_intact_write(
    damaged: str,
    crashed: tuple[Path, list[str]],
    tmp_path: Path,
    server_process: Any,
    refused_start: Any,
) -> None:
    state = _copy(crashed[0], tmp_path)
    path = state / damaged
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF
    path.write_bytes(bytes(data))
    before = _files(state)

    # (b) restart refuses, naming the file, the offset and --recover; writes nothing.
    code, err = refused_start("--state", str(state))
    assert code == 1, err
    assert str(path) in err
    offset = int(re.search(r"damaged state at byte offset (\d+)", err).group(1))  # type: ignore[union-attr]
    assert middle - 200 < offset <= middle  # the start of the record holding the byte
    assert "--recover" in err
    assert "Traceback" not in err
    assert _files(state) == before

    # --recover: every intact acknowledged write is back, the dropped ones reported.
    server = server_process("--state", str(state), "--recover")
    present = _names(server.address)
    missing = [n for n in crashed[1] if n not in present]
    report = server.stop()
    line = next(ln for ln in report.splitlines() if f"recover: {damaged}:" in ln)
    dropped = int(re.search(r"dropped (\d+) damaged", line).group(1))  # type: ignore[union-attr]
    start, end = map(int, re.search(r"bytes (\d+)-(\d+)", line).groups())  # type: ignore[union-attr]
    assert start <= middle < end
    assert dropped == 1
    assert len(missing) == dropped  # one topic per record: only the damaged one is gone
    assert len(present) >= len(crashed[1]) - dropped

    # The damaged file is kept aside, byte for byte; the fresh state opens cleanly.
    aside = [p for p in state.iterdir() if p.name.startswith(f"{damaged}.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes() == bytes(data)
    assert aside[0].name in report
    again = server_process("--state", str(state))
    assert _names(again.address) == present
    again.stop()
