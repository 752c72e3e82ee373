"""Diagnostics as a SARIF 2.1.0 log (`--format sarif`), for GitHub code scanning
(`github/codeql-action/upload-sarif`) and any other SARIF reader.

One run, the tool `reconcile` with one rule per diagnostic code, one result per
diagnostic. What code scanning needs of it, from GitHub's "SARIF support for code
scanning" page: `ruleId` stable across runs (the diagnostic code), a file path
relative to the repository root and the same in every run (the path as validate
names it, run from the root), and a `region` with at least `startLine` for the
result to be shown at a line: a diagnostic about a whole file or project, which has
no line, is placed at line 1 of its file. The log is checked against the OASIS
schema (sarif-schema-2.1.0.json) by the tests.

A location's `uri` is a URI reference (RFC 3986): the path's bytes percent-encoded,
the bytes of a file name that is not UTF-8 included (`os.fsencode`), so that any
file name gives a valid log and decodes back to itself. Messages are Unicode text:
such a byte in one is shown as `\\udcXX`, as the text output shows it.

A run that fails (`failed_log`) still writes a log: the findings it has, each written
on its own so that one that cannot be written loses only itself, and the run's
invocation marked unsuccessful with a notification saying why; code scanning then
records a failed analysis, not a clean one that would close the open alerts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.render import accepted
from reconciler.render.escape import unicode_text
from reconciler.render.repopath import repo_path

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def render(diagnostics: Sequence[Diagnostic], version: str) -> str:
    """The log, indented JSON; `version` is reconcile's."""
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    return _log(codes, [_result(d, index[d.code]) for d in diagnostics], version)


def failed_log(diagnostics: Sequence[Diagnostic], version: str, why: str) -> str:
    """The log of a run that ended in an error (`why`): every finding of
    `diagnostics` that can be written, and the failure as the invocation's
    notification, with one more for each finding that could not be written."""
    results: list[tuple[str, dict[str, Any]]] = []
    notes = [why]
    for d in diagnostics:
        try:
            results.append((d.code, _result(d, 0)))
        except Exception as exc:  # a bug in one finding: it alone is lost, and said
            notes.append(
                f"a {d.code!r} finding at {d.file!r} line {d.line!r} could not be written "
                f"({type(exc).__name__}: {exc})"
            )
    codes = sorted({code for code, _ in results})
    index = {code: i for i, code in enumerate(codes)}
    for code, result in results:
        result["ruleIndex"] = index[code]
    invocation = {
        "executionSuccessful": False,
        "toolExecutionNotifications": [
            {"level": "error", "message": {"text": unicode_text(note)}} for note in notes
        ],
    }
    return _log(codes, [r for _, r in results], version, invocation)


def _log(
    codes: Sequence[str],
    results: list[dict[str, Any]],
    version: str,
    invocation: dict[str, Any] | None = None,
) -> str:
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "reconcile",
                "version": version,
                "rules": [_rule(code) for code in codes],
            }
        },
    }
    if invocation is not None:
        run["invocations"] = [invocation]
    run["columnKind"] = "unicodeCodePoints"
    run["results"] = results
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    from reconciler.codec import indented_json  # not on validate's text output's path

    return indented_json(log)


def _rule(code: str) -> dict[str, Any]:
    return {"id": code, "shortDescription": {"text": f"reconcile {code}"}}


def _result(d: Diagnostic, rule_index: int) -> dict[str, Any]:
    message = d.message + (f" ({d.hint})" if d.hint else "")
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": LEVEL.get(d.severity, "note"),
        "message": {"text": unicode_text(message)},
    }
    if d.file:
        region = {"startLine": d.line or 1}
        if d.line and d.col:
            region["startColumn"] = d.col
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri(repo_path(d.file))},
                    "region": region,
                }
            }
        ]
    suppressions = accepted.suppressions(d, uri)
    if suppressions is not None:
        result["suppressions"] = suppressions
    return result


def uri(path: str) -> str:
    """A relative URI reference for a file path: its bytes (`os.fsencode`: those of a
    name that is not UTF-8 as they are) percent-encoded but for the unreserved
    characters and `/` (so a `:` in the first segment cannot read as a scheme);
    `./` and repeated slashes dropped, an absolute path kept absolute (never `//`,
    which would start an authority)."""
    posix = re.sub(r"^/+", "/", PurePosixPath(path).as_posix())
    return quote(os.fsencode(posix), safe="/")
