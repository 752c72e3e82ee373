"""Defaults documents: one per directory, applying to it and every directory below; the
two inheritance rules of the table's fields (reconciler/topicfields.py): a field a
Defaults document gives whole (NEAREST) is the topic's own value, else the nearest
document's (`nearest`); a MERGED one (labels, tags) merges every document's keys,
outer documents first and the topic's own last (`merged`). Import works out the same
values (spec/inherited.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reconciler.diagnostics import Diagnostics
from reconciler.spec.documents import DefaultsDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.topicfields import INGESTION, TopicField
from reconciler.yamlio import PathKey


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
        check_defaults_rest_fields(located, diags)
    return out


def check_defaults_rest_fields(located: Located[DefaultsDoc], diags: Diagnostics) -> None:
    """A Defaults document may not declare an ingestion source (the table's PER_TOPIC):
    said once, at its line."""
    if located.model.spec.ingestion_data_source_settings is not None:
        PositionedDiagnostics(located, diags).error(
            INGESTION.spec_path, "ingestion-in-defaults",
            f"{INGESTION.spec} is a topic's own, not a default: a source given to every "
            "topic of a directory would ingest each message once per topic; move it to "
            "the one Topic document that ingests from it",
            key=True,
        )


def defaults_chain(
    directory: Path, defaults: Mapping[Path, Located[DefaultsDoc]]
) -> list[Located[DefaultsDoc]]:
    """Defaults of a directory and its ancestors, nearest first."""
    if not defaults:
        return []
    resolved = directory.resolve()
    return [defaults[d] for d in (resolved, *resolved.parents) if d in defaults]


def nearest(
    value: Any, entry: TopicField, rep: PositionedDiagnostics,
    chain: list[Located[DefaultsDoc]],
) -> tuple[Any, PositionedDiagnostics]:
    """A NEAREST field's (`entry.inherit`) value for a topic whose own is `value`
    (None: not declared), and where to report it: the topic's own value, else the
    nearest Defaults document's of `chain` (nearest first). A value of the topic's
    that did not parse is not replaced by a default: it was reported."""
    if value is not None or rep.silent(entry.spec_path):
        return value, rep
    for defaults in chain:
        found = getattr(defaults.model.spec, entry.attr)
        if found is not None:
            return found, PositionedDiagnostics(defaults, rep.diags)
    return None, rep


def merged(
    entry: TopicField, located: Located[Any], chain: list[Located[DefaultsDoc]],
    diags: Diagnostics,
    check: Callable[[Mapping[str, str], PositionedDiagnostics, PathKey], None],
) -> dict[str, str] | None:
    """A MERGED field's (`entry.inherit`) keys for a topic: each document's of `chain`
    (nearest first), outermost first, then the topic's own, each document's checked
    by `check` where it is written; None when no document declares the field."""
    out: dict[str, str] | None = None
    for doc in [*reversed(chain), located]:
        given = getattr(doc.model.spec, entry.attr)
        if given is None:
            continue
        check(given, PositionedDiagnostics(doc, diags), entry.spec_path)
        out = {**(out or {}), **given}
    return out
