"""Against Google's own Pub/Sub emulator (issue 13): it cannot update labels or storage
policies and computes no storage policy. Apply must say so instead of advising a rerun,
and `inherit` topics must get one warning instead of a perpetual update.

The emulator is started by `gcloud beta emulators pubsub start` on a free loopback port
for this module and stopped after it; the tests are skipped, with the reason printed,
only where gcloud (or its Pub/Sub emulator component) is absent."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import reconcile
from tests.specs_support import Tree

START_TIMEOUT = 60.0  # a safety net for a wedged JVM start, not a latency expectation


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def google_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        reason = "gcloud is not installed: Google's Pub/Sub emulator cannot be started"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("emulator") / "emulator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port={address}", "--quiet"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: gcloud starts a JVM child
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while "Server started" not in log.read_text():
            if proc.poll() is not None:
                reason = f"Google's Pub/Sub emulator did not start: {log.read_text()[-500:]}"
                print(f"SKIPPED: {reason}")
                pytest.skip(reason)
            if time.monotonic() > deadline:
                pytest.fail(f"the emulator did not start within {START_TIMEOUT:g} s")
            time.sleep(0.2)
        yield address
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this fixture started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def emu_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any) -> Tree:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    # A project of its own per test: the emulator is shared by the module.
    return Tree(tmp_path, f"emu-{request.node.name[5:19].replace('_', '-')}".rstrip("-"))


def args(address: str, tree: Tree) -> list[str]:
    return ["--emulator", address, "--org-policy", str(tree.policy)]


US = {"allowedPersistenceRegions": ["us-east1"]}


def test_inherit_topics_get_one_warning_instead_of_a_perpetual_update(
    google_emulator: str, emu_tree: Tree
) -> None:
    emu_tree.write(
        {
            "inherits-a": {"messageStoragePolicy": "inherit"},
            "inherits-b": {"messageStoragePolicy": "inherit"},
            "explicit": {"messageStoragePolicy": US},
        }
    )
    first = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert first.exit_code == 0, first.output
    assert "3 applied (3 created" in first.output
    plan = reconcile("plan", "specs", *args(google_emulator, emu_tree), "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output  # no perpetual update
    warnings = [line for line in plan.output.splitlines() if "emulator-no-storage-policy" in line]
    assert len(warnings) == 1, plan.output
    assert "computes no message storage policy" in warnings[0]
    assert "inherits-a" in warnings[0] and "inherits-b" in warnings[0]


def test_label_update_refused_says_why_and_does_not_advise_a_rerun(
    google_emulator: str, emu_tree: Tree
) -> None:
    emu_tree.write({"orders": {"labels": {"team": "a"}}})
    assert (
        reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve").exit_code
        == 0
    )
    emu_tree.write({"orders": {"labels": {"team": "b"}}})
    run = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert run.exit_code == 1, run.output
    failed = [line for line in run.output.splitlines() if "update FAILED" in line]
    assert len(failed) == 1, run.output
    assert "Google's Pub/Sub emulator cannot update labels of a topic" in failed[0]
    assert "--local" in failed[0]
    assert "Run `reconcile apply` again" not in run.output
    assert "Running apply again will not fix these failures" in run.output


def test_storage_policy_update_refused_says_why(google_emulator: str, emu_tree: Tree) -> None:
    emu_tree.set_allowed("us-east1, us-central1")
    emu_tree.write({"orders": {"messageStoragePolicy": US}})
    assert (
        reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve").exit_code
        == 0
    )
    emu_tree.write(
        {"orders": {"messageStoragePolicy": {"allowedPersistenceRegions": ["us-central1"]}}}
    )
    run = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert run.exit_code == 1, run.output
    assert "cannot update message storage policies of a topic" in run.output
    assert "Run `reconcile apply` again" not in run.output
