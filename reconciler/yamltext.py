"""YAML helpers around libyaml: nesting refused before it parses (some builds recurse
without a limit), tabs named when it stops on one, `<<` merge-key pairs, and the
writer (`dump_all`) that quotes every string some YAML reader would take for
something else."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import yaml

# Plain scalars that YAML 1.1 (PyYAML, the tool's loader) reads as text but that are
# numbers elsewhere. JSON_FLOAT: `1e3`, `1e-3` (no dot); the JSON Schema calls them
# numbers, so the tool's loader does too (yamlio.py).
JSON_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][-+]?[0-9]+")
# What else the writer quotes (compiled when a file is written, not for validate):
# the YAML 1.2 core schema's ints and floats (`0o17`, `09`, `1.`, `1e3`...), YAML
# 1.1's one-letter booleans (PyYAML leaves them out; other 1.1 readers do not), and a
# signed NaN (text to both specs, a float to some readers).
_NOT_TEXT = (
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+)$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:bool", r"^(?:y|Y|n|N)$", "yYnN"),
    ("tag:yaml.org,2002:float", r"^[-+]\.(?:nan|NaN|NAN)$", "-+"),
)


class MergeError(ValueError):
    def __init__(self, message: str, node: yaml.Node) -> None:
        super().__init__(message)
        self.node = node

_BRACKETS_ONLY = str.maketrans(
    "", "", "".join(chr(c) for c in range(128) if chr(c) not in "[]{}")
)


def check_flow_depth(text: str, max_depth: int) -> tuple[str, int, int] | None:
    """Refuse deep flow nesting before libyaml sees it: some libyaml builds recurse
    without a limit and crash the interpreter on `[[[[...`. Brackets inside quoted
    strings count too, and closers never take the depth below zero, so the estimate
    can only be too high (a spec never has 64 open brackets in its strings)."""
    brackets = text.translate(_BRACKETS_ONLY)
    if len(brackets) <= max_depth:
        return None
    depth = 0
    for index, char in enumerate(brackets):
        depth = depth + 1 if char in "[{" else max(depth - 1, 0)
        if depth > max_depth:
            # Locate the offending bracket in the text for the diagnostic.
            position = -1
            for _ in range(index + 1):
                position = min(
                    (p for p in (text.find(b, position + 1) for b in "[]{}") if p >= 0),
                    default=len(text),
                )
            line = text.count("\n", 0, position) + 1
            col = position - (text.rfind("\n", 0, position) + 1) + 1
            return (
                f"the document nests deeper than {max_depth} levels; no spec needs that",
                line,
                col,
            )
    return None


def tab_at(text: str, line_no: int, col: int) -> bool:
    """True when the error position is a tab, or the line's indentation holds one."""
    lines = text.splitlines()
    if not 1 <= line_no <= len(lines):
        return False
    line = lines[line_no - 1]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return "\t" in indent or line[col - 1 : col] == "\t"


def merge_pairs(
    node: yaml.MappingNode, flatten: Any
) -> list[tuple[yaml.Node, yaml.Node]]:
    """The pairs of `node` with its `<<` sources' (already flattened) pairs after them,
    keys written in `node` winning, then earlier sources."""
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise MergeError("a '<<' merge key needs a mapping", source)
                merged.extend(flatten(source))
        else:
            pairs.append((key_node, value_node))
    explicit = {k.value for k, _ in pairs if isinstance(k, yaml.ScalarNode)}
    seen: set[str] = set()
    out = list(pairs)
    for key_node, value_node in merged:
        if key_node.value in explicit or key_node.value in seen:
            continue
        seen.add(key_node.value)
        out.append((key_node, value_node))
    return out


@cache
def _dumper() -> type:
    """PyYAML's safe dumper, knowing the plain scalars above too: a string the
    resolver takes for anything but text is written quoted."""
    base: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    dumper: Any = type("SpecDumper", (base,), {})
    for tag, pattern, first in _NOT_TEXT:
        dumper.add_implicit_resolver(tag, re.compile(pattern), list(first))
    return dumper  # type: ignore[no-any-return]


def dump_all(docs: Iterable[Any], width: int | None = None) -> str:
    """YAML documents (`---` before each, keys in their order, block style) whose every
    string reads back as the same string with YAML 1.1, YAML 1.2 and the tool's loader:
    a label value `1e3`, `yes`, `0o17`, `~` or `2001-12-14` is written quoted."""
    text: str = yaml.dump_all(
        docs,
        Dumper=_dumper(),
        sort_keys=False,
        explicit_start=True,
        default_flow_style=False,
        allow_unicode=True,
        width=width,
    )
    return text
