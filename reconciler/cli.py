"""The `reconcile` entry point and the single boundary that maps errors to exit codes.

Every command line goes through the click group (reconciler/clickapp.py), `validate`'s
too: one parser, and `--help` is the source of every option. Messages are written
through the output boundary (reconciler/commands/output.py), escaped.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

from reconciler.commands import output
from reconciler.errors import EXIT_ERROR, EXIT_INTERRUPTED, ReconcileError
from reconciler.perf import gc_paused


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point, and the only place that exits: a verb returns its exit code (0 ok,
    2 changes with --detailed-exitcode); every user-caused error becomes a message and
    1 (click usage errors 2), Ctrl-C 130."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        with gc_paused():  # from click's import on (reconciler/perf.py)
            from reconciler.clickapp import run_click

            code: Any = run_click(args)
    except ReconcileError as exc:
        output.stderr().line(f"Error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        output.stderr().line("Interrupted.")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the one place that catches everything
        output.stderr().line(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in reconcile, not in your input; please report it "
            "(set RECONCILE_DEBUG=1 for a traceback)."
        )
        if os.environ.get("RECONCILE_DEBUG"):
            import traceback  # only for a bug's traceback

            traceback.print_exc()
        sys.exit(EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
