"""What `reconcile apply` shows while and after it runs, rendered from apply's values
(reconciler/apply/events.py, reconciler/apply/result.py): a redrawn bar on a terminal,
one stable line per topic otherwise (CI logs and pipes must stay greppable and never
see carriage returns), and the summary printed whatever happened.

    line_for(result) -> str        one topic's outcome
    summary_text(result) -> str    counts, every failure with its reason, what was not
                                   attempted, and whether a rerun helps
    progress_for(writer, total)    the event sink that shows progress (line or bar)

A sink never raises into the executor's threads: a stream that cannot be written (a
full disk) is kept as `lost` and nothing more is written to it, so the apply goes on
and its outcome stays true; the command says so afterwards (commands/apply.py).

Names and the service's error text are data: every piece is escaped here
(render/escape.py), and again by the output boundary that writes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from reconciler.apply.events import ApplyEvent, Notice, TopicFinished
from reconciler.apply.result import TopicResult, TopicResults
from reconciler.commands.output import OutputFailed, Writer
from reconciler.render import escape

BAR_THRESHOLD = 5  # more topics than this on a terminal get a bar instead of lines
BAR_WIDTH = 30
VERB = {"create": "created", "update": "updated", "delete": "deleted"}


def esc(value: object) -> str:
    """One piece of data on one line: a line break in a service message cannot start
    a line of its own (backslashes kept as they are, as in every message)."""
    return escape.text(value, backslash=False)


def line_for(result: TopicResult) -> str:
    address = esc(result.address)
    if result.status == "applied":
        text = f"{address}: {VERB.get(result.action, result.action)}"
        if result.update_mask:
            text += f" ({esc(', '.join(result.update_mask))})"
        if result.attempts > 1:
            text += f" after {result.attempts} attempts"
        if result.notes:
            text += f"; {esc('; '.join(result.notes))}"
        return text
    if result.status == "failed":
        return f"{address}: {result.action} FAILED: {esc(result.error)}"
    return f"{address}: {result.action} not attempted"


def summary_text(result: TopicResults, saved: bool = False) -> str:
    """The closing report: counts, then every failure with its reason, then what was
    not attempted (so that a rerun's scope is obvious). `saved`: a PLANFILE was applied,
    which applies once, so the way to converge is a new plan."""
    counts = result.counts()
    applied = result.by_status("applied")
    per_action = {
        a: sum(1 for r in applied if r.action == a) for a in ("create", "update", "delete")
    }
    head = "Apply interrupted" if result.interrupted else "Apply complete"
    lines = [
        f"{head}: {counts['applied']} applied ({per_action['create']} created, "
        f"{per_action['update']} updated, {per_action['delete']} deleted), "
        f"{counts['failed']} failed, {counts['not-attempted']} not attempted, "
        f"{counts['unchanged']} unchanged."
    ]
    failed = result.by_status("failed")
    if failed:
        lines.append("Failed:")
        lines += [f"  {esc(r.address)} ({r.action}): {esc(r.error)}" for r in failed]
    skipped = result.by_status("not-attempted")
    if skipped:
        lines.append("Not attempted:")
        lines += [f"  {esc(r.address)} ({r.action})" for r in skipped]
    if (skipped or any(r.rerun_helps for r in failed)) and saved:
        lines.append(
            "Make a new plan (`reconcile plan --out PLANFILE`) and apply it to converge the "
            "rest: a saved plan applies once; applied changes are kept."
        )
    elif skipped or any(r.rerun_helps for r in failed):
        lines.append("Run `reconcile apply` again to converge the rest; applied changes are kept.")
    elif failed:
        lines.append("Running apply again will not fix these failures (see each reason).")
    return "\n".join(lines) + "\n"


class _Sink:
    """What both sinks share: one lock, and the write failure that muted them."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.lost: OutputFailed | None = None
        self._lock = threading.Lock()

    def _show(self, *writes: Callable[[], None]) -> None:
        """Each write in turn, under the lock held; after a failure, none."""
        for write in writes:
            if self.lost is not None:
                return
            try:
                write()
            except OutputFailed as exc:
                self.lost = exc


class LineProgress(_Sink):
    """One line per finished topic, written at once (a killed run still logged it)."""

    def __call__(self, event: ApplyEvent) -> None:
        text = line_for(event.result) if isinstance(event, TopicFinished) else event.text
        with self._lock:
            self._show(lambda: self.writer.line(text))

    def close(self) -> None:
        pass


class BarProgress(_Sink):
    """A single redrawn line; failures and notices are printed above it as they come."""

    def __init__(self, writer: Writer, total: int) -> None:
        super().__init__(writer)
        self.total = max(total, 1)
        self.done = 0
        self.failed = 0
        with self._lock:
            self._show(self._draw)

    def _draw(self) -> None:
        filled = BAR_WIDTH * self.done // self.total
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        fail = f", {self.failed} failed" if self.failed else ""
        self.writer.redraw(f"[{bar}] {self.done}/{self.total}{fail}")

    def __call__(self, event: ApplyEvent) -> None:
        with self._lock:
            if isinstance(event, Notice):
                self._show(lambda: self.writer.above(event.text), self._draw)
                return
            self.done += 1
            if event.result.status == "failed":
                self.failed += 1
                self._show(lambda: self.writer.above(line_for(event.result)))
            self._show(self._draw)

    def close(self) -> None:
        with self._lock:
            self._show(self.writer.end_line)


Progress = LineProgress | BarProgress


def progress_for(writer: Writer, total: int, *, is_tty: bool | None = None) -> Progress:
    """A bar on a terminal for more than a handful of topics, else lines."""
    tty = writer.is_terminal() if is_tty is None else is_tty
    if tty and total > BAR_THRESHOLD:
        return BarProgress(writer, total)
    return LineProgress(writer)
