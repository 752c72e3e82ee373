"""One document's diagnostics, each placed at the line and column of the path it is
about; quiet about values whose shape was already reported (`Located.invalid`)."""

from __future__ import annotations

from typing import Any

from reconciler.diagnostics import Diagnostics
from reconciler.spec.tree import Located
from reconciler.spec.values import value_at
from reconciler.yamlio import PathKey


class PositionedDiagnostics:
    """Adds a document's errors and warnings to `diags`, positioned by their path."""

    def __init__(self, located: Located[Any], diags: Diagnostics) -> None:
        self.located = located
        self.doc = located.doc
        self.diags = diags

    def silent(self, path: PathKey) -> bool:
        return self.located.is_invalid(path)

    def error(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        if self.silent(path):
            return
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.error(self.doc.file, m.line, m.col, code, message)

    def warning(self, path: PathKey, code: str, message: str, *, key: bool = False) -> None:
        if self.silent(path):
            return
        m = self.doc.key_mark(path) if key else self.doc.mark_for(path)
        self.diags.warning(self.doc.file, m.line, m.col, code, message)

    def as_written(self, path: PathKey, fallback: str) -> str:
        """The value at `path` as the file spells it (`0.2000001`, not `0.2`)."""
        raw = self.doc.written(path)
        if raw is None:
            value = value_at(self.doc.data_for_message(), path)
            raw = value if isinstance(value, str) else None
        if raw is not None:
            return raw if len(raw) <= 40 else raw[:20] + "..." + raw[-8:]
        return fallback
