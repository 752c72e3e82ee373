"""Diagnostics rendered: one line per problem for people, a JSON list for machines.

File names and messages are data (a file may be called anything): each line is
escaped (render/escape.py), so no control character reaches a terminal or a log.
"""

from __future__ import annotations

import json

from reconciler.diagnostics import Diagnostic
from reconciler.render.escape import text as esc


def line(d: Diagnostic) -> str:
    """`file:line:col: severity[code]: message (hint)`, escaped."""
    return d.render(esc)


def text(diagnostics: list[Diagnostic]) -> str:
    return "".join(line(d) + "\n" for d in diagnostics)


def summary(diagnostics: list[Diagnostic], files: int) -> str:
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = len(diagnostics) - errors
    return (
        f"{files} file{'s' if files != 1 else ''} checked: "
        f"{errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )


def as_json(diagnostics: list[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2) + "\n"
