"""State under --state DIR: restarts keep every acknowledged change; a torn write or a
kill -9 mid-write never corrupts it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import orgpolicy_client, publisher_client
from reconciler.localserver import LocalServer
from reconciler.localserver.persistence.frames import HEADER_SIZE
from reconciler.localserver.persistence.journal import Journal, StateInUse
from tests.cli_support import start_reconcile

P = "projects/proj-alpha"
ROOT = Path(__file__).parents[2]


def _names(client: Any, project: str = P) -> list[str]:
    return [t.name for t in client.list_topics(request={"project": project, "page_size": 1000})]


def test_restart_keeps_topics_policies_and_ancestry(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        server.set_ancestry(P, "organizations/1")
        orgpolicy_client(server.address).create_policy(
            parent="organizations/1",
            policy={
                "name": "organizations/1/policies/gcp.resourceLocations",
                "spec": {"rules": [{"values": {"allowed_values": ["us-east1"]}}]},
            },
        )
        pub = publisher_client(server.address)
        pub.create_topic(request={"name": f"{P}/topics/keep", "labels": {"v": "1"}})
        pub.create_topic(name=f"{P}/topics/gone")
        pub.update_topic(
            request={
                "topic": {"name": f"{P}/topics/keep", "labels": {"v": "2"}},
                "update_mask": {"paths": ["labels"]},
            }
        )
        pub.delete_topic(topic=f"{P}/topics/gone")
    with LocalServer(state_dir=tmp_path) as server:
        pub = publisher_client(server.address)
        assert _names(pub) == [f"{P}/topics/keep"]
        keep = pub.get_topic(topic=f"{P}/topics/keep")
        assert dict(keep.labels) == {"v": "2"}
        assert list(keep.message_storage_policy.allowed_persistence_regions) == ["us-east1"]
        # Policy and ancestry survived: a new topic still gets the org's regions.
        new = pub.create_topic(name=f"{P}/topics/new")
        assert list(new.message_storage_policy.allowed_persistence_regions) == ["us-east1"]


def test_torn_last_record_is_cut_off(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    publisher_client(server.address).create_topic(name=f"{P}/topics/first")
    server.crash()
    log = tmp_path / Journal.LOG
    data = log.read_bytes()
    assert data, "the change must be in the journal before the reply"
    record = data[HEADER_SIZE:]
    log.write_bytes(data + record[: len(record) // 2])  # half a record: a torn write
    with LocalServer(state_dir=tmp_path) as again:
        pub = publisher_client(again.address)
        assert _names(pub) == [f"{P}/topics/first"]
        pub.create_topic(name=f"{P}/topics/second")  # appends after the cut
        again.crash()
    with LocalServer(state_dir=tmp_path) as again:
        assert _names(publisher_client(again.address)) == [
            f"{P}/topics/first",
            f"{P}/topics/second",
        ]


def test_journal_is_compacted_as_it_grows(tmp_path: Path) -> None:
    limit = 20_000
    with LocalServer(state_dir=tmp_path, fsync=False, compact_after_bytes=limit) as server:
        server.seed_topics(f"{P}/topics/t-{i:05d}" for i in range(200))
        pub = publisher_client(server.address)
        log = tmp_path / Journal.LOG
        sizes = []
        for i in range(1000):
            pub.update_topic(
                request={
                    "topic": {"name": f"{P}/topics/t-{i % 200:05d}", "labels": {"n": str(i)}},
                    "update_mask": {"paths": ["labels"]},
                }
            )
            sizes.append(log.stat().st_size)
        snapshot = (tmp_path / Journal.SNAPSHOT).stat().st_size
        # It grew and was folded into the snapshot several times, never unbounded.
        assert max(sizes) <= limit + 2 * snapshot + 1000
        assert sum(1 for a, b in pairwise(sizes) if b < a) >= 2
        server.crash()
    with LocalServer(state_dir=tmp_path) as server:
        pub = publisher_client(server.address)
        assert len(_names(pub)) == 200
        assert dict(pub.get_topic(topic=f"{P}/topics/t-00199").labels) == {"n": "999"}


def test_second_server_on_same_state_is_refused(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path), pytest.raises(StateInUse, match="in use"):
        LocalServer(state_dir=tmp_path)


def _start_cli_server(state: Path) -> tuple[subprocess.Popen[str], str]:
    proc = start_reconcile("local-server", "--port", "0", "--state", str(state), cwd=ROOT).proc
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("export PUBSUB_EMULATOR_HOST="), line + proc.stderr.read()
    return proc, line.strip().split("=", 1)[1]


def test_kill_9_mid_writes_keeps_every_acknowledged_change(tmp_path: Path) -> None:
    proc, address = _start_cli_server(tmp_path)
    acked_topics: list[str] = []
    acked_label: list[int] = []
    stop = threading.Event()

    def writer(kind: str, prefix: str) -> None:
        client = publisher_client(address)
        no_retry = {"retry": None, "timeout": 10}
        i = 0
        while not stop.is_set():
            i += 1
            try:
                if kind == "create":
                    name = f"{P}/topics/{prefix}-{i:06d}"
                    client.create_topic(name=name, **no_retry)
                    acked_topics.append(name)
                else:
                    client.update_topic(
                        request={
                            "topic": {"name": f"{P}/topics/counter", "labels": {"n": str(i)}},
                            "update_mask": {"paths": ["labels"]},
                        },
                        **no_retry,
                    )
                    acked_label.append(i)
            except exceptions.GoogleAPICallError:
                return

    publisher_client(address).create_topic(name=f"{P}/topics/counter")
    threads = [
        threading.Thread(target=writer, args=(kind, prefix))
        for kind, prefix in (("create", "a"), ("create", "b"), ("update", "u"))
    ]
    for t in threads:
        t.start()
    while len(acked_topics) < 300 or len(acked_label) < 100:
        if not all(t.is_alive() for t in threads):
            break
        threading.Event().wait(0.01)
    os.kill(proc.pid, signal.SIGKILL)  # mid-write: the writers are still going
    proc.wait()
    stop.set()
    for t in threads:
        t.join()
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert len(acked_topics) >= 300 and len(acked_label) >= 100

    proc, address = _start_cli_server(tmp_path)
    try:
        client = publisher_client(address)
        present = set(_names(client))
        missing = [n for n in acked_topics if n not in present]
        assert missing == []
        n = int(client.get_topic(topic=f"{P}/topics/counter").labels["n"])
        # The last acknowledged value, or a later write that landed but was not acked.
        assert n >= acked_label[-1]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_compaction_then_more_writes_then_restart(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    pub = publisher_client(server.address)
    for i in range(5):
        pub.create_topic(name=f"{P}/topics/before-{i}")
    server.compact()
    assert (tmp_path / Journal.LOG).stat().st_size == HEADER_SIZE  # header only
    (tmp_path / "snapshot.bin.tmp").write_bytes(b"half a snapshot")  # a crashed compaction
    pub.delete_topic(topic=f"{P}/topics/before-0")
    pub.create_topic(name=f"{P}/topics/after")
    server.crash()  # no clean-stop compaction
    with LocalServer(state_dir=tmp_path) as again:
        assert _names(publisher_client(again.address)) == [
            f"{P}/topics/after",
            *(f"{P}/topics/before-{i}" for i in range(1, 5)),
        ]
