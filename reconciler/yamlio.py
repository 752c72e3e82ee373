"""Safe, bounded YAML loading that keeps the line and column of every key and value.

PyYAML's C composer builds a node graph (no Python objects are ever constructed from
tags), and we convert nodes to plain data ourselves, so that aliases cannot expand
without bound and every value keeps its position for diagnostics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reconciler.fileio import FileProblem
from reconciler.fileio import read_text as _read_text
from reconciler.yamltext import MergeError, check_flow_depth, merge_pairs, tab_at

try:  # libyaml is much faster; the pure loader gives the same nodes.
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_STR_TAG = "tag:yaml.org,2002:str"
# Plain scalars starting with a letter resolve to something other than a string only
# when they are one of these exact words (YAML 1.1 booleans and null).
_TYPED_WORDS = frozenset(
    word
    for base in ("yes", "no", "true", "false", "on", "off", "null")
    for word in (base, base.capitalize(), base.upper())
)


_FLOAT_TAG = "tag:yaml.org,2002:float"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# JSON / YAML 1.2 numbers that YAML 1.1 reads as text (`1e-3` has no dot): the JSON
# Schema calls them numbers, so the loader does too.
_JSON_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][-+]?[0-9]+")


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Skips the regex resolver for plain scalars that can only be strings (most of a
    spec), which is where a large tree spends its time."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if (
            kind is yaml.ScalarNode
            and implicit[0]
            and value
            and value[0].isalpha()
            and value not in _TYPED_WORDS
        ):
            return _STR_TAG
        tag = str(super().resolve(kind, value, implicit))
        exponent = kind is yaml.ScalarNode and ("e" in value or "E" in value)
        if tag == _STR_TAG and implicit[0] and exponent and _JSON_FLOAT.fullmatch(value):
            return _FLOAT_TAG
        return tag

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES_PER_FILE = 2_000_000
MAX_DEPTH = 64
# Aliases may repeat a node, but a document whose aliases multiply its size more than
# this (beyond a small allowance) is an expansion bomb, not a spec.
MAX_ALIAS_EXPANSION = 10
ALIAS_ALLOWANCE = 10_000

PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    col: int  # 1-based


@dataclass
class Document:
    """One YAML document: plain data plus where each key and value sits in the file."""

    file: str
    index: int
    start: Mark
    data: Any
    # (line, col) pairs, made into Marks only when a diagnostic needs one: a large tree
    # has hundreds of thousands of values and almost no problems.
    key_marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    value_marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    # Non-string scalars as written (`0.2000001`, `on`), for messages that quote them.
    raw: dict[PathKey, str] = field(default_factory=dict)
    # Problems that do not stop reading the document: (code, message, line, col).
    problems: list[tuple[str, str, int, int]] = field(default_factory=list)

    def mark_for(self, path: PathKey, *, prefer_key: bool = False) -> Mark:
        """The best position for a problem at `path`: the value, else the key, else the
        nearest enclosing node, else the document start."""
        probe = tuple(path)
        while True:
            first, second = (
                (self.key_marks, self.value_marks)
                if prefer_key
                else (self.value_marks, self.key_marks)
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


@dataclass
class Budget:
    """Work spent on one file: every node converted and every key a `<<` merge copies
    counts, against a budget proportional to the nodes written (aliases and merges may
    repeat a node, not multiply the file)."""

    spent: int = 0
    distinct: set[int] = field(default_factory=set)

    def charge(self, node: yaml.Node, units: int = 1) -> None:
        self.spent += units
        self.distinct.add(id(node))
        if self.spent > MAX_NODES_PER_FILE or self.spent > (
            MAX_ALIAS_EXPANSION * len(self.distinct) + ALIAS_ALLOWANCE
        ):
            raise YamlProblem(
                "yaml-too-large",
                f"the document expands to {self.spent:,}+ values from "
                f"{len(self.distinct):,} written ones (an alias-expansion bomb, or a "
                "merge-key one?); remove the aliases and `<<` merges or split the file",
                _mark(node),
            )


class _Converter:
    def __init__(self, doc: Document, budget: Budget) -> None:
        self.doc = doc
        self.budget = budget
        self.merged: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}

    def convert(self, node: yaml.Node, path: PathKey, depth: int) -> Any:
        budget = self.budget
        budget.spent += 1
        budget.distinct.add(id(node))
        if budget.spent > ALIAS_ALLOWANCE:
            budget.charge(node, 0)  # checks the limits (cheap below the allowance)
        if depth > MAX_DEPTH:
            raise YamlProblem(
                "yaml-too-deep",
                f"the document nests deeper than {MAX_DEPTH} levels; no spec needs that",
                _mark(node),
            )
        if path not in self.doc.value_marks:
            self.doc.value_marks[path] = _pair(node)
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in (
            "tag:yaml.org,2002:map",
            "tag:yaml.org,2002:seq",
        ):
            raise YamlProblem(
                "yaml-tag",
                f"the YAML tag {node.tag!r} is not allowed in a spec; remove it",
                _mark(node),
            )
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [
                self.convert(child, (*path, i), depth + 1) for i, child in enumerate(node.value)
            ]
        return self._scalar(node)

    def _mapping(self, node: yaml.MappingNode, path: PathKey, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in self._flatten_merge(node, depth):
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlProblem(
                    "yaml-key", "a mapping key must be a plain string", _mark(key_node)
                )
            key = self._key(key_node)
            if key in result:
                raise YamlProblem(
                    "yaml-duplicate-key",
                    f"key {key!r} appears twice in the same mapping; keep one",
                    _mark(key_node),
                )
            child = (*path, key)
            self.doc.key_marks[child] = _pair(key_node)
            result[key] = self.convert(value_node, child, depth + 1)
            if value_node.tag not in (_STR_TAG, "tag:yaml.org,2002:null") and isinstance(
                value_node, yaml.ScalarNode
            ):
                self.doc.raw[child] = value_node.value
        return result

    def _key(self, node: yaml.ScalarNode) -> str:
        """A key as written; a YAML 1.1 boolean or null used as a key is named, since
        other YAML readers turn `on:` into true."""
        value = self._scalar(node)
        if isinstance(value, bool) or (value is None and node.value not in ("", "~")):
            what = "the boolean " + str(value).lower() if isinstance(value, bool) else "null"
            self.doc.problems.append(
                (
                    "yaml-key-quote",
                    f"the key {node.value} is read by YAML 1.1 as {what}, not as text; "
                    f"quote it: '{node.value}'",
                    *_pair(node),
                )
            )
        return node.value if node.tag != _STR_TAG else str(value)

    def _flatten_merge(
        self, node: yaml.MappingNode, depth: int, *, source: bool = False
    ) -> list[tuple[yaml.Node, yaml.Node]]:
        """Apply `<<` merge keys (explicit keys win), as the YAML merge-key spec says.
        Each mapping is flattened once; every pair a merge copies from a `source`
        mapping is charged to the budget, as an alias's nodes are."""
        if not source and not any(k.tag == _MERGE_TAG for k, _ in node.value):
            return list(node.value)  # the common case: no `<<` in this mapping
        known = self.merged.get(id(node))
        if known is None:
            if depth > MAX_DEPTH:
                raise YamlProblem(
                    "yaml-too-deep",
                    f"merge keys nest deeper than {MAX_DEPTH} levels; no spec needs that",
                    _mark(node),
                )
            try:
                known = merge_pairs(
                    node, lambda src: self._flatten_merge(src, depth + 1, source=True)
                )
            except MergeError as exc:
                raise YamlProblem("yaml-merge", str(exc), _mark(exc.node)) from None
            self.merged[id(node)] = known
        if source:
            self.budget.charge(node, len(known) + 1)
        return known

    @staticmethod
    def _scalar(node: yaml.Node) -> Any:
        # Resolve plain scalars with the safe resolver's implicit tags only.
        tag = node.tag
        value = node.value
        if tag == "tag:yaml.org,2002:str":
            return value
        if tag == "tag:yaml.org,2002:null":
            return None
        if tag == "tag:yaml.org,2002:bool":
            return value.lower() in ("true", "yes", "on", "y")
        if tag == "tag:yaml.org,2002:int":
            try:
                return int(value.replace("_", ""), 0)
            except ValueError:
                return value
        if tag == "tag:yaml.org,2002:float":
            try:
                return float(value.replace("_", ""))
            except ValueError:
                return value
        if tag.startswith("tag:yaml.org,2002:"):
            return value  # timestamps, binary...: kept as text, models reject them
        raise YamlProblem(
            "yaml-tag",
            f"the YAML tag {tag!r} is not allowed in a spec; remove it",
            _mark(node),
        )


