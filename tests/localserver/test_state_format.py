"""The state files are checked on every start: a torn journal tail is dropped and said
so; any other damage is refused (file, offset, --recover) and never truncated or
compacted over; a format-1 state directory is migrated with its old files kept."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer
from reconciler.localserver.api import protos
from reconciler.localserver.persistence.frames import HEADER_SIZE, SNAPSHOT_MAGIC, header
from reconciler.localserver.persistence.journal import PUT_POLICY, PUT_TOPIC, Journal

P = "projects/proj-alpha"


def _names(address: str) -> list[str]:
    client = publisher_client(address)
    try:
        return [t.name for t in client.list_topics(request={"project": P, "page_size": 1000})]
    finally:
        client.transport.close()


def _topics(n: int, prefix: str = "t") -> list[str]:
    return [f"{P}/topics/{prefix}-{i:04d}" for i in range(n)]


def _state(tmp_path: Path, *, snapshot: int, journal: int) -> Path:
    """A state directory with `snapshot` topics compacted and `journal` more only in
    the journal, left as a crash leaves it."""
    state = tmp_path / "state"
    server = LocalServer(state_dir=state)
    server.seed_topics(_topics(snapshot, "s"))
    server.compact()
    for name in _topics(journal, "j"):
        server.seed_topics([name])  # one journal write each
    server.crash()
    return state


def test_torn_journal_tail_is_dropped_and_said(tmp_path: Path, server_process: Any) -> None:
    state = _state(tmp_path, snapshot=3, journal=5)
    log = state / Journal.LOG
    data = log.read_bytes()
    log.write_bytes(data + data[HEADER_SIZE : HEADER_SIZE + 20])  # half a record
    server = server_process("--state", str(state))
    assert len(_names(server.address)) == 8
    err = server.stop()
    assert "dropped an incomplete last record" in err and str(log) in err


def test_damaged_snapshot_header_refuses_then_recover_keeps_all(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    state = _state(tmp_path, snapshot=500, journal=0)
    snap = state / Journal.SNAPSHOT
    data = bytearray(snap.read_bytes())
    data[3] ^= 0x20
    snap.write_bytes(bytes(data))
    code, err = refused_start("--state", str(state))
    assert code == 1
    assert f"{snap}: damaged state at byte offset 0 (damaged snapshot header)" in err
    assert snap.read_bytes() == bytes(data)  # nothing written over it
    server = server_process("--state", str(state), "--recover")
    assert len(_names(server.address)) == 500
    err = server.stop()
    assert "recover: snapshot.bin: kept 500 intact records, dropped 0 damaged" in err


def test_cut_short_snapshot_is_refused(tmp_path: Path, refused_start: Any) -> None:
    state = _state(tmp_path, snapshot=50, journal=0)
    snap = state / Journal.SNAPSHOT
    data = snap.read_bytes()
    whole = data[: HEADER_SIZE + (len(data) - HEADER_SIZE) // 2]
    cut = whole[: whole.rfind(b"\xd1\x7eRC")]  # end on a record boundary
    snap.write_bytes(cut)
    code, err = refused_start("--state", str(state))
    assert code == 1
    assert "records of 50" in err and "--recover" in err


def test_a_newer_format_is_refused_not_recovered(tmp_path: Path, refused_start: Any) -> None:
    state = _state(tmp_path, snapshot=2, journal=0)
    snap = state / Journal.SNAPSHOT
    head = struct.pack("<8sIQQ", SNAPSHOT_MAGIC, 99, 2, 0)
    snap.write_bytes(head + struct.pack("<I", zlib.crc32(head)) + snap.read_bytes()[HEADER_SIZE:])
    code, err = refused_start("--state", str(state), "--recover")
    assert code == 1
    assert "state format 99 is newer" in err


def test_damage_in_the_middle_keeps_the_records_after_it(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    """The old behaviour truncated the journal at the bad record, destroying every
    intact record after it; now all 499 survive a --recover."""
    state = _state(tmp_path, snapshot=0, journal=500)
    log = state / Journal.LOG
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x01
    log.write_bytes(bytes(data))
    assert refused_start("--state", str(state))[0] == 1
    assert log.read_bytes() == bytes(data)
    server = server_process("--state", str(state), "--recover")
    assert len(_names(server.address)) == 499
    assert "dropped 1 damaged" in server.stop()


# -- format 1 (before checksummed headers) ---------------------------------------------


def _v1_frame(kind: int, key: str, value: bytes) -> bytes:
    k = key.encode()
    payload = struct.pack("<BH", kind, len(k)) + k + value
    return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def _v1_state(tmp_path: Path) -> Path:
    """A state directory exactly as the previous version wrote it."""
    state = tmp_path / "v1"
    state.mkdir()
    snap = b"RCLSNAP1" + b"".join(
        _v1_frame(PUT_TOPIC, n, protos.Topic(name=n).SerializeToString()) for n in _topics(3, "s")
    )
    (state / Journal.SNAPSHOT).write_bytes(snap)
    policy = protos.Policy(name=f"{P}/policies/gcp.resourceLocations")
    policy.spec.rules.add().values.allowed_values.append("us-east1")
    log = _v1_frame(PUT_POLICY, policy.name, policy.SerializeToString()) + b"".join(
        _v1_frame(PUT_TOPIC, n, protos.Topic(name=n).SerializeToString()) for n in _topics(2, "j")
    )
    (state / Journal.LOG).write_bytes(log)
    return state


def test_format_1_state_is_read_and_migrated_keeping_the_old_files(
    tmp_path: Path, server_process: Any
) -> None:
    state = _v1_state(tmp_path)
    old = {p.name: p.read_bytes() for p in state.iterdir()}
    server = server_process("--state", str(state))
    assert len(_names(server.address)) == 5
    client = publisher_client(server.address)
    created = client.create_topic(name=f"{P}/topics/after")  # the policy came through
    assert list(created.message_storage_policy.allowed_persistence_regions) == ["us-east1"]
    client.transport.close()
    err = server.stop()
    assert "format 1 state, migrated to format 3" in err
    kept = {p.name.split(".v1-")[0]: p.read_bytes() for p in state.glob("*.v1-*")}
    assert kept == old
    assert (state / Journal.SNAPSHOT).read_bytes()[:8] == SNAPSHOT_MAGIC
    again = server_process("--state", str(state))
    assert len(_names(again.address)) == 6
    assert "migrated" not in again.stop()


@pytest.mark.slow
def test_damaged_format_1_state_is_refused_and_recoverable(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    state = _v1_state(tmp_path)
    snap = state / Journal.SNAPSHOT
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0x40
    snap.write_bytes(bytes(data))
    code, err = refused_start("--state", str(state))
    assert code == 1 and str(snap) in err and "--recover" in err
    server = server_process("--state", str(state), "--recover")
    assert len(_names(server.address)) == 4  # 2 of 3 from the snapshot, 2 from the journal
    assert "recover: snapshot.bin: kept 2 intact records, dropped 1 damaged" in server.stop()


def test_header_is_checksummed() -> None:
    good = header(SNAPSHOT_MAGIC, 3, 100)
    assert len(good) == HEADER_SIZE
    from reconciler.localserver.persistence.frames import read_header

    assert read_header(good) is not None
    assert read_header(good[:-1] + bytes([good[-1] ^ 1])) is None


def test_local_target_refuses_a_damaged_state_with_the_recover_command(
    tmp_path: Path, run_cli: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: proj-alpha, name: orders}\nspec: {labels: {team: payments}}\n"
    )
    applied = run_cli("apply", "specs", "--local", "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    snap = tmp_path / ".reconcile" / "local" / Journal.SNAPSHOT
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0x10
    snap.write_bytes(bytes(data))
    planned = run_cli("plan", "specs", "--local")
    assert planned.exit_code == 1
    assert "snapshot.bin: damaged state at byte offset" in planned.stderr
    assert "reconcile local-server --state .reconcile/local --recover" in planned.stderr
    assert "Traceback" not in planned.stderr
