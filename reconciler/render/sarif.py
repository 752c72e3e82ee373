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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from reconciler.diagnostics import Diagnostic, Severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def render(diagnostics: Sequence[Diagnostic], version: str) -> str:
    """The log, indented JSON; `version` is reconcile's."""
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "reconcile",
                        "version": version,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index[d.code]) for d in diagnostics],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(code: str) -> dict[str, Any]:
    return {"id": code, "shortDescription": {"text": f"reconcile {code}"}}


def _result(d: Diagnostic, rule_index: int) -> dict[str, Any]:
    message = d.message + (f" ({d.hint})" if d.hint else "")
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": LEVEL.get(d.severity, "note"),
        "message": {"text": message},
    }
    if d.file:
        region = {"startLine": d.line or 1}
        if d.line and d.col:
            region["startColumn"] = d.col
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(d.file)},
                    "region": region,
                }
            }
        ]
    return result


def _uri(path: str) -> str:
    """A relative URI reference for a file path (percent-encoded; `./` dropped)."""
    return quote(PurePosixPath(path).as_posix(), safe="/")
