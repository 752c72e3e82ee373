"""Safe, bounded YAML loading that keeps the line and column of every key and value.

PyYAML's C composer builds a node graph (no Python objects are ever constructed from
tags), and we convert nodes to plain data ourselves, so that aliases cannot expand
without bound and every value keeps its position for diagnostics.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from reconciler.fileio import FileProblem
from reconciler.fileio import read_text as _read_text
from reconciler.memo import MEMO_ENTRIES
from reconciler.yamldoc import (
    Document,
    Mark,
    PathKey,
    Source,
    SpecLayout,
    YamlProblem,
    _mark,
    _Marks,
    _pair,
)
from reconciler.yamltext import JSON_FLOAT, MergeError, check_flow_depth, merge_pairs, tab_at

try:  # libyaml is much faster; the pure loader gives the same nodes.
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

__all__ = [  # what callers import from here (some defined in yamldoc)
    "ALIAS_ALLOWANCE", "MAX_ALIAS_EXPANSION", "MAX_DEPTH", "MAX_FILE_BYTES",
    "Budget", "Document", "Mark", "PathKey", "YamlProblem", "load_documents", "read_text",
]

_STR_TAG = "tag:yaml.org,2002:str"
# Plain scalars starting with a letter resolve to something other than a string only
# when they are one of these exact words (YAML 1.1 booleans and null).
_TYPED_WORDS = frozenset(
    word
    for base in ("yes", "no", "true", "false", "on", "off", "null")
    for word in (base, base.capitalize(), base.upper())
)


_FLOAT_TAG = "tag:yaml.org,2002:float"
_INTERN_UP_TO = 64
_intern = sys.intern
_MERGE_TAG = "tag:yaml.org,2002:merge"
_ScalarNode = yaml.ScalarNode


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The C composer calls `resolve` for every node, and `descend_resolver` and
    `ascend_resolver` around it, in Python: after libyaml itself, that is where a large
    tree spends its time. This loader has no path resolvers (its own empty table, so
    none registered on PyYAML's classes applies), so the two calls have nothing to do
    and a node's tag depends on its kind and text alone: a plain scalar starting with a
    letter is a string unless it is one of a few words, and the other plain scalars
    (`7d`, `5s`, `100`, `0.05`) repeat across a tree, so each distinct text is resolved
    once (`_RESOLVED`)."""

    yaml_path_resolvers: ClassVar[dict[Any, str]] = {}  # never filled: see above

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode:
            return _MAPPING_TAG if kind is yaml.MappingNode else _SEQUENCE_TAG
        if not implicit[0]:  # quoted, or tagged `!`: a string, as PyYAML resolves it
            return _STR_TAG
        if value and value[0].isalpha() and value not in _TYPED_WORDS:
            return _STR_TAG
        tag = _RESOLVED.get(value)
        if tag is None:
            tag = str(super().resolve(kind, value, implicit))
            if tag == _STR_TAG and ("e" in value or "E" in value) and JSON_FLOAT.fullmatch(
                value
            ):
                tag = _FLOAT_TAG
            if len(_RESOLVED) < _RESOLVED_MAX and len(value) <= _INTERN_UP_TO:
                _RESOLVED[value] = tag
        return tag

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """Nothing to track without path resolvers."""

    def ascend_resolver(self) -> None:
        """Nothing to track without path resolvers."""


_MAPPING_TAG = "tag:yaml.org,2002:map"
_SEQUENCE_TAG = "tag:yaml.org,2002:seq"
# Plain scalar text not led by a letter -> its tag (the resolver's result for it never
# changes: no path resolvers). Bounded: a tree repeats a few such texts.
_RESOLVED: dict[str, str] = {}
_RESOLVED_MAX = 4096

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES_PER_FILE = 2_000_000
MAX_DEPTH = 64
# Aliases may repeat a node, but a document whose aliases multiply its size more than
# this (beyond a small allowance) is an expansion bomb, not a spec.
MAX_ALIAS_EXPANSION = 10
ALIAS_ALLOWANCE = 10_000


@dataclass
class Budget:
    """Work spent on one file: every node converted and every key a `<<` merge copies
    counts, against a budget proportional to the nodes written (aliases and merges may
    repeat a node, not multiply the file)."""

    spent: int = 0
    distinct: set[int] = field(default_factory=set)
    # False when the file has no alias (no `*` anywhere): every node is then written
    # once, and the distinct nodes need not be collected.
    track: bool = True

    def charge(self, node: yaml.Node, units: int = 1) -> None:
        self.spent += units
        if self.track:
            self.distinct.add(id(node))
        written = len(self.distinct) if self.track else self.spent
        if self.spent > MAX_NODES_PER_FILE or self.spent > (
            MAX_ALIAS_EXPANSION * written + ALIAS_ALLOWANCE
        ):
            raise YamlProblem(
                "yaml-too-large",
                f"the document expands to {self.spent:,}+ values from "
                f"{written:,} written ones (an alias-expansion bomb, or a "
                "merge-key one?); remove the aliases and `<<` merges or split the file",
                _mark(node),
            )


