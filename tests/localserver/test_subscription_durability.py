"""Issue 22 item 4: subscriptions, published messages and acks survive restarts with
the guarantees topics have: an acknowledged Publish or Acknowledge is not lost by a
clean stop or a kill -9; nothing acknowledged comes back; message IDs are not reused.
State format 3; a format-2 state is migrated on open, its files kept aside."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from subscriber_support import make_subscriber

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer
from reconciler.localserver.persistence import frames as f

P = "projects/proj-alpha"
T = f"{P}/topics/orders"
S = f"{P}/subscriptions/orders-sub"


def _drain(sub: Any, name: str = S) -> list[Any]:
    """Everything deliverable now, leased (not acked)."""
    out: list[Any] = []
    while True:
        got = sub.pull(
            request={"subscription": name, "max_messages": 1000, "return_immediately": True},
            timeout=30,
        ).received_messages
        if not got:
            return out
        out.extend(got)


def _setup(server: LocalServer) -> tuple[Any, Any, list[str]]:
    pub, sub = publisher_client(server.address), make_subscriber(server.address)
    pub.create_topic(name=T)
    sub.create_subscription(
        request={"name": S, "topic": T, "ack_deadline_seconds": 42, "retain_acked_messages": True}
    )
    ids: list[str] = []
    for i in range(3):
        batch = [{"data": f"{i}-{j}".encode()} for j in range(50)]
        ids += list(pub.publish(topic=T, messages=batch).message_ids)
    got = _drain(sub)
    sub.acknowledge(request={"subscription": S, "ack_ids": [m.ack_id for m in got[:10]]})
    return pub, sub, ids


def _check_restored(server: LocalServer, unacked: list[str], retained: int) -> tuple[Any, Any]:
    pub, sub = publisher_client(server.address), make_subscriber(server.address)
    config = sub.get_subscription(subscription=S)
    assert (config.ack_deadline_seconds, config.retain_acked_messages) == (42, True)
    stats = server.subscription_stats(S)
    assert stats is not None
    assert stats.unacked["us-central1"].count == len(unacked)
    assert stats.retained_acked["us-central1"].count == retained
    got = _drain(sub)  # leases are not durable: every unacked message is deliverable
    assert sorted(m.message.message_id for m in got) == sorted(unacked)
    return pub, (sub, got)


def test_crash_then_clean_restart_keeps_backlog_acks_and_config(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    _, _, ids = _setup(server)
    server.crash()  # the journal exactly as a kill -9 leaves it
    with LocalServer(state_dir=tmp_path) as again:  # replayed from the journal
        pub, (sub, got) = _check_restored(again, ids[10:], retained=10)
        new = list(pub.publish(topic=T, messages=[{"data": b"new"}]).message_ids)
        assert int(new[0]) > int(ids[-1])  # message IDs are not reused after a restart
        sub.acknowledge(request={"subscription": S, "ack_ids": [got[0].ack_id]})
        first_acked = got[0].message.message_id
    # The clean stop compacted: now from the snapshot's batches and backlogs.
    with LocalServer(state_dir=tmp_path) as again:
        unacked = [i for i in ids[10:] if i != first_acked] + new
        _check_restored(again, unacked, retained=11)


def test_kill_9_keeps_every_acknowledged_publish_and_ack(
    tmp_path: Path, server_process: Any
) -> None:
    state = tmp_path / "state"
    server = server_process("--state", str(state))
    pub, sub = publisher_client(server.address), make_subscriber(server.address)
    pub.create_topic(name=T)
    sub.create_subscription(request={"name": S, "topic": T})
    published = []
    for _ in range(20):
        published += pub.publish(topic=T, messages=[{"data": b"m"}] * 25).message_ids
    got = _drain(sub)
    acked = {m.message.message_id for m in got[:100]}
    sub.acknowledge(request={"subscription": S, "ack_ids": [m.ack_id for m in got[:100]]})
    pub.transport.close()
    sub.transport.close()
    server.kill9()
    again = server_process("--state", str(state))
    sub = make_subscriber(again.address)
    left = {m.message.message_id for m in _drain(sub)}
    assert left == set(published) - acked
    sub.transport.close()
    again.stop()


def _as_format_2(path: Path) -> None:
    """Rewrite a state file's header as format 2 wrote it (same framing)."""
    data = bytearray(path.read_bytes())
    magic, _version, count, body = struct.unpack_from("<8sIQQ", data, 0)
    head = struct.pack("<8sIQQ", magic, 2, count, body)
    data[: f.HEADER_SIZE] = head + struct.pack("<I", zlib.crc32(head))
    path.write_bytes(bytes(data))


def test_a_format_2_state_is_migrated_and_kept_aside(tmp_path: Path, server_process: Any) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        publisher_client(server.address).create_topic(name=T)
    with LocalServer(state_dir=tmp_path) as server:  # one record in the journal too
        publisher_client(server.address).create_topic(name=f"{P}/topics/second")
        server.crash()
    _as_format_2(tmp_path / "snapshot.bin")
    _as_format_2(tmp_path / "journal.log")
    server = server_process("--state", str(tmp_path))
    names = [t.name for t in publisher_client(server.address).list_topics(project=P)]
    assert names == [f"{P}/topics/orders", f"{P}/topics/second"]
    err = server.stop()
    assert "format 2 state, migrated to format 3" in err
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.v2-*")) == [
        "journal.log.v2",
        "snapshot.bin.v2",
    ]
    assert f.read_header((tmp_path / "snapshot.bin").read_bytes()).version == 3  # type: ignore[union-attr]
