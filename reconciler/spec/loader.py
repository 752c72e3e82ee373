"""Files -> YAML documents -> typed spec documents, every problem kept as a diagnostic.

One pass: a value that fails the shape check is reported, then left out (its default
applies) or replaced by a placeholder, and the document is validated again, so that
the semantic checks still see every other field of it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from reconciler.diagnostics import Diagnostics
from reconciler.spec.discover import SNAPSHOT_NAMES, SPEC_SUFFIXES, discover_tree, find_snapshot
from reconciler.spec.errormap import did_you_mean, error_paths, report_validation_error, type_name
from reconciler.spec.models import (
    API_VERSION,
    KINDS,
    MODEL_BY_KIND,
    HedgingProfileDoc,
    TopicDoc,
)
from reconciler.spec.tree import Located, SpecTree
from reconciler.yamlio import Document, PathKey, YamlProblem, load_documents

__all__ = [
    "SNAPSHOT_NAMES",
    "SPEC_SUFFIXES",
    "Located",
    "SpecTree",
    "discover",
    "find_snapshot",
    "load_tree",
]

# Placeholders for required values that failed (or are missing), by key.
_PLACEHOLDERS: dict[str, Any] = {"name": "", "metadata": {}, "allowedPersistenceRegions": []}
_MAX_REPAIRS = 4
_VALID: frozenset[PathKey] = frozenset()


def discover(paths: Sequence[Path], diags: Diagnostics) -> tuple[list[Path], Path | None]:
    """Spec files under `paths` and the snapshot found for them (see discover_tree)."""
    found = discover_tree(paths, diags)
    return found.files, found.snapshot


def load_tree(
    paths: Sequence[Path],
    diags: Diagnostics,
    on_document: Callable[[str | None], None] | None = None,
) -> SpecTree:
    """Every spec document under `paths`. `on_document` is told of each Topic document
    as it is loaded (its project, None when a Defaults gives it) and of each Defaults
    that names a project: `plan` starts reading those projects meanwhile."""
    found = discover_tree(paths, diags)
    tree = SpecTree(
        snapshot=found.snapshot, snapshot_looked=found.snapshot_looked, files=len(found.files)
    )
    for path in found.files:
        display = str(path)
        try:
            documents = load_documents(path, display=display, positions=False)
        except YamlProblem as exc:
            diags.error(display, exc.mark.line, exc.mark.col, exc.code, exc.message)
            continue
        if not documents or all(d.data is None for d in documents):
            diags.warning(display, 1, 1, "empty-file", "the file holds no spec documents")
            continue
        for doc in documents:
            for code, message, line, col in doc.problems:
                diags.error(doc.file, line, col, code, message)
            topics, defaults = len(tree.topics), len(tree.defaults)
            _load_document(doc, path, tree, diags)
            if on_document is not None:
                _tell(on_document, tree, topics, defaults)
            doc.release()  # validated: the data is re-read only if a message needs it
    return tree


def _tell(
    on_document: Callable[[str | None], None], tree: SpecTree, topics: int, defaults: int
) -> None:
    """Tell `on_document` of the document just loaded, if it was a Topic or a Defaults
    naming a project (the tree's lists were `topics` and `defaults` long before)."""
    if len(tree.topics) > topics:
        on_document(tree.topics[-1].model.metadata.project)
    elif len(tree.defaults) > defaults and tree.defaults[-1].model.spec.project:
        on_document(tree.defaults[-1].model.spec.project)


def _load_document(doc: Document, path: Path, tree: SpecTree, diags: Diagnostics) -> None:
    data = doc.data
    if data is None:
        return
    if not isinstance(data, dict):
        diags.error(
            doc.file, doc.start.line, doc.start.col, "not-a-mapping",
            f"a spec document must be a mapping with apiVersion and kind, not a "
            f"{type_name(data)}",
        )
        return
    invalid: set[PathKey] = set()
    version = data.get("apiVersion")
    if "apiVersion" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-api-version",
            f"the document has no apiVersion; add `apiVersion: {API_VERSION}`",
        )
        invalid.add(("apiVersion",))
    elif version != API_VERSION:
        m = doc.mark_for(("apiVersion",))
        diags.error(
            doc.file, m.line, m.col, "unknown-api-version",
            f"unknown apiVersion {version!r}; this reconcile reads {API_VERSION!r}",
        )
        invalid.add(("apiVersion",))
    kind = data.get("kind")
    if "kind" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-kind",
            f"the document has no kind; add one of: {', '.join(KINDS)}",
        )
        return
    if not isinstance(kind, str) or kind not in MODEL_BY_KIND:
        m = doc.mark_for(("kind",))
        hint = did_you_mean(str(kind), KINDS)
        diags.error(
            doc.file, m.line, m.col, "unknown-kind",
            f"unknown kind {kind!r}; expected one of: {', '.join(KINDS)}{hint}",
        )
        return
    model_cls = MODEL_BY_KIND[kind]
    if invalid:
        data = {**data, "apiVersion": API_VERSION}
    model = _validate(model_cls, data, doc, diags, invalid)
    if model is None:
        return
    _share_fields_set(model)
    located = Located(model, doc, path, frozenset(invalid) if invalid else _VALID)
    if isinstance(model, TopicDoc):
        tree.topics.append(located)  # type: ignore[arg-type]
    elif isinstance(model, HedgingProfileDoc):
        tree.profiles.append(located)  # type: ignore[arg-type]
    else:
        tree.defaults.append(located)  # type: ignore[arg-type]


