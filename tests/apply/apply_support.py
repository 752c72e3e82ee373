"""Helpers for apply's end-to-end tests: a spec tree in the test's cwd, and the CLI
run through the real `reconcile` entry point, in-process or as a process (exit codes
included)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from reconciler.cli import main

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
