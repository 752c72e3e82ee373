"""The suite's one way to run `reconcile`, and its one result type.

    reconcile(*args, input=None, terminal=False)
                                        in-process, through `reconciler.cli.main` and
                                        its error boundary (what nearly every test uses;
                                        the `run_cli` fixture is this); `terminal`: stdout
                                        says it is a terminal (colour, progress bar)
    reconcile_process(*args, cwd, ...)  a real `python -m reconciler` process, for the
                                        tests that need one (a clean environment, a
                                        user id, a fresh interpreter's imports)
    start_reconcile(*args, cwd, ...)    the same process left running, for signals;
                                        `.finish()` gives the same `CliResult`

All three give what a user would see: the exit code, stdout and stderr.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

# A guard against a hung child, not a latency expectation: tests assert exit codes and
# messages, never durations.
PROCESS_GUARD_SECONDS = 300

# What a test's environment must not leak into a `reconcile` process it starts: an
# emulator address, credentials, endpoint overrides, read-ahead settings.
LEAKY = ("PUBSUB_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS")


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout then stderr, for a failure message or a check on either stream."""
        return self.stdout + self.stderr


class _Stream(io.TextIOWrapper):
    """Like the stream of a pipe (UTF-8, a `buffer`), or of a terminal if told so."""

    def __init__(self, data: str = "", terminal: bool = False) -> None:
        super().__init__(io.BytesIO(data.encode()), encoding="utf-8", newline="")
        self._terminal = terminal

    def isatty(self) -> bool:
        return self._terminal


def _text_stream(data: str = "", terminal: bool = False) -> TextIO:
    return _Stream(data, terminal)


@contextmanager
def _swapped_streams(input: str | None, terminal: bool) -> Iterator[tuple[TextIO, TextIO]]:
    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = _text_stream(terminal=terminal), _text_stream()
    sys.stdin = _text_stream(input or "")
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def _read(stream: TextIO) -> str:
    stream.flush()
    raw = stream.buffer  # type: ignore[attr-defined]
    return bytes(raw.getvalue()).decode()


def reconcile(*args: str, input: str | None = None, terminal: bool = False) -> CliResult:
    """`reconcile ARGS...` in-process; `input` is stdin (never a terminal here);
    `terminal`: stdout is a terminal, as when a user runs it in one."""
    from reconciler.cli import main

    with _swapped_streams(input, terminal) as (out, err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:  # main always exits; a return is a bug in the entry point
            raise AssertionError("reconciler.cli.main returned instead of exiting")
        stdout, stderr = _read(out), _read(err)
    return CliResult(code, stdout, stderr)


def clean_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would point a child elsewhere (see
    LEAKY, and every RECONCILE_ variable), plus `env`."""
    base = {
        k: v for k, v in os.environ.items() if k not in LEAKY and not k.startswith("RECONCILE_")
    }
    base.update(env or {})
    return base


class ReconcileProcess:
    """A running `python -m reconciler ARGS...`; `proc` is the Popen (for signals and
    reading stdout line by line)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def finish(self, timeout: float = PROCESS_GUARD_SECONDS) -> CliResult:
        """Wait for the exit; what it printed. A signal's death is its negative number,
        as Popen reports it."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise
        return CliResult(self.proc.returncode, out, err)


def start_reconcile(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    wrapper: Sequence[str] = (),
) -> ReconcileProcess:
    """Start `reconcile ARGS...` as its own process in `cwd`, in a clean environment
    (see `clean_env`) plus `env`, unbuffered so that its lines arrive as printed;
    `wrapper` runs it under another command (e.g. setpriv to drop privileges)."""
    proc = subprocess.Popen(
        [*wrapper, sys.executable, "-m", "reconciler", *args],
        cwd=cwd,
        env=clean_env({"PYTHONUNBUFFERED": "1", **(env or {})}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return ReconcileProcess(proc)


def reconcile_process(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    wrapper: Sequence[str] = (),
    timeout: float = PROCESS_GUARD_SECONDS,
) -> CliResult:
    """`reconcile ARGS...` as its own process, run to its end (see `start_reconcile`)."""
    return start_reconcile(*args, cwd=cwd, env=env, wrapper=wrapper).finish(timeout)
