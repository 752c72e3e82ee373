"""A YAML document as the spec checks see it: plain data, and positions that are
recorded up front (small files, snapshots) or recovered from the file on demand (large
trees, where almost no value ever needs one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    col: int  # 1-based


class Document:
    """One YAML document: plain data plus where each key and value sits in the file.

    `data` is what was loaded, an attribute that never reads anything. Positions (and
    the non-string scalars as written) serve only diagnostics, and a large tree has
    hundreds of thousands of values and almost no problems: a document read with
    `positions=False` records none, and the first diagnostic that asks for one
    (`positions()`, `mark_for`, `written`) reads its file again with positions, once
    per file (see `Source`). A finding at a member of `spec` that nearly every topic
    declaring it has (an AI Inference transform's "plan decides") reads nothing
    again: where such members sit is kept from the first read (`layout`, shared by
    documents laid out alike). `release()` drops the data once it has been validated (`data` is then
    None); `data_for_message()` gets it back from that same reading of the file, for a
    message that must place or quote a value."""

    __slots__ = (
        "_marks", "_released", "_source", "data", "file", "index", "layout", "problems", "start",
    )

    def __init__(
        self,
        file: str,
        index: int,
        start: Mark,
        data: Any,
        *,
        source: Source | None = None,
    ) -> None:
        self.file = file
        self.index = index
        self.start = start
        # Problems that do not stop reading the document: (code, message, line, col).
        self.problems: list[tuple[str, str, int, int]] = _NO_PROBLEMS  # shared until one
        self.data = data
        self._released = False
        self._marks: _Marks | None = None if source is not None else _Marks()
        self._source = source
        # Where the members of `spec` sit, for a document read without positions
        # (SpecLayout); None: not recorded (read with positions, or `spec` no mapping).
        self.layout: SpecLayout | None = None

    def release(self) -> None:
        """Drop the data (a document loaded without positions: `data_for_message()`
        reads it again from the file, with them, if a message needs it)."""
        if self._source is not None:
            self.data = None
            self._released = True

    def positions(self) -> _Marks:
        """Where each key and value sits: for a document loaded without positions, the
        file is read again on the first call (once per file, `Source`); none when it
        changed or vanished since."""
        if self._marks is None:
            assert self._source is not None
            self._source.recover()
            if self._marks is None:  # the file changed or vanished since: no positions
                self._marks = _Marks()
        assert self._marks is not None
        return self._marks

    def data_for_message(self) -> Any:
        """The data, for a diagnostic that places or quotes a value: after `release()`,
        as the reading of the file with positions gave it back (None if the file changed
        into something unreadable)."""
        if self._released:
            self.positions()
        return self.data

    def written(self, path: PathKey) -> str | None:
        """The non-string scalar at `path` as written (`0.2000001`, `on`), for messages
        that quote it (`positions()`)."""
        return self.positions().raw.get(path)

    def mark_for(self, path: PathKey, *, prefer_key: bool = False) -> Mark:
        """The best position for a problem at `path`: the value, else the key, else the
        nearest enclosing node, else the document start."""
        if self._marks is None and self.layout is not None and len(path) == 2:
            found = self.layout.mark(self.start.line, path, prefer_key)
            if found is not None:
                return found
        marks = self.positions()
        probe = tuple(path)
        while True:
            first, second = (
                (marks.keys, marks.values) if prefer_key else (marks.values, marks.keys)
            )
            if probe in first:
                return Mark(*first[probe])
            if probe in second:
                return Mark(*second[probe])
            if not probe:
                return self.start
            probe = probe[:-1]
            prefer_key = False

    def key_mark(self, path: PathKey) -> Mark:
        return self.mark_for(path, prefer_key=True)


class SpecLayout:
    """Where some members of a document's `spec` mapping sit (those a tree's topics
    nearly all have a finding at: yamlio.load_documents `layout_of`): each one's key
    and value, lines counted from the document's start (so that documents laid out
    alike, as a tree's topics mostly are, share one). For a path `("spec", member)`
    of those it gives what the full positions would (`Document.mark_for`); for any
    other path nothing, and the file is read again."""

    __slots__ = ("names", "places")

    def __init__(self, names: tuple[str, ...], places: tuple[int, ...]) -> None:
        self.names = names  # the members kept, in the mapping's order
        self.places = places  # per member: key line, key col, value line, value col

    def mark(self, start_line: int, path: PathKey, prefer_key: bool) -> Mark | None:
        if path[0] != "spec":
            return None
        try:
            at = 4 * self.names.index(path[1])
        except ValueError:
            return None
        if not prefer_key:
            at += 2
        return Mark(start_line + self.places[at], self.places[at + 1])


_NO_PROBLEMS: list[Any] = []  # never appended to (see _Converter._key)


@dataclass
class _Marks:
    """(line, col) pairs, made into Marks only when a diagnostic needs one."""

    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    raw: dict[PathKey, str] = field(default_factory=dict)


class Source:
    """The file position-less documents came from: re-read with positions (by `reread`,
    the loader with positions on), once, when the first of its documents needs them."""

    __slots__ = ("documents", "reread")

    def __init__(self, reread: Callable[[], list[Document]]) -> None:
        self.reread = reread
        self.documents: list[Document] = []

    def recover(self) -> None:
        again = self.reread()  # [] when the file changed into something unreadable
        for doc, full in zip(self.documents, again, strict=False):
            doc._marks = full._marks
            if doc._released:
                doc.data, doc._released = full.data, False
        self.documents = []  # every document now has what it can get


class YamlProblem(Exception):
    """A file cannot be read as YAML; carries the position and a stable code."""

    def __init__(self, code: str, message: str, mark: Mark | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.mark = mark or Mark(1, 1)


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


def _pair(node: yaml.Node) -> tuple[int, int]:
    mark = node.start_mark
    return (mark.line + 1, mark.column + 1)
