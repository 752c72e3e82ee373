"""Diagnostics as GitHub Actions workflow commands (`--format github`): one
`::error` / `::warning` / `::notice` line per diagnostic, which the runner turns into
an annotation at the spec's file and line, on the pull request's changed files and in
the run's summary.

The command's grammar is `::LEVEL file=F,line=N,col=N,title=T::MESSAGE`. Everything
in it but the level is data and is escaped as the Actions toolkit escapes it
(@actions/core `escapeData`, `escapeProperty`): `%`, CR and LF as `%25`, `%0D`, `%0A`
everywhere, and `:` and `,` as `%3A`, `%2C` in properties, so that no file name or
message can end a property, end the command or start a second one. Each message is
also made printable (render/escape.py) first.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.render import accepted
from reconciler.render.escape import text as esc
from reconciler.render.repopath import repo_path

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    """One workflow command: at the file and line when the diagnostic has them (a
    project-wide one has no line: the annotation is on the file, or the run)."""
    props = []
    if d.file:
        props.append(f"file={_property(esc(repo_path(d.file)))}")
        if d.line:
            props.append(f"line={d.line}")
            if d.col:
                props.append(f"col={d.col}")
    props.append(f"title={_property('reconcile ' + esc(d.code))}")
    message = esc(d.message) + (f" ({esc(d.hint)})" if d.hint else "")
    return f"::{LEVEL.get(d.severity, 'notice')} {','.join(props)}::{_data(message)}"


def render(diagnostics: Sequence[Diagnostic]) -> str:
    """One annotation per problem; an accepted finding has none (render/accepted.py)."""
    return "".join(annotation(d) + "\n" for d in accepted.split(diagnostics)[0])
