"""Accepted findings (reconciler/acceptance.py) as each reporter shows them, kept here
so that the reporters themselves only ask: text lists them after the problems, under
`accepted[CODE]`, each with where it was accepted and why; `json` writes each with its
`acceptance`; `github` writes no annotation for one; SARIF writes its result with a
`suppressions` entry (kind `inSource` for a comment in the spec, `external` for the
Owner document's list, status `accepted`, the reason as `justification`), which code
scanning shows as suppressed rather than as an open alert.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reconciler.acceptance import Acceptance, AcceptedDiagnostic, is_accepted
from reconciler.diagnostics import Diagnostic
from reconciler.render.escape import text as esc
from reconciler.render.escape import unicode_text
from reconciler.render.grouping import Group, grouped


def split(diagnostics: Sequence[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(the problems, the accepted findings), each in order."""
    problems = [d for d in diagnostics if not is_accepted(d)]
    if len(problems) == len(diagnostics):
        return list(diagnostics), []
    return problems, [d for d in diagnostics if is_accepted(d)]


def _acceptance(d: Diagnostic) -> Acceptance | None:
    return d.acceptance if isinstance(d, AcceptedDiagnostic) else None


def note(d: Diagnostic) -> str:
    """`accepted at FILE:LINE: REASON (until DATE)`, escaped."""
    a = _acceptance(d)
    if a is None:
        return ""
    return f"accepted at {esc(a.where)}: {esc(a.justification)}"


def _where(d: Diagnostic) -> str:
    return f"{esc(d.file)}:{d.line}:{d.col or 1}" if d.line else esc(d.file)


def text_lines(accepted: Sequence[Diagnostic]) -> list[str]:
    """`file:line:col: accepted[code]: message (accepted at F:L: reason)`; a finding
    about several topics once, each topic under it with its own acceptance."""
    out: list[str] = []
    for item in grouped(accepted):
        if isinstance(item, Group):
            out.append(
                f"projects/{esc(item.project)}: accepted[{esc(item.code)}]: "
                f"{esc(item.message)}"
            )
            out += [f"  {_where(d)}: {esc(d.topic or '')} ({note(d)})" for d in item.members]
        else:
            out.append(
                f"{_where(item)}: accepted[{esc(item.code)}]: {esc(item.message)} "
                f"({note(item)})"
            )
    return out


def suppressions(d: Diagnostic, uri: Callable[[str], str]) -> list[dict[str, Any]] | None:
    """A SARIF result's `suppressions` for an accepted finding (`uri`: sarif.py's, a
    path as a URI reference); None for another."""
    a = _acceptance(d)
    if a is None:
        return None
    return [{
        "kind": a.kind,
        "status": "accepted",
        "justification": unicode_text(a.justification),
        "location": {
            "physicalLocation": {
                "artifactLocation": {"uri": uri(a.file)},
                "region": {"startLine": a.line or 1},
            }
        },
    }]
