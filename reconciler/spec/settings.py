"""A topic's retention, encryption key and schema settings: each taken from the topic,
else from the nearest Defaults document that sets it, checked with the service's rules
(`reconciler/topicrules.py`, which the local server applies too) and reported at the
line of the document that declares it; the desired state holds each in the service's
canonical form (`2d` becomes `172800s`), None when no document declares it (unmanaged).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from reconciler.diagnostics import Diagnostics
from reconciler.spec.defaults import nearest
from reconciler.spec.documents import DefaultsDoc, SchemaSettingsSpec, TopicDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.topic import SchemaSettings
from reconciler.topicfields import KMS_KEY, RETENTION, SCHEMA_SETTINGS
from reconciler.topicrules import (
    DurationProblem,
    canonical_retention,
    encoding_problem,
    kms_key_problem,
    schema_name_problem,
)
from reconciler.yamlio import PathKey

RETENTION_PATH: PathKey = RETENTION.spec_path
KMS_KEY_PATH: PathKey = KMS_KEY.spec_path
SCHEMA_PATH: PathKey = SCHEMA_SETTINGS.spec_path


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """The three fields as the desired state holds them (None: unmanaged)."""

    retention: str | None = None
    kms_key_name: str | None = None
    schema_settings: SchemaSettings | None = None


_UNMANAGED = TopicSettings()
Problem = tuple[PathKey, str, str]  # (path, code, message)
SchemaKey = tuple[str, str, str, str]


def check_settings(
    located: Located[TopicDoc], chain: list[Located[DefaultsDoc]], diags: Diagnostics
) -> TopicSettings:
    spec = located.model.spec
    retention, kms = spec.message_retention_duration, spec.kms_key_name
    schema = spec.schema_settings
    if not chain:  # the common case: every value is the topic's own
        if retention is None and kms is None and schema is None:
            return _UNMANAGED
        settings, problems = _evaluate(retention, kms, _schema_key(schema))
        if problems:
            rep = PositionedDiagnostics(located, diags)
            for path, code, message in problems:
                rep.error(path, code, message)
        return settings
    rep = PositionedDiagnostics(located, diags)
    retention, retention_rep = nearest(retention, RETENTION, rep, chain)
    kms, kms_rep = nearest(kms, KMS_KEY, rep, chain)
    schema, schema_rep = nearest(schema, SCHEMA_SETTINGS, rep, chain)
    settings, problems = _evaluate(retention, kms, _schema_key(schema))
    reps = {RETENTION_PATH: retention_rep, KMS_KEY_PATH: kms_rep, SCHEMA_PATH: schema_rep}
    for path, code, message in problems:
        reps[path[:2]].error(path, code, message)
    return settings


def _schema_key(model: SchemaSettingsSpec | None) -> SchemaKey | None:
    """Revision IDs are taken as written ("" = that side open): their format is not
    documented, and whether they exist only the service can say."""
    if model is None:
        return None
    return (model.schema_, model.encoding, model.first_revision_id or "",
            model.last_revision_id or "")


@lru_cache(maxsize=4096)  # a tree repeats a few combinations: checked once each
def _evaluate(
    retention: str | None, kms: str | None, schema: SchemaKey | None
) -> tuple[TopicSettings, tuple[Problem, ...]]:
    """The canonical values and the problems of one combination. A malformed key is
    reported but kept: it still counts as declared for the CMEK checks (the topic,
    having an error, is not planned)."""
    problems: list[Problem] = []
    canonical = None
    if retention is not None:
        try:
            canonical = canonical_retention(retention)
        except DurationProblem as exc:
            problems.append((RETENTION_PATH, "retention", f"{RETENTION.spec}: {exc}"))
    if kms is not None and (problem := kms_key_problem(kms)):
        problems.append((KMS_KEY_PATH, "kms-key-name", problem))
    settings = None
    if schema is not None:
        name, encoding, first, last = schema
        if problem := schema_name_problem(name):
            problems.append(((*SCHEMA_PATH, "schema"), "schema-name", problem))
        if problem := encoding_problem(encoding):
            problems.append(((*SCHEMA_PATH, "encoding"), "schema-encoding", problem))
        if all(p[0][:2] != SCHEMA_PATH for p in problems):
            settings = SchemaSettings(name, encoding, first, last)
    return TopicSettings(canonical, kms, settings), tuple(problems)
