"""Diagnostics rendered: one line per problem for people (a finding that repeats
across topics once, with each topic's line under it: render/grouping.py), a JSON list
for machines, GitHub workflow annotations (render/github.py), a SARIF log
(render/sarif.py); the three for machines keep one entry per topic and line.

`REPORTERS` maps each `--format` name to its reporter (as check-jsonschema chooses its
reporter by name): `validate` offers all of them, `plan` and `show` the two for CI
(render/formats.py), each reporter written once.

File names and messages are data (a file may be called anything): each line is
escaped (render/escape.py), so no control character reaches a terminal or a log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reconciler import __version__
from reconciler.acceptance import counts
from reconciler.diagnostics import Diagnostic
from reconciler.render import accepted, github, sarif
from reconciler.render.escape import text as esc
from reconciler.render.grouping import Group, grouped


def line(d: Diagnostic) -> str:
    """`file:line:col: severity[code]: message (hint)`, escaped."""
    return d.render(esc)


def where(d: Diagnostic) -> str:
    """`file:line:col` (the file alone when there is no line), escaped."""
    return f"{esc(d.file)}:{d.line}:{d.col or 1}" if d.line else esc(d.file)


def group_lines(group: Group) -> list[str]:
    """`projects/P: severity[code]: message (hint)`, then `  file:line:col: TOPIC`
    for each topic, escaped."""
    head = (
        f"projects/{esc(group.project)}: {group.severity.value}[{esc(group.code)}]: "
        f"{esc(group.message)}"
    )
    if group.hint:
        head += f" ({esc(group.hint)})"
    return [head, *(f"  {where(d)}: {esc(d.topic or '')}" for d in group.members)]


def lines(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """One line per diagnostic, a finding about several topics as a group; accepted
    findings after the problems (render/accepted.py)."""
    problems, accepted_ones = accepted.split(diagnostics)
    out: list[str] = []
    for item in grouped(problems):
        out += group_lines(item) if isinstance(item, Group) else [line(item)]
    return out + accepted.text_lines(accepted_ones)


def text(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(x + "\n" for x in lines(diagnostics))


def summary(diagnostics: list[Diagnostic], files: int) -> str:
    errors, warnings, accepted_count = counts(diagnostics)
    return (
        f"{files} file{'s' if files != 1 else ''} checked: "
        f"{errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
        + (f", {accepted_count} accepted" if accepted_count else "")
    )


def as_json(diagnostics: Sequence[Diagnostic]) -> str:
    """The findings as a JSON array of their members (reconciler/codec.py, as the plan
    file holds them), non-ASCII characters escaped."""
    from reconciler.codec import indented_json  # not on the text output's path

    return indented_json(list(diagnostics), ascii=True)


def as_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    return sarif.render(diagnostics, __version__)


def failed_sarif(diagnostics: Sequence[Diagnostic], why: str) -> str:
    """The SARIF log of a run that ended in an error (render/sarif.py's `failed_log`)."""
    return sarif.failed_log(diagnostics, __version__, why)


Reporter = Callable[[Sequence[Diagnostic]], str]
REPORTERS: dict[str, Reporter] = {
    "text": text,
    "json": as_json,
    "github": github.render,
    "sarif": as_sarif,
}
CI_REPORTERS = ("github", "sarif")  # the ones a plan offers too