# One set object per distinct combination of fields set (models are never assigned to
# after loading): a large tree holds ~6 models a topic, and a small set is 216 bytes.
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def _share_fields_set(model: BaseModel) -> None:
    key = frozenset(model.__pydantic_fields_set__)
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        shared = _FIELDS_SETS.setdefault(key, set(key))
    object.__setattr__(model, "__pydantic_fields_set__", shared)
    for value in model.__dict__.values():
        if isinstance(value, BaseModel):
            _share_fields_set(value)


def _validate(
    model_cls: type[BaseModel],
    data: dict[str, Any],
    doc: Document,
    diags: Diagnostics,
    invalid: set[PathKey],
) -> BaseModel | None:
    """The model of `data`; on shape errors, report them, then repair the data (drop or
    replace each bad value, recorded in `invalid`) and validate again."""
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        report_validation_error(exc, doc, model_cls, diags)
        errors = error_paths(exc, data)
    repaired = copy.deepcopy(data)
    for _ in range(_MAX_REPAIRS):
        if not any(_repair(repaired, path, etype, invalid) for path, etype in errors):
            return None
        try:
            return model_cls.model_validate(repaired)
        except ValidationError as exc:
            errors = error_paths(exc, repaired)
    return None


def _repair(data: dict[str, Any], path: PathKey, etype: str, invalid: set[PathKey]) -> bool:
    """Drop or replace the value at `path`; False when there is nothing to repair."""
    if not path or path in (("kind",), ("apiVersion",)):
        return False
    parent: Any = data
    for part in path[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return False
    last = path[-1]
    if etype == "missing":
        if not isinstance(parent, dict) or not isinstance(last, str):
            return False
        if last not in _PLACEHOLDERS or last in parent:
            return False
        parent[last] = copy.deepcopy(_PLACEHOLDERS[last])
    elif isinstance(parent, dict) and last in parent:
        if last in _PLACEHOLDERS and parent[last] == _PLACEHOLDERS[last]:
            return False
        if last in _PLACEHOLDERS:
            parent[last] = copy.deepcopy(_PLACEHOLDERS[last])
        else:
            del parent[last]
    elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        if parent[last] == "":
            return False
        parent[last] = ""  # keeps the positions of the other items
    else:
        return False
    invalid.add(path)
    return True
