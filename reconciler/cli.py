"""The `reconcile` entry point and the single boundary that maps errors to exit codes.

Every command line goes through the click group (reconciler/clickapp.py), `validate`'s
too: one parser, and `--help` is the source of every option. Messages are written
through the output boundary (reconciler/commands/output.py), escaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any, NoReturn

from reconciler.commands import output
from reconciler.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    ReconcileError,
    Terminated,
)
from reconciler.perf import gc_paused, teardown_skipped


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point, and the only place that exits: a verb returns its exit code (0 ok,
    2 changes with --detailed-exitcode); every user-caused error becomes a message and
    1 (click usage errors 2), Ctrl-C 130, SIGTERM 143."""
    args = sys.argv[1:] if argv is None else list(argv)
    previous = _terminate_on_sigterm()
    try:
        _main(args)
    finally:
        output.release_stdout()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminate_on_sigterm() -> Any:
    """SIGTERM raises Terminated in the main thread, as Ctrl-C raises KeyboardInterrupt,
    so that what a command opened is closed on the way out (a plan's read-ahead process
    first of all) and it exits 143 with a word; apply's own handler replaces this one
    while it executes (apply/interrupt.py). The previous handler, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, terminate)


def _main(args: list[str]) -> NoReturn:
    output.forget_failure_document()
    try:
        with gc_paused():  # from click's import on (reconciler/perf.py)
            from reconciler.clickapp import run_click

            code: Any = run_click(args)
    except output.OutputFailed as exc:
        if exc.broken_pipe:  # a closed pipe ends quietly, as `head` expects
            _exit(exc.exit_code)
        output.last_word(f"Error: {exc}")
        _exit(exc.exit_code, exc)
    except ReconcileError as exc:
        output.last_word(f"Error: {exc}")
        _exit(exc.exit_code, exc)
    except KeyboardInterrupt as exc:
        output.last_word("Interrupted.")
        _exit(EXIT_INTERRUPTED, exc)
    except Terminated as exc:
        output.last_word("Terminated (SIGTERM).")
        _exit(EXIT_TERMINATED, exc)
    except BrokenPipeError:
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the one place that catches everything
        output.last_word(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in reconcile, not in your input; please report it "
            "(set RECONCILE_DEBUG=1 for a traceback)."
        )
        if os.environ.get("RECONCILE_DEBUG"):
            import traceback  # only for a bug's traceback

            traceback.print_exc()
        _exit(EXIT_ERROR, exc)
    _exit(code if isinstance(code, int) else 0)


def _exit(code: int, failure: BaseException | None = None) -> NoReturn:
    """Exit with `code`; after a failure, first the document the command promised
    whatever happens (`apply --format json`'s outcome: commands/output.py); without
    the interpreter's teardown when the command asked (reconciler/perf.py)."""
    if failure is not None:
        output.failure_document(failure, code)
    if teardown_skipped():
        logging = sys.modules.get("logging")  # flushed only where something imported it
        if logging is not None:
            logging.shutdown()
        output.release_stdout()
        with contextlib.suppress(OSError):
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
