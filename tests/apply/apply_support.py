"""Helpers for apply's tests: a spec tree in the test's cwd, the CLI run through the
real `reconcile` entry point (in-process or as a process, exit codes included), and the
backend, guard and plans that `reconcile apply` builds, pointed at the local server."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from reconciler.apply.guard import Guard, GuardedBackend
from reconciler.apply.retry import AdminRetry
from reconciler.backends.base import TargetOptions
from reconciler.cli import main
from reconciler.commands.apply import open_guarded
from reconciler.plan.make import make_plan
from reconciler.plan.model import Plan
from reconciler.spec.desired import DesiredState, DesiredTopic

MUTATING = ("CreateTopic", "UpdateTopic", "DeleteTopic")

ORG_POLICY = """\
name: projects/{project}/policies/gcp.resourceLocations
spec:
  rules:
    - values:
        allowedValues: [{allowed}]
"""


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def reconcile(*args: str, input: str | None = None) -> Run:
    """`reconcile ARGS` in-process; stdin (`input`) is not a terminal here."""
    runner = CliRunner()
    with runner.isolation(input=input) as streams:
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = streams[0].getvalue(), streams[1].getvalue()
    return Run(code, out.decode(), err.decode())


def reconcile_process(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """`reconcile ARGS` as a separate process (for signals)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PUBSUB_EMULATOR_HOST", None)
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Tree:
    """A spec tree plus its org-policy snapshot, in the test's cwd."""

    def __init__(self, root: Path, project: str) -> None:
        self.root = root
        self.project = project
        self.specs = root / "specs"
        self.specs.mkdir()
        self.policy = root / "org-policy.yaml"
        self.set_allowed("in:us-locations")

    def set_allowed(self, allowed: str) -> None:
        self.policy.write_text(ORG_POLICY.format(project=self.project, allowed=allowed))

    def write(self, topics: dict[str, dict[str, Any]]) -> None:
        docs = [
            {
                "apiVersion": "reconcile.pubsub/v1",
                "kind": "Topic",
                "metadata": {"project": self.project, "name": name},
                "spec": spec,
            }
            for name, spec in sorted(topics.items())
        ]
        (self.specs / "topics.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))

    def address(self, name: str) -> str:
        return f"projects/{self.project}/topics/{name}"


def mutating_calls(server: Any) -> dict[str, int]:
    return {m: server.counters.get(m) for m in MUTATING}


# --- the executor and the freshness check over the real clients ---------------------

PROJECT = "apply-unit"  # the server checks project IDs like Pub/Sub does (6-30 chars)


def quick_guard() -> Guard:
    """No rate limit, tiny backoffs: transient faults are retried without real waits.
    The deadline only bounds a retry loop that keeps failing; it is no test timeout."""
    policy = AdminRetry(initial=0.001, maximum=0.002, max_attempts=5, deadline=60.0)
    return Guard(None, policy)


def apply_backend(address: str, guard: Guard) -> GuardedBackend:
    """The backend `reconcile apply --emulator ADDRESS` runs with: the real Pub/Sub and
    Org Policy clients (their own retry disabled) behind the apply guard."""
    return open_guarded(TargetOptions(emulator=address), guard)


def make(
    backend: GuardedBackend,
    topics: dict[str, dict[str, str]],
    *,
    prune: bool = False,
    project: str = PROJECT,
) -> Plan:
    """A real plan for `topics` ({name: labels}, storage unmanaged) in `project`."""
    desired = DesiredState(
        [DesiredTopic(project, name, labels=labels) for name, labels in topics.items()]
    )
    return make_plan(desired, backend, prune=prune)
