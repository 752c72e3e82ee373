"""A `plan` stopped by a signal leaves no read-ahead child calling the service (issue 21,
item 5): SIGTERM exits 143 with a word and the child goes with it; after SIGKILL the
kernel (PR_SET_PDEATHSIG) or the closed request pipe ends it. The child's first
ListTopics is held at the local server, so the plan is stopped mid-read, for certain."""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path
from typing import Any

import pytest

from reconciler.plan.readahead import START_ENV
from tests.cli_support import start_reconcile
from tests.specs_support import Tree


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def wait_gone(pid: int) -> None:
    """Return once `pid` has exited (a pidfd turns readable); the bound only keeps a
    broken build from hanging the suite."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # gone already
    try:
        ready, _, _ = select.select([fd], [], [], 120.0)
        assert ready, f"the read-ahead child {pid} is still running"
    finally:
        os.close(fd)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or not hasattr(os, "pidfd_open"),
                    reason="needs Linux /proc and pidfd_open to watch the child")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_plan_takes_its_read_ahead_child_with_it(
    local_server: Any, tree: Tree, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    tree.write({"orders": {"labels": {"team": "a"}}})
    monkeypatch.setenv(START_ENV, "0")  # read ahead whatever the tree's size
    hold = local_server.faults.hold("ListTopics", count=1)
    proc = start_reconcile("plan", "specs", "--emulator", local_server.address,
                           cwd=tree.root, env={START_ENV: "0"}).proc
    try:
        held = hold.wait_arrived(1, timeout=120.0)[0]  # the child is mid-read
        [child] = children(proc.pid)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    if signum == signal.SIGTERM:
        assert proc.returncode == 143, out + err
        assert "Terminated (SIGTERM)." in err
        assert "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    wait_gone(child)
    held.release()  # its answer goes nowhere