_CONTAINER_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


class _Converter:
    """Nodes -> plain data. `convert` records every position (`marks`); `plain` records
    none (the fast path for large trees). Both apply the same limits and raise the
    same problems at the same nodes."""

    def __init__(self, doc: Document, budget: Budget, marks: _Marks | None) -> None:
        self.doc = doc
        self.budget = budget
        self.marks = marks
        self.merged: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}

    def _enter(self, node: yaml.Node, depth: int) -> None:
        budget = self.budget
        budget.spent += 1
        if budget.track:
            budget.distinct.add(id(node))
        if budget.spent > ALIAS_ALLOWANCE:
            budget.charge(node, 0)  # checks the limits (cheap below the allowance)
        if depth > MAX_DEPTH:
            raise YamlProblem(
                "yaml-too-deep",
                f"the document nests deeper than {MAX_DEPTH} levels; no spec needs that",
                _mark(node),
            )
        if node.tag not in _CONTAINER_TAGS and not isinstance(node, yaml.ScalarNode):
            raise YamlProblem(
                "yaml-tag",
                f"the YAML tag {node.tag!r} is not allowed in a spec; remove it",
                _mark(node),
            )

    def plain(self, node: yaml.Node, depth: int) -> Any:
        self._enter(node, depth)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        budget = self.budget
        # A string child is taken here, not entered, when entering it could not fail:
        # the file has no alias (every node written once, so only the per-file node
        # limit applies: Budget.charge), and the child is within the depth limit.
        quick = not budget.track and depth < MAX_DEPTH
        child_depth = depth + 1
        if isinstance(node, yaml.SequenceNode):
            items: list[Any] = []
            for child in node.value:
                if (quick and child.__class__ is _ScalarNode and child.tag == _STR_TAG
                        and budget.spent < MAX_NODES_PER_FILE):
                    budget.spent += 1
                    text = child.value
                    items.append(_intern(text) if len(text) <= _INTERN_UP_TO else text)
                else:
                    items.append(self.plain(child, child_depth))
            return items
        result: dict[str, Any] = {}
        for key_node, value_node in self._flatten_merge(node, depth):
            key = key_node.value
            if (key_node.__class__ is not _ScalarNode or key_node.tag != _STR_TAG
                    or key in result):
                key = self._checked_key(key_node, result)  # names the problem, if any
            elif len(key) <= _INTERN_UP_TO:
                key = _intern(key)
            if (quick and value_node.__class__ is _ScalarNode and value_node.tag == _STR_TAG
                    and budget.spent < MAX_NODES_PER_FILE):
                budget.spent += 1
                text = value_node.value
                result[key] = _intern(text) if len(text) <= _INTERN_UP_TO else text
            else:
                result[key] = self.plain(value_node, child_depth)
        return result

    def convert(self, node: yaml.Node, path: PathKey, depth: int) -> Any:
        self._enter(node, depth)
        marks = self.marks
        assert marks is not None
        if path not in marks.values:
            marks.values[path] = _pair(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, marks, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [
                self.convert(child, (*path, i), depth + 1) for i, child in enumerate(node.value)
            ]
        return self._scalar(node)

    def _mapping(
        self, node: yaml.MappingNode, marks: _Marks, path: PathKey, depth: int
    ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in self._flatten_merge(node, depth):
            key = self._checked_key(key_node, result)
            child = (*path, key)
            marks.keys[child] = _pair(key_node)
            result[key] = self.convert(value_node, child, depth + 1)
            if value_node.tag not in (_STR_TAG, "tag:yaml.org,2002:null") and isinstance(
                value_node, yaml.ScalarNode
            ):
                marks.raw[child] = value_node.value
        return result

    def _checked_key(self, key_node: yaml.Node, result: dict[str, Any]) -> str:
        if not isinstance(key_node, yaml.ScalarNode):
            raise YamlProblem("yaml-key", "a mapping key must be a plain string", _mark(key_node))
        key = self._key(key_node)
        if key in result:
            raise YamlProblem(
                "yaml-duplicate-key",
                f"key {key!r} appears twice in the same mapping; keep one",
                _mark(key_node),
            )
        return key

    def _key(self, node: yaml.ScalarNode) -> str:
        """A key as written; a YAML 1.1 boolean or null used as a key is named, since
        other YAML readers turn `on:` into true."""
        value = self._scalar(node)
        if isinstance(value, bool) or (value is None and node.value not in ("", "~")):
            what = "the boolean " + str(value).lower() if isinstance(value, bool) else "null"
            if not self.doc.problems:
                self.doc.problems = []
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
            return node.value  # type: ignore[no-any-return]  # the common case: no `<<`
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
            # Regions, label values and projects repeat in every topic: one copy each.
            return _intern(value) if len(value) <= _INTERN_UP_TO else value
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


# Layouts seen, shared by the documents laid out alike (bounded: a tree repeats few).
_LAYOUTS: dict[tuple[tuple[str, ...], tuple[int, ...]], SpecLayout] = {}
_SPEC = "spec"


def _spec_layout(
    root: yaml.Node, converter: _Converter, members: frozenset[str]
) -> SpecLayout | None:
    """Where the `members` of the document's `spec` sit (see SpecLayout), from the
    nodes just converted (so the keys are valid, and a mapping with `<<` merges has
    its flattened pairs in `converter.merged`)."""
    merged = converter.merged
    spec: Any = None
    for key_node, value_node in merged.get(id(root)) or root.value:
        if key_node.value == _SPEC:
            spec = value_node
            break
    if not isinstance(spec, yaml.MappingNode):
        return None
    top = root.start_mark.line
    names: list[str] = []
    places: list[int] = []
    for key_node, value_node in merged.get(id(spec)) or spec.value:
        if key_node.value in members:
            key_mark, value_mark = key_node.start_mark, value_node.start_mark
            names.append(key_node.value)
            places += (key_mark.line - top, key_mark.column + 1,
                       value_mark.line - top, value_mark.column + 1)
    shape = (tuple(names), tuple(places))
    layout = _LAYOUTS.get(shape)
    if layout is None:
        layout = SpecLayout(*shape)
        if len(_LAYOUTS) < MEMO_ENTRIES:
            _LAYOUTS[shape] = layout
    return layout


def _reread(path: Path, display: str) -> list[Document]:
    """The file's documents with positions, for documents first read without them."""
    try:
        return load_documents(path, display=display)
    except (YamlProblem, OSError):
        return []


def read_text(path: Path) -> str:
    """Read a spec file within bounds, refusing binary and non-UTF-8 content clearly."""
    try:
        return _read_text(path, MAX_FILE_BYTES)
    except FileProblem as exc:
        raise YamlProblem(exc.code, exc.message, Mark(exc.line, exc.col)) from exc


def load_documents(
    path: Path,
    text: str | None = None,
    display: str | None = None,
    budget: Budget | None = None,
    *,
    positions: bool = True,
    text_read: Callable[[str], None] | None = None,
    layout_of: frozenset[str] = frozenset(),
) -> list[Document]:
    """All documents of one file; raises YamlProblem with a position on any defect.
    `budget` (one per file by default) records the work spent converting it. With
    `positions=False` (only when the file itself is read, `text` None) the documents
    record no positions until a diagnostic asks for one (see `Document`).
    `text_read` is handed the file's text as read, for what YAML drops (comments).
    `layout_of`: for a document read without positions whose `spec` mapping has one
    of these members, where they sit is kept (yamldoc.SpecLayout), so that a finding
    at one reads the file no second time; for the others, nothing is kept (a walk of
    the nodes cost every document ~3% of validate)."""
    name = display or str(path)
    if text is None:
        text = read_text(path)
        if text_read is not None:
            text_read(text)
    else:
        positions = True  # nothing to re-read positions from
    if budget is None:
        budget = Budget(track="*" in text)  # no `*`, no alias
    too_deep = check_flow_depth(text, MAX_DEPTH)
    if too_deep:
        raise YamlProblem("yaml-too-deep", too_deep[0], Mark(too_deep[1], too_deep[2]))
    docs: list[Document] = []
    try:
        loader = _Loader(text)
        try:
            source = None if positions else Source(lambda: _reread(path, name))
            index = 0
            while loader.check_node():
                node = loader.get_node()
                doc = Document(name, index, _mark(node), None, source=source)
                converter = _Converter(doc, budget, doc._marks)
                if source is None:
                    doc.data = converter.convert(node, (), 0)
                else:
                    data = doc.data = converter.plain(node, 0)
                    if layout_of and type(data) is dict:
                        spec = data.get(_SPEC)
                        if type(spec) is dict and not layout_of.isdisjoint(spec):
                            doc.layout = _spec_layout(node, converter, layout_of)
                    source.documents.append(doc)
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

