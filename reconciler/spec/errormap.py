"""Pydantic errors -> positioned diagnostics, keyed on the error *type*, never on its
English text, each at the file, line and column of the offending key or value."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from reconciler.diagnostics import Diagnostics
from reconciler.spec.values import did_you_mean, type_name, value_at
from reconciler.yamlio import Document, PathKey

_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def error_paths(exc: ValidationError, data: Any) -> list[tuple[PathKey, str]]:
    """(data path, error type) of each error, union-branch noise left out."""
    out = []
    for error in exc.errors(include_url=False):
        path = data_path(data, error["loc"], error["type"])
        if path is not None:
            out.append((path, error["type"]))
    return out


def report_validation_error(
    exc: ValidationError, doc: Document, model_cls: type[BaseModel], diags: Diagnostics
) -> None:
    """Map each pydantic error to a positioned diagnostic, keyed on the error type."""
    for error in exc.errors(include_url=False):
        path = data_path(doc.data, error["loc"], error["type"])
        if path is None:
            continue  # the error belongs to a union branch the input did not take
        etype = error["type"]
        if path in (("kind",), ("apiVersion",)):
            continue  # reported by the apiVersion/kind checks
        where = " > ".join(str(p) for p in path) or "document"
        if etype == "extra_forbidden":
            m = doc.key_mark(path)
            known = _field_names(model_cls, path[:-1])
            diags.error(
                doc.file, m.line, m.col, "unknown-field",
                f"unknown field {path[-1]!r} in {' > '.join(map(str, path[:-1])) or 'document'}"
                f"{did_you_mean(str(path[-1]), known)}",
            )
        elif etype == "missing":
            m = doc.key_mark(path[:-1]) if path[:-1] else doc.start
            diags.error(
                doc.file, m.line, m.col, "missing-field",
                f"{where} is required but missing",
            )
        elif etype in ("duration", "duration_range"):
            m = doc.mark_for(path)
            diags.error(doc.file, m.line, m.col, "bad-duration", f"{where}: {error['msg']}")
        elif etype == "literal_error":
            m = doc.mark_for(path)
            value = value_at(doc.data, path)
            if path[-1] == "messageStoragePolicy":
                choices = "`inherit`, or a mapping with allowedPersistenceRegions"
            else:  # pydantic's words: 'JSON' or 'BINARY'
                choices = str((error.get("ctx") or {}).get("expected", "an allowed value"))
            diags.error(
                doc.file, m.line, m.col, "bad-value",
                f"{where}: {value!r} is not allowed; write {choices}",
            )
        elif etype in _EXPECTED:
            m = doc.mark_for(path)
            value = value_at(doc.data, path)
            written = doc.raw.get(path)
            shown = written if written is not None else repr(value)
            quote = (
                f"; quote it: '{written}'"
                if written is not None and _EXPECTED[etype] == "text"
                else ""
            )
            diags.error(
                doc.file, m.line, m.col, "wrong-type",
                f"{where} must be {_EXPECTED[etype]}, not {type_name(value)} {shown}{quote}"
                if not isinstance(value, dict | list)
                else f"{where} must be {_EXPECTED[etype]}, not a {type_name(value)}",
            )
        else:
            m = doc.mark_for(path)
            diags.error(doc.file, m.line, m.col, "bad-value", f"{where}: {error['msg']}")


def data_path(data: Any, loc: tuple[Any, ...], etype: str) -> tuple[str | int, ...] | None:
    """Drop pydantic's union-branch segments from `loc`; None when the error is about a
    branch that does not match the input's shape (the other branch reports it)."""
    out: list[str | int] = []
    current = data
    for i, part in enumerate(loc):
        if isinstance(current, dict) and part in current:
            current = current[part]
            out.append(part)
            continue
        if isinstance(current, list) and isinstance(part, int):
            current = current[part] if part < len(current) else None
            out.append(part)
            continue
        is_last = i == len(loc) - 1
        if is_last and etype in ("missing", "extra_forbidden"):
            out.append(part)
            continue
        # A union branch tag such as 'str', "literal['inherit']" or a model name.
        tag = str(part)
        if isinstance(current, dict) and (tag in ("str",) or tag.startswith("literal[")):
            return None
        if not isinstance(current, dict) and tag[:1].isupper():
            return None
    return tuple(out)


def _field_names(model_cls: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Aliases of the model found at `path`, for did-you-mean suggestions."""
    current: Any = model_cls
    for part in path:
        if isinstance(part, int):
            continue
        fields = {(f.alias or n): f for n, f in current.model_fields.items()}
        if part not in fields:
            return []
        annotation = fields[part].annotation
        current = _first_model(annotation)
        if current is None:
            return []
    return [(f.alias or n) for n, f in current.model_fields.items()]


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _first_model(arg)
        if found is not None:
            return found
    return None
