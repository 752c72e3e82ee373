"""The `reconcile` entry point and the single boundary that maps errors to exit codes.

`reconcile validate` with ordinary options runs without importing click (pre-commit
and CI start it for every change: the import is a sixth of its run); every other
command line, help and usage errors included, goes through the click group in
`reconciler.clickapp`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from reconciler.errors import EXIT_ERROR, EXIT_INTERRUPTED, ReconcileError


def version() -> str:
    """The installed distribution's version; the package's own when run from a source
    tree that is not installed (e.g. `python -m reconciler` from a checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("reconcile")
    except PackageNotFoundError:
        from reconciler import __version__

        return __version__


def __getattr__(name: str) -> Any:
    """`reconciler.cli.cli` (the click group) is imported only when asked for."""
    if name == "cli":
        from reconciler.clickapp import cli

        return cli
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    """Entry point, and the only place that exits: a verb returns its exit code (0 ok,
    2 changes with --detailed-exitcode); every user-caused error becomes a message and
    1 (click usage errors 2), Ctrl-C 130."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        from reconciler.commands import validate_run

        options = validate_run.parse(args)
        if options is not None:
            code: Any = validate_run.run(options)
        else:
            from reconciler.clickapp import run_click

            code = run_click(args)
    except ReconcileError as exc:
        _say(f"Error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _say("Interrupted.")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the one place that catches everything
        _say(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in reconcile, not in your input; please report it "
            "(set RECONCILE_DEBUG=1 for a traceback)."
        )
        if os.environ.get("RECONCILE_DEBUG"):
            import traceback

            traceback.print_exc()
        sys.exit(EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)


def _say(message: str) -> None:
    """Messages quote file names and service text: no control character reaches the
    terminal (render/escape.py); the message's own line breaks stay."""
    from reconciler.render.escape import text as inert

    lines = message.split("\n")
    sys.stderr.write("\n".join(inert(x, backslash=False) for x in lines) + "\n")
    sys.stderr.flush()
