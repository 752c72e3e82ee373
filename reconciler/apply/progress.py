"""Progress while applying: a redrawn bar on a terminal, one stable line per topic
otherwise (CI logs and pipes must stay greppable and never see carriage returns)."""

from __future__ import annotations

import threading
from typing import Protocol, TextIO

from reconciler.apply.result import TopicResult

BAR_THRESHOLD = 5  # more topics than this on a terminal get a bar instead of lines
BAR_WIDTH = 30


class Reporter(Protocol):
    def finished(self, result: TopicResult) -> None: ...

    def message(self, text: str) -> None: ...

    def close(self) -> None: ...


def line_for(result: TopicResult) -> str:
    verb = {"create": "created", "update": "updated", "delete": "deleted"}.get(
        result.action, result.action
    )
    if result.status == "applied":
        text = f"{result.address}: {verb}"
        if result.update_mask:
            text += f" ({', '.join(result.update_mask)})"
        if result.attempts > 1:
            text += f" after {result.attempts} attempts"
        if result.notes:
            text += f"; {'; '.join(result.notes)}"
        return text
    if result.status == "failed":
        return f"{result.address}: {result.action} FAILED: {result.error}"
    return f"{result.address}: {result.action} not attempted"


class LineReporter:
    """One line per finished topic, flushed at once (a killed run still logged it)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def finished(self, result: TopicResult) -> None:
        with self._lock:
            self.stream.write(line_for(result) + "\n")
            self.stream.flush()

    def message(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        pass


class BarReporter:
    """A single redrawn line; failures are printed above it as they happen."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.done = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._draw()

    def _draw(self) -> None:
        filled = BAR_WIDTH * self.done // self.total
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        fail = f", {self.failed} failed" if self.failed else ""
        self.stream.write(f"\r[{bar}] {self.done}/{self.total}{fail}")
        self.stream.flush()

    def _above(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text + "\n")
        self._draw()

    def finished(self, result: TopicResult) -> None:
        with self._lock:
            self.done += 1
            if result.status == "failed":
                self.failed += 1
                self._above(line_for(result))
            else:
                self._draw()

    def message(self, text: str) -> None:
        with self._lock:
            self._above(text)

    def close(self) -> None:
        with self._lock:
            self.stream.write("\n")
            self.stream.flush()


class NullReporter:
    def finished(self, result: TopicResult) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def make_reporter(stream: TextIO, total: int, *, is_tty: bool | None = None) -> Reporter:
    tty = stream.isatty() if is_tty is None else is_tty
    if tty and total > BAR_THRESHOLD:
        return BarReporter(stream, total)
    return LineReporter(stream)
