"""The shape check by the pydantic models, for every document the fast check
(`fastshape.py`) is not sure of: the verdict, every shape diagnostic with its
position, and the repairs that let the semantic checks still see the rest of a broken
document. Imported only when needed (importing pydantic and building the models would
be the largest part of a cold `validate`).

One pass: a value that fails the shape check is reported, then left out (its default
applies) or replaced by a placeholder, and the document is validated again.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

from reconciler.diagnostics import Diagnostics
from reconciler.spec.documents import RECORDS, SHAPES
from reconciler.spec.errormap import error_paths, report_validation_error
from reconciler.spec.models import MODEL_BY_KIND
from reconciler.yamlio import Document, PathKey

_MAX_REPAIRS = 4
_DOCUMENT_KEYS = ("apiVersion", "kind")  # never repaired: the document checks report them
_EMPTY = {"str": "", "list_str": [], "dict_str_str": {}, "model": {}}


def _placeholders() -> dict[str, Any]:
    """The stand-in for a required value that failed (or is missing), by key: the empty
    value of its kind, from the models' shape table."""
    out: dict[str, Any] = {}
    for fields in SHAPES.values():
        for alias, _, default, kind in fields:
            if default[0] != "required" or alias in _DOCUMENT_KEYS:
                continue
            # a literal's stand-in is its first value; another kind without an empty
            # value: extend _EMPTY
            empty = kind[1][0] if kind[0] == "literal" else _EMPTY[kind[0]]
            if out.setdefault(alias, empty) != empty:
                raise AssertionError(f"required {alias!r} fields of two kinds")
    return out


_PLACEHOLDERS = _placeholders()


def slow_record(
    kind: str, data: dict[str, Any], doc: Document, diags: Diagnostics, invalid: set[PathKey]
) -> Any:
    """The record of a document validated by its model (None when it cannot be
    repaired); shape errors are reported and their paths added to `invalid`."""
    model = _validate(MODEL_BY_KIND[kind], data, doc, diags, invalid)
    return None if model is None else to_record(model)


def to_record(value: Any) -> Any:
    """A validated model as the records the checks read (the same table drives the
    fast check, so both give equal records for the same document)."""
    if isinstance(value, BaseModel):
        name = type(value).__name__
        return RECORDS[name](
            **{attr: to_record(getattr(value, attr)) for _, attr, _, _ in SHAPES[name]}
        )
    return value


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
    if not path or (len(path) == 1 and path[0] in _DOCUMENT_KEYS):
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
