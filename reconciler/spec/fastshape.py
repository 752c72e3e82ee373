"""The shape check of the common well-formed document, without pydantic: the table in
`documents.py` (generated from the models) interpreted on the loaded YAML data.

It is conservative: it returns the records only when it is certain that the models
would accept the document and produce the same values (strict types: `type(v) is
str`, a bool is no number; aliases only; nothing unknown or missing), and None for
anything else, which then goes to the models (`slowshape.py`) for the verdict and
every diagnostic. Importing pydantic and building the models would be the largest
part of a cold `validate`; a tree without shape errors never needs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from reconciler.spec.durations import parse_duration_ms

Kind = tuple[Any, ...]
Checker = Callable[[Any], Any]
# Whole numbers beyond this go to the models (they also accept huge ones, as range errors).
_WHOLE_LIMIT = 2**63
_SIMPLE_TYPES: dict[str, set[type]] = {
    "str": {str}, "bool": {bool}, "whole": {int, float}, "number": {int, float},
    "duration": {str}, "list_str": {list}, "dict_str_str": {dict}, "none": {type(None)},
    "model": {dict},
}


class _Reject(Exception):
    """Not certain: the models decide."""


def accepted_types(kind: Kind) -> set[type]:
    """The Python types a value of this kind may have (a union's members must not
    share one, so that the fast check can pick the member by type as pydantic does)."""
    if kind[0] == "literal":
        return {type(v) for v in kind[1]}
    if kind[0] == "union":
        return {t for member in kind[1] for t in accepted_types(member)}
    return _SIMPLE_TYPES[kind[0]]


def _str(v: Any) -> Any:
    if type(v) is str:
        return v
    raise _Reject


def _bool(v: Any) -> Any:
    if type(v) is bool:
        return v
    raise _Reject


def _none(v: Any) -> Any:
    if v is None:
        return v
    raise _Reject


def _whole(v: Any) -> Any:
    """`models._whole` then a strict int: 100.0 is 100."""
    t = type(v)
    if t is int and -_WHOLE_LIMIT < v < _WHOLE_LIMIT:
        return v
    if t is float and v.is_integer() and -_WHOLE_LIMIT < v < _WHOLE_LIMIT:
        return int(v)
    raise _Reject


def _number(v: Any) -> Any:
    """`models._number` then a strict float; infinities and NaN go to the models."""
    t = type(v)
    if t is float and math.isfinite(v):
        return v
    if t is int:
        try:
            return float(v)
        except OverflowError:
            raise _Reject from None
    raise _Reject


def _duration(v: Any) -> Any:
    if type(v) is str:
        try:
            return parse_duration_ms(v)
        except ValueError:  # DurationError, DurationRangeError: the models word them
            raise _Reject from None
    raise _Reject


def _list_str(v: Any) -> Any:
    if type(v) is list and all(type(item) is str for item in v):
        return v
    raise _Reject


def _dict_str_str(v: Any) -> Any:
    if type(v) is dict and all(type(k) is str and type(x) is str for k, x in v.items()):
        return v
    raise _Reject


_SIMPLE: dict[str, Checker] = {
    "str": _str, "bool": _bool, "none": _none, "whole": _whole, "number": _number,
    "duration": _duration, "list_str": _list_str, "dict_str_str": _dict_str_str,
}


class _Compiler:
    """Turns the table into one checker per model (each compiled once)."""

    def __init__(self, shapes: dict[str, tuple[tuple[Any, ...], ...]],
                 records: dict[str, type[Any]]) -> None:
        self.shapes, self.records = shapes, records
        self.models: dict[str, Checker] = {}

    def kind(self, kind: Kind) -> Checker:
        if kind[0] in _SIMPLE:
            return _SIMPLE[kind[0]]
        if kind[0] == "literal":
            return _literal(frozenset(kind[1]))
        if kind[0] == "union":
            by_type = {t: self.kind(m) for m in kind[1] for t in accepted_types(m)}
            return _union(by_type)
        if kind[0] == "model":
            return self.model(kind[1])
        raise ValueError(f"unknown kind {kind!r}; regenerate documents.py")

    def model(self, name: str) -> Checker:
        if name not in self.models:
            fields = {alias: (attr, self.kind(kind)) for alias, attr, _, kind in self.shapes[name]}
            required = tuple(attr for _, attr, default, _ in self.shapes[name]
                             if default[0] == "required")
            self.models[name] = _model(self.records[name], fields, required)
        return self.models[name]


def _literal(values: frozenset[str]) -> Checker:
    def check(v: Any) -> Any:
        if type(v) is str and v in values:
            return v
        raise _Reject
    return check


def _union(by_type: dict[type, Checker]) -> Checker:
    def check(v: Any) -> Any:
        member = by_type.get(type(v))
        if member is None:
            raise _Reject
        return member(v)
    return check


def _model(record: type[Any], fields: dict[str, tuple[str, Checker]],
           required: tuple[str, ...]) -> Checker:
    def check(v: Any) -> Any:
        if type(v) is not dict:
            raise _Reject
        values = {}
        for key, value in v.items():
            found = fields.get(key)
            if found is None:  # unknown, or the attribute name instead of the alias
                raise _Reject
            values[found[0]] = found[1](value)
        for attr in required:
            if attr not in values:
                raise _Reject
        return record(**values)  # left out: the record's defaults are the models'
    return check


_BY_KIND: dict[str, Checker] = {}


def fast_record(kind: str, data: Any) -> Any:
    """The record of a document of `kind`, or None when the models must decide."""
    if not _BY_KIND:
        from reconciler.spec.documents import RECORD_BY_KIND, RECORDS, SHAPES

        compiler = _Compiler(SHAPES, RECORDS)
        _BY_KIND.update({k: compiler.model(r.__name__) for k, r in RECORD_BY_KIND.items()})
    check = _BY_KIND.get(kind)
    if check is None:
        return None
    try:
        return check(data)
    except _Reject:
        return None