def read_text(path: Path) -> str:
    """Read a spec file within bounds, refusing binary and non-UTF-8 content clearly."""
    try:
        return _read_text(path, MAX_FILE_BYTES)
    except FileProblem as exc:
        raise YamlProblem(exc.code, exc.message, Mark(exc.line, exc.col)) from exc


def load_documents(
    path: Path, text: str | None = None, display: str | None = None, budget: Budget | None = None
) -> list[Document]:
    """All documents of one file; raises YamlProblem with a position on any defect.
    `budget` (one per file by default) records the work spent converting it."""
    name = display or str(path)
    budget = budget if budget is not None else Budget()
    if text is None:
        text = read_text(path)
    too_deep = check_flow_depth(text, MAX_DEPTH)
    if too_deep:
        raise YamlProblem("yaml-too-deep", too_deep[0], Mark(too_deep[1], too_deep[2]))
    docs: list[Document] = []
    try:
        loader = _Loader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                doc = Document(file=name, index=index, start=_mark(node), data=None)
                doc.data = _Converter(doc, budget).convert(node, (), 0)
                docs.append(doc)
                index += 1
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Mark(mark.line + 1, mark.column + 1) if mark else Mark(1, 1)
        problem = exc.problem or "invalid YAML"
        context = f" {exc.context}" if exc.context else ""
        if "'\\t'" in problem or tab_at(text, where.line, where.col):
            problem = (
                "a tab character where YAML expects indentation or a value; YAML "
                "indents with spaces only: replace the tab with spaces"
            )
            context = ""
        raise YamlProblem("yaml-syntax", f"YAML syntax error: {problem}{context}", where) from exc
    except yaml.YAMLError as exc:
        raise YamlProblem("yaml-syntax", f"YAML syntax error: {exc}") from exc
    except RecursionError as exc:
        raise YamlProblem(
            "yaml-too-deep", f"the document nests deeper than {MAX_DEPTH} levels"
        ) from exc
    return docs

