"""The shape check of a spec document: `msgspec.convert` into the Structs of
`documents.py` (strict types, unknown keys forbidden), then, for a document it
refuses, every problem reported at its line and column.

A well-formed document is one `convert` call. msgspec stops at the first problem, so a
document it refuses is checked field by field (`_Check`): each value is judged by
msgspec against its field's type; a value that fails is reported, then left out (its
default applies) or replaced by a placeholder (a required value), and recorded in
`invalid`, so that the semantic checks still see the rest of the document and stay
quiet about that value; a nested object is checked inside, so that each of its
problems is reported. The repaired document is then converted as a whole.

Messages are this module's, keyed on the field's type and the value, never on
msgspec's wording. Two forms the language accepts but msgspec's strict types do not
are normalised before judging, without a message: a whole number written as a float
(`maxTokens: 1e2` is 100; `1e400` is out of range, as a number too large), and an
integer too large for a float (`refillRatio: 10**400` is infinite, out of range).
"""

from __future__ import annotations

import copy
import math
import types
import typing
from functools import cache
from typing import Any, Literal, NamedTuple

import msgspec

from reconciler.diagnostics import Diagnostics
from reconciler.spec.documents import RECORD_BY_KIND, DurationMs, decode_hook
from reconciler.spec.durations import DurationError, DurationRangeError, parse_duration_ms
from reconciler.spec.values import did_you_mean, type_name
from reconciler.yamlio import Document, PathKey

_DOCUMENT_KEYS = ("apiVersion", "kind")  # checked (and reported) by the loader
_NOT_TEXT = "a duration must be text with a unit, e.g. 500ms, 5s or 1m"
# A whole number written as a float beyond any int64 is out of range, as written.
_HUGE = 10**309


def check_shape(
    kind: str, data: dict[str, Any], doc: Document, diags: Diagnostics, invalid: set[PathKey]
) -> Any:
    """The record of a document of `kind` (a key of `RECORD_BY_KIND`); every shape
    problem reported and its path added to `invalid`."""
    struct = RECORD_BY_KIND[kind]
    try:
        return msgspec.convert(data, struct, dec_hook=decode_hook)
    except msgspec.ValidationError:
        pass
    repaired = copy.deepcopy(data)
    _Check(doc, diags, invalid).struct(struct, repaired, ())
    return msgspec.convert(repaired, struct, dec_hook=decode_hook)


class Field(NamedTuple):
    """A Struct's field as the check reads it."""

    attr: str
    name: str  # as written in a document
    kind: Any  # the type, its `Annotated` metadata left out
    required: bool


@cache
def fields_of(struct: type[msgspec.Struct]) -> dict[str, Field]:
    """The fields of `struct` by the name a document writes them with."""
    return {
        f.encode_name: Field(f.name, f.encode_name, bare(f.type), f.required)
        for f in msgspec.structs.fields(struct)
    }


def bare(kind: Any) -> Any:
    """`kind` without `Annotated` metadata, inside unions too."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        return bare(args[0])
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(bare(a) for a in args)]  # noqa: UP007  # built from a tuple
    return kind


def members(kind: Any) -> tuple[Any, ...]:
    """The members of a union, or the type itself."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return (kind,)


def struct_in(kind: Any) -> type[msgspec.Struct] | None:
    """The Struct a value of this type may be (a union holds one at most)."""
    return next(
        (m for m in members(kind) if isinstance(m, type) and issubclass(m, msgspec.Struct)),
        None,
    )


def placeholder(kind: Any) -> Any:
    """The stand-in for a required value that is missing or failed: the empty value
    of its type (a Literal's first value; a Struct's required fields filled in)."""
    if typing.get_origin(kind) is Literal:
        return typing.get_args(kind)[0]
    struct = struct_in(kind)
    if struct is not None:
        return {f.name: placeholder(f.kind) for f in fields_of(struct).values() if f.required}
    return {str: "", list: [], dict: {}}[typing.get_origin(kind) or kind]


def _accepts(kind: Any, value: Any) -> bool:
    try:
        msgspec.convert(value, kind, dec_hook=decode_hook)
    except msgspec.ValidationError:
        return False
    return True


def _normalised(kind: Any, value: Any) -> Any:
    """A number in the form the strict type takes, when the language accepts it."""
    if type(value) is float and int in members(kind):
        if value.is_integer():
            return int(value)
        if math.isinf(value):
            return _HUGE if value > 0 else -_HUGE
    if type(value) is int and float in members(kind):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _expected(kind: Any) -> str:
    """What a value of this type must be, for a message."""
    simple = {str: "text", bool: "true or false", int: "a whole number", float: "a number",
              list: "a list", dict: "a mapping"}
    for member in members(kind):
        origin = typing.get_origin(member) or member
        if origin in simple:
            return simple[origin]
    return "a mapping"  # a Struct


