"""Read ahead: a large plan reads the live topics in a second process while this one
validates the specs.

For a large tree, reading the live topics (the google-cloud imports, ListTopics,
turning each protobuf topic into Python values) is a sizeable part of a plan that
only starts after validation; done by a child process on another core, from the
moment validation names a project, it costs this process only the answer's decoding
(benchmarks/README.md). Against Google Cloud it also hides the network's round trips
behind the validation.

The child (plan/readahead_child.py) opens the target exactly as `plan` would and makes
the reads `plan/observe.py` makes of each project; `ReadAheadReads` serves them to
observe (it is the `Reads` of backends/base.py, answered from the child), so the plan
is the same; an error the child meets is raised here, as the same class with the same
message, when observe asks for what raised it. If the child fails any other way, the
plan reads in this process instead, and `note` says why (the command prints it).

The child stops with this process, however it stops (Ctrl-C, SIGTERM, kill -9): see
plan/readahead_child.py. Not for --local (the embedded server lives in this
process), not on Windows (it waits on a pipe with `selectors`) and not for small trees:
starting the child costs more than it saves below a few thousand topics.
`RECONCILE_READ_AHEAD_FROM` sets the number of Topic documents from which it starts
(default 5000, and 0 for `residency`, which reads nothing it does not show; `0`
always, `off` never).

`residency` reads through the same child (`reads="residency"`: also the by-region
gauges it shows, asked as backends/residency_reads.py asks). After its answer the
child stays, for the by-region gauges a plan asks for once it knows which topics lose
regions (`ReadAheadReads.stored`), until `close`.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import selectors
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import reconciler
from reconciler.backends.base import (
    Ancestry,
    BackendInfo,
    CustomConstraints,
    GaugeQuery,
    ObservedTopic,
    OrgInputs,
    Reads,
    StoredMessages,
    SubscriptionListing,
    TargetOptions,
)
from reconciler.errors import BackendError, UsageError
from reconciler.plan.readahead_wire import (
    FRAME_HEADER,
    ancestry_of,
    custom_of,
    error_of,
    org_of,
    query_of,
    query_row,
    stored_of,
    subscriptions_of,
)

START_ENV = "RECONCILE_READ_AHEAD_FROM"
DEFAULT_START = 5000
# `residency` reads nothing it does not show: the second process, started with the
# first document, only moves its reads and the client libraries' import off the
# validation's path, whatever the tree's size.
RESIDENCY_START = 0


def start_threshold(default: int = DEFAULT_START) -> int | None:
    """Topic documents from which to read ahead; None = never."""
    value = os.environ.get(START_ENV, "").strip().lower()
    if not value:
        return default
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

    def __init__(
        self, target: TargetOptions, start_at: int, only: Sequence[str] = (),
        reads: str = "plan",
    ) -> None:
        self.target = target
        self.reads = reads  # "residency": also retention and every gauge, read ahead
        self.start_at = start_at
        self.only = frozenset(only)  # --project: read no other project
        self.seen: dict[str, None] = {}  # projects in the order named
        self.documents = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.broken = False
        # Its stderr, read only to say why it failed (a pipe nobody reads could fill).
        self.stderr: IO[bytes] | None = None
        self.note: str | None = None  # why the plan read in this process after all
        self._unread = bytearray()  # read from the child beyond the last answer
        self._asking = threading.Lock()  # one gauge request at a time

    @classmethod
    def for_target(
        cls, target: TargetOptions, only: Sequence[str] = (), reads: str = "plan"
    ) -> ReadAhead | None:
        start_at = start_threshold(RESIDENCY_START if reads == "residency" else DEFAULT_START)
        if target.local or start_at is None or os.name != "posix":  # waits on a pipe
            return None
        return cls(target, start_at, only, reads)

    @classmethod
    @contextlib.contextmanager
    def reading(
        cls, target: TargetOptions, only: Sequence[str] = (), reads: str = "plan"
    ) -> Iterator[ReadAhead | None]:
        """`for_target`, closed (its child stopped) however the command ends."""
        read_ahead = cls.for_target(target, only, reads)
        try:
            yield read_ahead
        finally:
            if read_ahead is not None:
                read_ahead.close()

    def document(self, project: str | None) -> None:
        self.documents += 1
        if project and project not in self.seen and (not self.only or project in self.only):
            self.seen[project] = None
            if self.proc is not None:
                self._send({"project": project})
        if self.proc is None and not self.broken and self.documents >= self.start_at:
            self._start()

    def served(self, projects: Sequence[str]) -> ReadAheadReads | None:
        """What the child read for exactly `projects` (a plan's ancestry and custom
        constraints too; `residency` reads neither), or None when it did not run or
        failed (the caller then opens the target itself; `note` says why it failed).
        Raises the error opening the target raised."""
        proc = self.proc
        if proc is None:
            return None
        self._send({"projects": list(projects)})
        answer = self._answer()
        if isinstance(answer, str):
            self.close()
            self.note = (
                f"note: reading the live topics in a second process failed ({answer}); "
                "reading them in this one instead"
            )
            return None
        if "open_error" in answer:
            self.close()
            raise error_of(answer["open_error"])
        return ReadAheadReads(answer, self.target, self)

    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages] | None:
        """By-region gauges read by the child, which stays after its first answer for
        these (every query at once); None when it is gone (the caller reads them
        itself)."""
        with self._asking:  # the child answers in the order asked: one at a time here
            if self.proc is None:
                return None
            self._send({"stored": [query_row(q) for q in queries]})
            if self.proc is None:
                return None
            answer = self._answer()
            if isinstance(answer, str):
                self.close()
                return None
            return [stored_of(row) for row in answer["stored"]]

    def _answer(self) -> dict[str, Any] | str:
        """The child's next answer, or why there is none."""
        proc = self.proc
        assert proc is not None
        out = _read_frame(proc, time.monotonic() + self._wait_limit(), self._unread)
        if out is None:
            return "it did not answer in time"
        if isinstance(out, int):
            return f"exit status {proc.wait()}: {self._last_words()}"
        found: dict[str, Any] = marshal.loads(out)
        return found

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
        command += ["--timeout", str(self.target.timeout), "--reads", self.reads]
        if threading.current_thread() is threading.main_thread():
            # PR_SET_PDEATHSIG fires when the creating *thread* ends: only from the one
            # that lives as long as the command (else the pipe's end of file stops it).
            command += ["--parent", str(os.getpid())]
        if self.target.emulator:
            command += ["--emulator", self.target.emulator]
        if self.target.org_policy is not None:
            # As given: the child runs in this directory, and the plan records the path
            # the way the user wrote it (plan/origin.py).
            command += ["--org-policy", str(self.target.org_policy)]
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


