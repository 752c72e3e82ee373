"""Issue 21 item 1: durable before acknowledged. A change is journaled and fsynced
before it is visible or answered; when the disk refuses (ENOSPC, EIO) the call fails
with a clear status, memory is unchanged, reads go on, and a restart holds exactly
what was acknowledged. The fault hook runs everywhere; the small-file-system trial
runs where the runner may mount a tmpfs (else it is skipped, the reason printed)."""

from __future__ import annotations

import errno
import functools
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.api_core import exceptions

from reconciler.apply.retry import AdminRetry
from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer

P = "projects/proj-alpha"


def _names(server: LocalServer) -> list[str]:
    client = publisher_client(server.address)
    try:
        return [t.name for t in client.list_topics(request={"project": P, "page_size": 1000})]
    finally:
        client.transport.close()


def test_full_disk_fails_the_call_and_changes_nothing(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        pub = publisher_client(server.address)
        pub.create_topic(name=f"{P}/topics/before")
        server.fail_state_writes(errno.ENOSPC)
        with pytest.raises(exceptions.ResourceExhausted) as refused:
            pub.create_topic(name=f"{P}/topics/refused", retry=None)
        assert "No space left on device" in refused.value.message
        assert "the change was not made" in refused.value.message
        # Memory is unchanged and reads are served.
        with pytest.raises(exceptions.NotFound):
            pub.get_topic(topic=f"{P}/topics/refused")
        assert _names(server) == [f"{P}/topics/before"]
        # An update refused the same way leaves the topic as it was.
        server.fail_state_writes(errno.ENOSPC)
        with pytest.raises(exceptions.ResourceExhausted):
            pub.update_topic(
                request={
                    "topic": {"name": f"{P}/topics/before", "labels": {"v": "2"}},
                    "update_mask": {"paths": ["labels"]},
                },
                retry=None,
            )
        assert dict(pub.get_topic(topic=f"{P}/topics/before").labels) == {}
        # Space is back: the next write succeeds.
        pub.create_topic(name=f"{P}/topics/after")
        server.crash()
    with LocalServer(state_dir=tmp_path) as again:
        assert _names(again) == [f"{P}/topics/after", f"{P}/topics/before"]


def test_failed_fsync_refuses_writes_until_restart_but_serves_reads(tmp_path: Path) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        pub = publisher_client(server.address)
        pub.create_topic(name=f"{P}/topics/kept")
        server.fail_state_writes(errno.EIO, at="fsync")
        with pytest.raises(exceptions.ServiceUnavailable) as failed:
            pub.create_topic(name=f"{P}/topics/lost", retry=None)
        assert "Input/output error" in failed.value.message
        assert "restart the local server" in failed.value.message
        with pytest.raises(exceptions.ServiceUnavailable):  # still refused: the disk is suspect
            pub.create_topic(name=f"{P}/topics/later", retry=None)
        assert _names(server) == [f"{P}/topics/kept"]
        assert pub.get_topic(topic=f"{P}/topics/kept").name == f"{P}/topics/kept"
    with LocalServer(state_dir=tmp_path) as again:
        assert _names(again) == [f"{P}/topics/kept"]
        publisher_client(again.address).create_topic(name=f"{P}/topics/later")


def test_failed_compaction_at_stop_keeps_every_change(tmp_path: Path) -> None:
    server = LocalServer(state_dir=tmp_path).start()
    publisher_client(server.address).create_topic(name=f"{P}/topics/kept")
    server.fail_state_writes(errno.ENOSPC)  # the snapshot written at stop fails
    server.stop()
    assert not list(tmp_path.glob("*.tmp")), "a failed snapshot leaves no temporary file"
    with LocalServer(state_dir=tmp_path) as again:
        assert _names(again) == [f"{P}/topics/kept"]


# --------------------------------------------------- a real 256 KiB file system


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted in tmp_path (skipped, reason printed, where the runner
    cannot mount one: not root, no mount(8), or a sandbox that forbids it)."""
    mount = shutil.which("mount")
    target = tmp_path / "small"
    target.mkdir()
    reason = None
    if mount is None:
        reason = "mount(8) is not installed"
    else:
        done = subprocess.run(
            [mount, "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(target)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            reason = f"cannot mount a 256 KiB tmpfs here: {done.stderr.strip() or done.returncode}"
    if reason is not None:
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _fill(directory: Path, leave_kib: int) -> None:
    """Leave about `leave_kib` KiB free on the file system of `directory`."""
    free = shutil.disk_usage(directory).free
    (directory / "filler").write_bytes(b"\0" * max(0, free - leave_kib * 1024))


def _spec_tree(root: Path, count: int) -> None:
    specs = root / "specs"
    specs.mkdir()
    docs = [
        {
            "apiVersion": "reconcile.pubsub/v1",
            "kind": "Topic",
            "metadata": {"project": "full-disk-proj", "name": f"topic-{i:03d}"},
            "spec": {"labels": {"team": "demo", "owner": f"a-longish-label-value-{i:03d}"}},
        }
        for i in range(count)
    ]
    (specs / "topics.yaml").write_text(yaml.safe_dump_all(docs))


@pytest.mark.slow
def test_apply_on_a_full_disk_reports_failures_and_loses_nothing(
    small_fs: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's trial: 120 topics applied with the --local state on a 256 KiB file
    system that fills up; what apply reports as created is what a restart holds.

    Each refused create is retried as apply always does (the same attempts), with
    tests/apply's tiny backoffs: the disk stays full, so the default backoffs (up to
    5 s each) were a minute of waiting for the same answers."""
    monkeypatch.setattr("reconciler.commands.apply.AdminRetry",
                        functools.partial(AdminRetry, initial=0.001, maximum=0.002))
    monkeypatch.chdir(small_fs)
    _spec_tree(small_fs, 120)
    _fill(small_fs, leave_kib=20)
    run = run_cli("apply", "--local", "--auto-approve")
    assert run.exit_code == 3, run.stdout + run.stderr
    assert "internal error" not in run.stdout + run.stderr
    summary = next(line for line in run.stdout.splitlines() if line.startswith("Apply complete"))
    created = run.stdout.count(": created\n")
    assert f"{created} applied ({created} created" in summary
    assert f"{120 - created} failed" in summary
    assert 0 < created < 120
    assert "No space left on device: the change was not made" in run.stdout + run.stderr
    (small_fs / "filler").unlink()
    # After a restart of the server (a new --local command): exactly the created ones.
    plan = run_cli("plan", "--local")
    assert f"Plan: {120 - created} to create, 0 to update, 0 to delete." in plan.stdout
    again = run_cli("apply", "--local", "--auto-approve")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert f"{120 - created} applied" in again.stdout


def test_local_server_stops_cleanly_on_a_full_disk(
    small_fs: Path, server_process: Any
) -> None:
    state = small_fs / "state"
    server = server_process("--state", str(state))
    client = publisher_client(server.address)
    client.create_topic(name=f"{P}/topics/kept")
    _fill(small_fs, leave_kib=0)
    with pytest.raises(exceptions.ResourceExhausted):
        for i in range(200):  # a journal page may still have room for a few
            client.create_topic(name=f"{P}/topics/more-{i:03d}", retry=None)
    client.transport.close()
    err = server.stop()  # asserts exit 0
    assert "internal error" not in err and "This is a bug" not in err
    # Compacted or not (withdrawing the server's address file at stop frees a block,
    # which may be room enough for the snapshot): either way a warning at most.
    assert "Traceback" not in err
    (small_fs / "filler").unlink()
    again = server_process("--state", str(state))
    again_client = publisher_client(again.address)
    names = [t.name for t in again_client.list_topics(request={"project": P})]
    assert f"{P}/topics/kept" in names
    again_client.transport.close()
    again.stop()
