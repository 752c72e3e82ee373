"""Defaults documents: one per directory, applying to it and every directory below."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reconciler.diagnostics import Diagnostics
from reconciler.spec.documents import DefaultsDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located


def index_defaults(
    defaults: list[Located[DefaultsDoc]], diags: Diagnostics
) -> dict[Path, Located[DefaultsDoc]]:
    out: dict[Path, Located[DefaultsDoc]] = {}
    for located in defaults:
        directory = located.directory.resolve()
        if directory in out:
            first = out[directory]
            PositionedDiagnostics(located, diags).error(
                ("kind",), "duplicate-defaults",
                f"this directory already has a Defaults document at {first.doc.file}:"
                f"{first.doc.start.line}; merge them",
            )
            continue
        out[directory] = located
    return out


def defaults_chain(
    directory: Path, defaults: Mapping[Path, Located[DefaultsDoc]]
) -> list[Located[DefaultsDoc]]:
    """Defaults of a directory and its ancestors, nearest first."""
    if not defaults:
        return []
    resolved = directory.resolve()
    return [defaults[d] for d in (resolved, *resolved.parents) if d in defaults]