class ReadAheadReads(Reads):
    """`Reads` served from the child's answer, and its gauge reads afterwards."""

    def __init__(
        self, answer: dict[str, Any], target: TargetOptions | None = None,
        child: ReadAhead | None = None,
    ) -> None:
        self.info = BackendInfo(**answer["info"])
        self._projects: dict[str, dict[str, Any]] = answer["projects"]
        # The gauges the child read with its answer (residency's).
        self._read: dict[GaugeQuery, StoredMessages] = {
            query_of(entry["stored"][0]): stored_of(entry["stored"][1])
            for entry in self._projects.values() if entry.get("stored") is not None
        }
        self._target = target
        self._child = child  # still there for the gauges a plan asks for afterwards
        self._metrics_backend: Any = None  # opened only when the child is gone

    def _entry(self, project: str) -> dict[str, Any]:
        entry = self._projects.get(project)
        if entry is None:  # a bug: the final list named every project plan reads
            raise BackendError(f"projects/{project} was not read ahead")
        return entry

    def list_topics(self, project: str) -> list[ObservedTopic]:
        entry = self._entry(project)
        if "topics_error" in entry:
            raise error_of(entry["topics_error"])
        return [ObservedTopic.from_row(row) for row in entry["topics"]]

    def effective_policy(self, project: str) -> OrgInputs:
        entry = self._entry(project)
        if "org_error" in entry:
            raise error_of(entry["org_error"])
        return org_of(entry["org"])

    def ancestry(self, project: str) -> Ancestry:
        row = self._entry(project).get("ancestry")
        if row is None:  # residency's read-ahead reads none
            return Ancestry(unavailable=f"the ancestry of projects/{project} was not read ahead")
        return ancestry_of(row)

    def custom_constraints(self, project: str, organization: str | None) -> CustomConstraints:
        """Those the child read for the organization its ancestry ends at (observe
        asks for that one, from the same ancestry)."""
        entry = self._entry(project)
        if "custom_error" in entry:
            raise error_of(entry["custom_error"])
        if "custom" not in entry or self.ancestry(project).organization != organization:
            # a bug: observe asks for the organization the ancestry named
            raise BackendError(
                f"the custom constraints of projects/{project} were not read ahead "
                f"for {organization or 'no organization'}"
            )
        return custom_of(entry["custom"])

    def list_subscriptions(self, project: str) -> SubscriptionListing:
        return subscriptions_of(self._entry(project).get("subscriptions"))

    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:
        """Those the child read with its answer; the others asked of the child, in one
        request, and only if it is gone read through a Monitoring client of this
        process."""
        asked = [q for q in queries if q not in self._read]
        if asked:
            child = self._child
            found = None if child is None else child.stored(asked)
            if found is None:
                found = self._read_here(asked)
            self._read.update(zip(asked, found, strict=True))
        return [self._read[q] for q in queries]

    def tag_bindings(self, names: Sequence[str]) -> dict[str, frozenset[str] | str]:
        """Read in this process, through a Resource Manager client of its own (the
        child reads none: few topics declare tags)."""
        if self._target is None:
            return dict.fromkeys(names, "no target to read tag bindings from")
        from reconciler.backends.connect import open_tag_bindings  # google-cloud: on need

        backend = open_tag_bindings(self._target)
        try:
            return backend.tag_bindings(names)
        finally:
            backend.close()

    def _read_here(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:
        if self._target is None:
            return [StoredMessages({}, {}, unavailable="no target to read metrics from")
                    for _ in queries]
        if self._metrics_backend is None:
            from reconciler.backends.connect import open_metrics  # google-cloud: on need

            self._metrics_backend = open_metrics(self._target)
        stored: list[StoredMessages] = self._metrics_backend.stored(queries)
        return stored

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
        if self._metrics_backend is not None:
            self._metrics_backend.close()


def _read_frame(
    proc: subprocess.Popen[bytes], deadline: float, buffer: bytearray
) -> bytes | int | None:
    """One framed answer from the child's stdout; None when `deadline`
    (time.monotonic) passes first, 0 at end of file (it has stopped). `buffer` holds
    what was read beyond the frame (the next answers: gauge requests are answered one
    after another, so one read may bring several) for the next call. Its stdin stays
    open until `close`: end of file there tells the child to leave
    (plan/readahead_child.py)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if len(buffer) >= FRAME_HEADER:
                (size,) = struct.unpack(">Q", bytes(buffer[:FRAME_HEADER]))
                end = FRAME_HEADER + size
                if len(buffer) >= end:
                    with memoryview(buffer) as view:  # one copy of a large answer
                        frame = bytes(view[FRAME_HEADER:end])
                    del buffer[:end]
                    return frame
                wanted = end - len(buffer)
            else:
                wanted = FRAME_HEADER - len(buffer)
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, max(1 << 20, wanted))
            if not chunk:
                return 0
            buffer += chunk