class _Check:
    """Every problem of one document, reported and repaired in place."""

    def __init__(self, doc: Document, diags: Diagnostics, invalid: set[PathKey]) -> None:
        self.doc, self.diags, self.invalid = doc, diags, invalid

    def struct(self, struct: type[msgspec.Struct], data: dict[str, Any], path: PathKey) -> None:
        fields = fields_of(struct)
        for key in list(data):
            here = (*path, key)
            found = fields.get(key)
            if found is None:
                self._unknown(here, fields)
                del data[key]
            elif not (path == () and key in _DOCUMENT_KEYS):
                self.value(found, data, here)
        for name, found in fields.items():
            if found.required and name not in data:
                m = self.doc.key_mark(path) if path else self.doc.start
                self._error(m.line, m.col, "missing-field",
                            f"{_where((*path, name))} is required but missing")
                data[name] = placeholder(found.kind)
                self.invalid.add((*path, name))

    def value(self, found: Field, parent: dict[str, Any], path: PathKey) -> None:
        """Check the value at `path` (the key `path[-1]` of `parent`)."""
        key = found.name  # path[-1]: a Struct's fields are named by text
        kind, value = found.kind, parent[key]
        struct = struct_in(kind)
        if struct is not None and type(value) is dict:
            self.struct(struct, value, path)
            return
        if _accepts(kind, value):
            return
        normal = _normalised(kind, value)
        if normal is not value and _accepts(kind, normal):
            parent[key] = normal
            return
        # a list or mapping, or one as the member of a union (`list[X] | None`)
        kind = next((m for m in members(kind) if typing.get_origin(m) is type(value)), kind)
        origin = typing.get_origin(kind)
        if origin is list and type(value) is list:
            item = struct_in(bare(typing.get_args(kind)[0]))
            if item is not None:
                self._records(item, value, path)
                return
        if origin in (list, dict) and type(value) is origin:
            self._items(value, path)
            return
        self._report(kind, value, path)
        if found.required:
            parent[key] = placeholder(kind)
        else:
            del parent[key]
        self.invalid.add(path)

    def _records(self, struct: type[msgspec.Struct], value: list[Any], path: PathKey) -> None:
        """The items of a list of objects (the Owner's `acceptedFindings`): each checked
        inside; one that is not a mapping reported and replaced by a placeholder (the
        others keep their positions)."""
        for i, item in enumerate(value):
            here = (*path, i)
            if type(item) is dict:
                self.struct(struct, item, here)
                continue
            self._report(struct, item, here)
            value[i] = placeholder(struct)
            self.invalid.add(here)

    def _items(self, value: list[Any] | dict[str, Any], path: PathKey) -> None:
        """The items of a list or the values of a mapping of text: each that is not
        text is reported; in a list it becomes "" (the others keep their positions),
        in a mapping it is left out."""
        keys = list(range(len(value))) if isinstance(value, list) else list(value)
        for key in keys:
            item = value[key]  # type: ignore[index]
            if type(item) is str:
                continue
            self._report(str, item, (*path, key))
            if isinstance(value, list):
                value[key] = ""  # type: ignore[index]
            else:
                del value[key]  # type: ignore[arg-type]
            self.invalid.add((*path, key))

    def _report(self, kind: Any, value: Any, path: PathKey) -> None:
        where = _where(path)
        m = self.doc.mark_for(path)
        literals: list[Any] = [a for m_ in members(kind) if typing.get_origin(m_) is Literal
                               for a in typing.get_args(m_)]
        if DurationMs in members(kind):
            if type(value) is not str:
                message = _NOT_TEXT
            else:
                try:
                    parse_duration_ms(value)
                    message = _NOT_TEXT  # not reached: msgspec refused it
                except (DurationError, DurationRangeError) as exc:
                    message = str(exc)
            self._error(m.line, m.col, "bad-duration", f"{where}: {message}")
        elif literals and struct_in(kind) is not None:
            choices = ", ".join(f"`{v}`" for v in literals)
            required = " and ".join(
                f.name for f in fields_of(struct_in(kind)).values() if f.required  # type: ignore[arg-type]
            )
            self._error(m.line, m.col, "bad-value",
                        f"{where}: {value!r} is not allowed; write {choices}, or a mapping "
                        f"with {required}")
        elif literals:
            each = [repr(v) for v in literals]
            choices = " or ".join([", ".join(each[:-1]), each[-1]] if len(each) > 1 else each)
            self._error(m.line, m.col, "bad-value",
                        f"{where}: {value!r} is not allowed; write {choices}")
        else:
            expected = _expected(kind)
            if isinstance(value, dict | list):
                message = f"{where} must be {expected}, not a {type_name(value)}"
            else:
                written = self.doc.written(path)
                shown = written if written is not None else repr(value)
                quoted = written is not None and expected == "text"
                quote = f"; quote it: '{written}'" if quoted else ""
                message = f"{where} must be {expected}, not {type_name(value)} {shown}{quote}"
            self._error(m.line, m.col, "wrong-type", message)

    def _unknown(self, path: PathKey, fields: dict[str, Field]) -> None:
        m = self.doc.key_mark(path)
        self._error(
            m.line, m.col, "unknown-field",
            f"unknown field {path[-1]!r} in {_where(path[:-1])}"
            f"{did_you_mean(str(path[-1]), fields)}",
        )
        self.invalid.add(path)

    def _error(self, line: int, col: int, code: str, message: str) -> None:
        self.diags.error(self.doc.file, line, col, code, message)


def _where(path: PathKey) -> str:
    return " > ".join(str(p) for p in path) or "document"
