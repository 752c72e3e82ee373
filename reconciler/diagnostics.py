"""Diagnostics are collected, never raised one by one: every problem in every file is
reported in one run, each pointing at the key or value that caused it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem, located as precisely as the input allows (line/col are 1-based; 0 =
    unknown, for problems that belong to a topic or project rather than a file)."""

    file: str
    line: int
    col: int
    severity: Severity
    code: str
    message: str
    hint: str | None = field(default=None, compare=False)
    # The topic (projects/P/topics/T) the problem is about, when it is about one: its
    # message names it, and the text reporter groups a finding that repeats across
    # topics by it (render/grouping.py). None for a file, a value or a project.
    topic: str | None = field(default=None, compare=False)

    def render(self, escape: Callable[[str], str] = str) -> str:
        """`file:line:col: severity[code]: message (hint)`; `escape` makes each piece of
        data safe for the output it goes to (render/diagnostics.py for terminals)."""
        where = escape(self.file)
        if self.line:
            where = f"{where}:{self.line}:{self.col or 1}"
        text = f"{where}: {self.severity.value}[{escape(self.code)}]: {escape(self.message)}"
        if self.hint:
            text += f" ({escape(self.hint)})"
        return text

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


@dataclass
class Diagnostics:
    """An ordered, de-duplicated collection; the one place that knows what 'failed' means."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(
        self, file: str, line: int, col: int, code: str, message: str, hint: str | None = None
    ) -> None:
        self.items.append(Diagnostic(file, line, col, Severity.ERROR, code, message, hint))

    def warning(
        self, file: str, line: int, col: int, code: str, message: str, hint: str | None = None
    ) -> None:
        self.items.append(Diagnostic(file, line, col, Severity.WARNING, code, message, hint))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.items)

    def has_errors_since(self, start: int) -> bool:
        """Whether an error was added after the first `start` items: what one topic's
        checks found, asked in time of that topic's findings only (counting every
        item for every topic made a tree where each topic has a warning quadratic)."""
        return any(d.severity is Severity.ERROR for d in self.items[start:])

    def sorted(self) -> list[Diagnostic]:
        seen: set[Diagnostic] = set()
        unique = []
        for d in self.items:
            if d not in seen:
                seen.add(d)
                unique.append(d)
        return sorted(unique, key=lambda d: (d.file, d.line, d.col, d.code, d.message))

    def counts(self) -> tuple[int, int]:
        errors = sum(1 for d in self.items if d.severity is Severity.ERROR)
        return errors, len(self.items) - errors
