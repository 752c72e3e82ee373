"""The SARIF log `--format sarif` promises, however the command ends (validate, plan,
show).

Code scanning reads the file the log is written to: an empty one (a command that
ended in an error before its log was printed) is no log at all, and the upload step
fails with nothing to say why. So a command asked for SARIF arms a `PromisedLog`
before it starts: should it end in an error, an interruption or a bug before the log
was printed, the CLI's boundary (reconciler/cli.py, through `output.on_failure`)
prints a log of a failed run instead, with the findings known by then (each written
on its own: one that cannot be written loses only itself) and the error as its
notification (render/sarif.py's `failed_log`). The exit code and the message on
stderr stay what the error makes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from reconciler.commands import output
from reconciler.diagnostics import Diagnostic
from reconciler.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, ReconcileError
from reconciler.render import diagnostics as report


class PromisedLog:
    """Armed for `fmt` "sarif" only; `findings` are what the log holds should the
    command fail (the command sets them as it learns them)."""

    def __init__(self, fmt: str) -> None:
        self.findings: Sequence[Diagnostic] = ()
        self._armed = fmt == "sarif"
        if self._armed:
            output.on_failure(self._failed)

    def delivered(self) -> None:
        """The log is printed: nothing more to print, whatever happens next."""
        if self._armed:
            output.forget_failure_document()
            self._armed = False

    def _failed(self, failure: BaseException, exit_code: int) -> None:
        if isinstance(failure, output.OutputFailed) and failure.stream == "stdout":
            return  # stdout is what failed: nowhere to print it
        with contextlib.suppress(output.OutputFailed):
            output.stdout().data(report.failed_sarif(self.findings, _why(failure, exit_code)))


def _why(failure: BaseException, exit_code: int) -> str:
    if exit_code == EXIT_INTERRUPTED:
        return "reconcile was interrupted before the analysis was complete"
    if exit_code == EXIT_TERMINATED:
        return "reconcile was terminated (SIGTERM) before the analysis was complete"
    if isinstance(failure, ReconcileError):
        return str(failure)
    return (
        f"internal error: {type(failure).__name__}: {failure} (a bug in reconcile, "
        "not in the input; please report it)"
    )
