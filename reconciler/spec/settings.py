"""A topic's retention, encryption key and schema settings: each taken from the topic,
else from the nearest Defaults document that sets it, checked with the service's rules
(`reconciler/topicrules.py`, which the local server applies too) and reported at the
line of the document that declares it; the desired state holds each in the service's
canonical form (`2d` becomes `172800s`), None when no document declares it (unmanaged).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reconciler.diagnostics import Diagnostics
from reconciler.spec.documents import DefaultsDoc, SchemaSettingsSpec, TopicDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.topic import SchemaSettings
from reconciler.topicrules import (
    DurationProblem,
    canonical_retention,
    encoding_problem,
    kms_key_problem,
    schema_name_problem,
)
from reconciler.yamlio import PathKey

RETENTION: PathKey = ("spec", "messageRetentionDuration")
KMS_KEY: PathKey = ("spec", "kmsKeyName")
SCHEMA: PathKey = ("spec", "schemaSettings")


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """The three fields as the desired state holds them (None: unmanaged)."""

    retention: str | None = None
    kms_key_name: str | None = None
    schema_settings: SchemaSettings | None = None


_UNMANAGED = TopicSettings()


def check_settings(
    located: Located[TopicDoc], chain: list[Located[DefaultsDoc]], diags: Diagnostics
) -> TopicSettings:
    spec = located.model.spec
    retention, kms = spec.message_retention_duration, spec.kms_key_name
    schema = spec.schema_settings
    if retention is None and kms is None and schema is None and not chain:
        return _UNMANAGED  # the common case: nothing to look up
    rep = PositionedDiagnostics(located, diags)
    return TopicSettings(
        _retention(*_declared(retention, "message_retention_duration", RETENTION, rep, chain)),
        _kms_key(*_declared(kms, "kms_key_name", KMS_KEY, rep, chain)),
        _schema(*_declared(schema, "schema_settings", SCHEMA, rep, chain)),
    )


def _declared(
    value: Any, attr: str, path: PathKey, rep: PositionedDiagnostics, chain: list[Located[DefaultsDoc]]
) -> tuple[Any, PositionedDiagnostics]:
    """The topic's own value, else the nearest Defaults document's (a value of the
    topic's that did not parse is not replaced by a default: it was reported)."""
    if value is not None or rep.silent(path):
        return value, rep
    for defaults in chain:
        found = getattr(defaults.model.spec, attr)
        if found is not None:
            return found, PositionedDiagnostics(defaults, rep.diags)
    return None, rep


def _retention(text: str | None, rep: PositionedDiagnostics) -> str | None:
    if text is None:
        return None
    try:
        return canonical_retention(text)
    except DurationProblem as exc:
        rep.error(RETENTION, "retention", f"messageRetentionDuration: {exc}")
        return None


@lru_cache(maxsize=1024)  # a tree uses a few keys
def _key_problem(name: str) -> str | None:
    return kms_key_problem(name)


def _kms_key(name: str | None, rep: PositionedDiagnostics) -> str | None:
    """The name as declared; a malformed one is reported (and the topic, having an
    error, is not planned), but still counts as declared for the CMEK checks."""
    if name is not None and (problem := _key_problem(name)):
        rep.error(KMS_KEY, "kms-key-name", problem)
    return name


@lru_cache(maxsize=1024)  # a tree uses a few schemas: one check and one value each
def _checked(
    schema: str, encoding: str, first: str, last: str
) -> tuple[SchemaSettings | None, tuple[tuple[str, str, str], ...]]:
    problems = []
    if problem := schema_name_problem(schema):
        problems.append(("schema", "schema-name", problem))
    if problem := encoding_problem(encoding):
        problems.append(("encoding", "schema-encoding", problem))
    settings = None if problems else SchemaSettings(schema, encoding, first, last)
    return settings, tuple(problems)


def _schema(model: SchemaSettingsSpec | None, rep: PositionedDiagnostics) -> SchemaSettings | None:
    """Revision IDs are taken as written ("" = that side open): their format is not
    documented, and whether they exist only the service can say."""
    if model is None:
        return None
    settings, problems = _checked(
        model.schema_, model.encoding, model.first_revision_id or "", model.last_revision_id or ""
    )
    for key, code, message in problems:
        rep.error((*SCHEMA, key), code, message)
    return settings
