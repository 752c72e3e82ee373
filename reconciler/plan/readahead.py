"""Read ahead: a large plan reads the live topics in a second process while this one
validates the specs.

For a large tree, reading the live topics (the google-cloud imports, ListTopics,
turning each protobuf topic into Python values) is a sizeable part of a plan that
only starts after validation; done by a child process on another core, from the
moment validation names a project, it costs this process only the answer's decoding
(benchmarks/README.md). Against Google Cloud it also hides the network's round trips
behind the validation.

The child (plan/readahead_child.py) opens the target exactly as `plan` would and reads
what `plan/observe.py` reads, so the plan is the same; an error it meets is raised
here, as the same class with the same message, when the plan asks for the backend. If
the child fails any other way, the plan reads in this process instead, and `note`
says why (the command prints it).

Not for --local (the embedded server lives in this process), not on Windows (it waits
on a pipe with `selectors`) and not for small trees:
starting the child costs more than it saves below a few thousand topics.
`RECONCILE_READ_AHEAD_FROM` sets the number of Topic documents from which it starts
(default 5000; `0` always, `off` never).
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import reconciler
from reconciler.backends.base import BackendInfo, ObservedTopic, OrgInputs, TargetOptions
from reconciler.errors import BackendError, UsageError
from reconciler.plan.readahead_wire import error_of, org_of, topic_of

START_ENV = "RECONCILE_READ_AHEAD_FROM"
DEFAULT_START = 5000


def start_threshold() -> int | None:
    """Topic documents from which to read ahead; None = never."""
    value = os.environ.get(START_ENV, "").strip().lower()
    if not value:
        return DEFAULT_START
    if value == "off":
        return None
    if not value.isdigit():
        raise UsageError(
            f"{START_ENV}={os.environ[START_ENV]!r} is neither a number of Topic documents "
            "nor `off`",
            hint=f"unset it (reads ahead from {DEFAULT_START} documents), or set a number "
            "(0: always) or `off`",
        )
    return int(value)


class ReadAhead:
    """Started by `plan` before validation; `document` is validation's hook (one call
    a Topic document, with its project, and one per Defaults naming a project)."""

    def __init__(self, target: TargetOptions, start_at: int, only: Sequence[str] = ()) -> None:
        self.target = target
        self.start_at = start_at
        self.only = frozenset(only)  # --project: read no other project
        self.seen: dict[str, None] = {}  # projects in the order named
        self.documents = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.broken = False
        # Its stderr, read only to say why it failed (a pipe nobody reads could fill).
        self.stderr: IO[bytes] | None = None
        self.note: str | None = None  # why the plan read in this process after all

    @classmethod
    def for_target(cls, target: TargetOptions, only: Sequence[str] = ()) -> ReadAhead | None:
        start_at = start_threshold()
        if target.local or start_at is None or os.name != "posix":  # waits on a pipe
            return None
        return cls(target, start_at, only)

    def document(self, project: str | None) -> None:
        self.documents += 1
        if project and project not in self.seen and (not self.only or project in self.only):
            self.seen[project] = None
            if self.proc is not None:
                self._send({"project": project})
        if self.proc is None and not self.broken and self.documents >= self.start_at:
            self._start()

    def backend(self, projects: Sequence[str]) -> ReadAheadBackend | None:
        """What the child read for exactly `projects`, or None when it did not run or
        failed (the caller then opens the target itself; `note` says why it failed).
        Raises the error opening the target raised."""
        proc = self.proc
        if proc is None:
            return None
        self._send({"projects": list(projects)})
        out = _read_to_end(proc, time.monotonic() + self._wait_limit())
        if not out:
            why = (
                "it did not answer in time"
                if out is None
                else f"exit status {proc.wait()}: {self._last_words()}"
            )
            self.close()
            self.note = (
                f"note: reading the live topics in a second process failed ({why}); "
                "reading them in this one instead"
            )
            return None
        self.close()  # it has said everything: its memory is not needed while planning
        answer = marshal.loads(out)
        if "open_error" in answer:
            raise error_of(answer["open_error"])
        return ReadAheadBackend(answer)

    def close(self) -> None:
        """Stop the child: it has answered, or the plan ended early (errors, Ctrl-C).
        Closing twice does nothing more."""
        proc, self.proc = self.proc, None
        self.broken = True  # never started again
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        if self.stderr is not None:
            self.stderr.close()

    def _last_words(self) -> str:
        if self.stderr is None:
            return "no message"
        self.stderr.seek(0)
        lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no message"

    def _start(self) -> None:
        command = [sys.executable, "-P", "-m", "reconciler.plan.readahead_child"]
        command += ["--timeout", str(self.target.timeout)]
        if self.target.emulator:
            command += ["--emulator", self.target.emulator]
        if self.target.org_policy is not None:
            command += ["--org-policy", str(self.target.org_policy.resolve())]
        env = dict(os.environ)
        here = str(Path(reconciler.__file__).resolve().parents[1])  # this very package
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
        try:
            self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
            self.proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                env=env,
            )
        except OSError:
            self.broken = True  # read in this process
            return
        for project in self.seen:
            self._send({"project": project})

    def _send(self, message: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdin.closed:
            return
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except OSError:
            pass  # it has stopped; its answer (or exit status) will tell why

    def _wait_limit(self) -> float:
        """Every call the child makes ends within --timeout (twice: connect, then the
        call); a few rounds of them, then give up on it."""
        return 8 * self.target.timeout + 30


class ReadAheadBackend:
    """The read half of a backend, served from the child's answer (plan never writes)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.info = BackendInfo(**answer["info"])
        self._projects: dict[str, dict[str, Any]] = answer["projects"]

    def _entry(self, project: str) -> dict[str, Any]:
        entry = self._projects.get(project)
        if entry is None:  # a bug: the final list named every project plan reads
            raise BackendError(f"projects/{project} was not read ahead")
        return entry

    def list_topics(self, project: str) -> list[ObservedTopic]:
        entry = self._entry(project)
        if "topics_error" in entry:
            raise error_of(entry["topics_error"])
        return [topic_of(row) for row in entry["topics"]]

    def effective_policy(self, project: str) -> OrgInputs:
        entry = self._entry(project)
        if "org_error" in entry:
            raise error_of(entry["org_error"])
        return org_of(entry["org"])

    def get_topic(self, name: str) -> ObservedTopic | None:
        raise BackendError("a plan's read-ahead answers no GetTopic")

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic:
        raise BackendError("a plan's read-ahead makes no change")

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic:
        raise BackendError("a plan's read-ahead makes no change")

    def delete_topic(self, name: str) -> None:
        raise BackendError("a plan's read-ahead makes no change")

    def close(self) -> None:
        pass


def _read_to_end(proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
    """Close the child's stdin (it has the final list), then read its stdout to the
    end; None when `deadline` (time.monotonic) passes first."""
    assert proc.stdin is not None and proc.stdout is not None
    with contextlib.suppress(OSError):
        proc.stdin.close()
    chunks: list[bytes] = []
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
