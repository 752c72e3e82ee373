"""Checks on YAML source text around libyaml: nesting refused before it parses (some
builds recurse without a limit), and tabs named when it stops on one."""

from __future__ import annotations

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
