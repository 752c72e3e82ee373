"""Apply's outcome stays true whatever fails after a change (issue 39): with stdout on
a full disk (/dev/full) or a pipe whose reader went away, the topics apply changed
stay changed, the exit code says so (0 applied, 3 partial failure: never 1, which
means nothing was changed), and stderr says what could not be written, with the
summary. Before any change, a stdout that cannot be written stops apply with 1 and
nothing changed. Each run is its own process, its stdout the real file or pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import clean_env, start_reconcile
from tests.specs_support import Tree


@pytest.fixture
def target(local_server: Any, tree: Tree) -> list[str]:
    tree.write({"orders": {"labels": {"team": "a"}}, "refunds": {"labels": {"team": "a"}}})
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["specs", "--emulator", local_server.address, "--auto-approve"]


def to_full_disk(*args: str) -> subprocess.CompletedProcess[str]:
    """`reconcile ARGS...` with stdout on /dev/full (every write: ENOSPC)."""
    with Path("/dev/full").open("w") as full:
        return subprocess.run([sys.executable, "-m", "reconciler", *args], stdout=full,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env=clean_env(), timeout=120)


def live(client: Any, tree: Tree) -> set[str]:
    return {t.name for t in client.list_topics(request={"project": f"projects/{tree.project}"})}


def test_json_outcome_on_a_full_disk_keeps_the_applied_exit_code(
    target: list[str], tree: Tree, client: Any
) -> None:
    done = to_full_disk("apply", *target, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert live(client, tree) == {tree.address("orders"), tree.address("refunds")}
    assert done.stderr.endswith(
        "Apply complete: 2 applied (2 created, 0 updated, 0 deleted), 0 failed, 0 not "
        "attempted, 0 unchanged.\nError: the outcome document could not be written to stdout "
        "(No space left on device); exit code 0: the plan was applied.\n")
    assert "internal error" not in done.stderr and "Exception" not in done.stderr


def test_a_partial_failure_on_a_full_disk_exits_3(
    target: list[str], tree: Tree, client: Any, local_server: Any
) -> None:
    local_server.faults.add("CreateTopic", error="PERMISSION_DENIED",
                            resource=tree.address("refunds"))
    done = to_full_disk("apply", *target, "--format", "json")
    assert done.returncode == 3, done.stderr
    assert live(client, tree) == {tree.address("orders")}
    assert ("could not be written to stdout (No space left on device); exit code 3: some "
            "topics failed, others may be applied.") in done.stderr


def test_text_output_on_a_full_disk_stops_before_any_change(
    target: list[str], local_server: Any
) -> None:
    done = to_full_disk("apply", *target)
    assert done.returncode == 1
    assert done.stderr == "Error: cannot write to stdout: No space left on device\n"
    assert local_server.counters.get("CreateTopic") == 0


def test_a_reader_gone_mid_apply_loses_the_lines_not_the_outcome(
    target: list[str], tree: Tree, client: Any, local_server: Any
) -> None:
    """The plan is read, then the reader closes the pipe while the first create is
    held: the progress lines and the summary cannot reach stdout (EPIPE)."""
    held = local_server.faults.hold("CreateTopic", count=1)
    run = start_reconcile("apply", *target, "--concurrency", "1", cwd=Path.cwd())
    assert run.proc.stdout is not None
    for line in run.proc.stdout:
        if line.startswith("Plan: 2 to create"):
            break
    held.wait_arrived(1)
    run.proc.stdout.close()
    held.release_all()
    assert run.proc.wait(timeout=120) == 0
    assert run.proc.stderr is not None
    err = run.proc.stderr.read()
    assert err == (
        "Error: the apply's progress and summary could not be written to stdout (Broken "
        "pipe); exit code 0: the plan was applied.\nApply complete: 2 applied (2 created, "
        "0 updated, 0 deleted), 0 failed, 0 not attempted, 0 unchanged.\n")
    assert live(client, tree) == {tree.address("orders"), tree.address("refunds")}
