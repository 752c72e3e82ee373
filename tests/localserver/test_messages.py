"""Published messages are bounded: every one is counted, the last N (`--keep-messages`)
are kept, so a long publish keeps the server's memory flat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer

T = "projects/proj-alpha/topics/orders"


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_keeps_the_last_n_and_counts_all() -> None:
    with LocalServer(keep_messages=5) as server:
        client = publisher_client(server.address)
        client.create_topic(name=T)
        ids = []
        for batch in range(4):  # 4 batches of 3: 12 messages
            msgs = [{"data": f"m{batch * 3 + i}".encode()} for i in range(3)]
            ids += client.publish(topic=T, messages=msgs).message_ids
        kept = server.messages(T)
        assert [m.data for m in kept] == [f"m{i}".encode() for i in range(7, 12)]
        assert [m.message_id for m in kept] == ids[7:]
        assert all(m.publish_time.seconds > 0 for m in kept)
        assert server.message_count(T) == 12
        assert len(set(ids)) == 12


def test_keep_zero_counts_without_keeping() -> None:
    with LocalServer(keep_messages=0) as server:
        client = publisher_client(server.address)
        client.create_topic(name=T)
        assert client.publish(topic=T, messages=[{"data": b"x"}]).message_ids == ["1"]
        assert server.messages(T) == [] and server.message_count(T) == 1


def test_negative_keep_is_refused(refused_start: Any) -> None:
    code, err = refused_start("--keep-messages", "-1")
    assert code != 0 and "--keep-messages" in err


@pytest.mark.slow
def test_server_memory_stays_flat_under_a_publish_stream(server_process: Any) -> None:
    """30 MiB of 1 KiB messages through a server keeping 1,000: its RSS grows by a
    small fraction of that (the old server kept every message: +30 MiB and more)."""
    server = server_process("--keep-messages", "1000")
    client = publisher_client(server.address)
    client.create_topic(name=T)
    batch = [{"data": bytes([i % 251]) * 1024} for i in range(100)]

    def publish(batches: int) -> None:
        for _ in range(batches):
            client.publish(topic=T, messages=batch, retry=None)

    publish(50)  # warm-up: allocator pools, gRPC buffers, the first 1,000 kept
    before = _rss_kib(server.pid)
    publish(300)  # 30,000 messages, 30 MiB of payload
    growth_mib = (_rss_kib(server.pid) - before) / 1024
    client.transport.close()
    server.stop()
    assert growth_mib < 10, f"RSS grew {growth_mib:.1f} MiB"
