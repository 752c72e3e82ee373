"""The documents the tool writes and reads, as JSON, and their JSON Schemas: one
mechanism, pydantic, for the plan (its file and `--format json`), the residency report
and apply's outcome.

A document's model is a set of plain dataclasses (cheap to build for the code that
makes them: a plan holds one per declared topic). pydantic reads their annotations
once per root class (a `TypeAdapter`), and from that come the document, the strict
reading of one and its published schema, so that a field added to a model is written,
read, checked and documented without another edit:

    to_data(obj) -> dict                 the JSON value, members in their declared order
    from_json(cls, text) -> obj          every member of the type the model says
        DocumentError(where, what)       the first one that is not, e.g.
                                         ("resource_changes[2].change.actions", "missing")
    json_schema(cls, ...) -> dict        draft 2020-12, objects left open

What the annotations may say besides the types (pydantic's `Field(description=...,
exclude_if=is_empty)` and these markers):

    Items[T]             a read-only sequence in Python, a JSON array
    Table[V]             a read-only mapping with string keys, a JSON object
    As(T)                read, written and documented as T (e.g. a TypedDict for a
                         mapping the code treats as plain data)

(what these three read is read-only: reconciler/frozen.py)
    Matching(regex, what), Exactly(n, what)
                         constraints whose reader's message says "expected WHAT"
    OneOf(values)        a string that is one of these (its Python type stays `str`)
    Kept(name)           the value read is also handed to the reader (`from_json`'s
                         `kept`), for a member the model derives and so replaces
    Whole()              a dataclass read only whole (what `Record`, the base of a
                         read document's classes, says of its subclasses)

A model class's own `__pydantic_config__` is inherited by the classes it holds that do
not declare one. Objects have exactly their model's members when read; the published
schema leaves them open, since readers of a document ignore keys they do not know and a
minor format version may add some.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from reconciler.frozen import FrozenDict, FrozenList, ReadOnly, freeze

T = TypeVar("T")
V = TypeVar("V")


# -- markers ------------------------------------------------------------------------


class _ReadOnlyList:
    """`Sequence[T]` handled as `list[T]` (pydantic writes a list many times faster
    than a value it must treat as any sequence) and read as a read-only list."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        args = typing.get_args(source)
        form = list[args[0]] if args else list  # type: ignore[valid-type]
        return core_schema.no_info_after_validator_function(
            FrozenList, handler.generate_schema(form)
        )


class _ReadOnlyDict:
    """`Mapping[str, V]` handled as `dict[str, V]` and read as a read-only dict (as
    `_ReadOnlyList`)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        args = typing.get_args(source)
        form = dict[str, args[1]] if args else dict  # type: ignore[valid-type]
        return core_schema.no_info_after_validator_function(
            FrozenDict, handler.generate_schema(form)
        )


Items = Annotated[Sequence[T], _ReadOnlyList()]
Table = Annotated[Mapping[str, V], _ReadOnlyDict()]


@dataclass(frozen=True)
class As:
    """Read, written and documented as `form`; read as a read-only value."""

    form: Any

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            freeze, handler.generate_schema(self.form)
        )


@dataclass(frozen=True)
class Matching:
    """A string matching `regex` in full; a reader is told "expected WHAT"."""

    regex: str
    what: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.custom_error_schema(
            core_schema.str_schema(pattern=f"^(?:{self.regex})$"),
            custom_error_type="expected",
            custom_error_message=f"expected {self.what}",
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "pattern": f"^{self.regex}$"}

    def matches(self, value: str) -> bool:
        return re.fullmatch(self.regex, value) is not None


@dataclass(frozen=True)
class Exactly:
    """A list of exactly `count` items; a reader is told "expected WHAT"."""

    count: int
    what: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        count, what = self.count, self.what

        def check(value: Sequence[Any]) -> Sequence[Any]:
            if len(value) != count:
                raise PydanticCustomError("expected", "expected {what}", {"what": what})
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["minItems"] = out["maxItems"] = self.count
        return out


@dataclass(frozen=True)
class OneOf:
    """A string that is one of `values`."""

    values: tuple[str, ...]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.literal_schema(list(self.values))


@dataclass(frozen=True)
class Kept:
    """The value read for this member is also put in the reader's `kept[name]`: the
    model derives the member when the object is made, so the reader compares."""

    name: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        name = self.name

        def keep(value: Any, info: core_schema.ValidationInfo) -> Any:
            if isinstance(info.context, dict):
                info.context[name] = value
            return value

        return core_schema.with_info_after_validator_function(keep, handler(source))


def is_empty(value: Any) -> bool:
    """For `Field(exclude_if=is_empty)`: a member left out of the document when empty
    (and which may then be absent when read)."""
    return not value


def _whole(cls: type, schema: CoreSchema) -> CoreSchema:
    """`schema` of the dataclass `cls`, read only whole: every member present but those
    left out when empty, even where the class has a default for the code that makes it
    (a key missing from a file is damage, not a default)."""
    required = _written_always(cls)

    def whole(value: Any) -> Any:
        if isinstance(value, dict):
            for name in required:
                if name not in value:
                    raise PydanticCustomError("member_missing", "missing", {"member": name})
        return value

    return core_schema.no_info_before_validator_function(whole, schema)


class Whole:
    """A dataclass member read only whole (see `Record`), for a class that is not a
    `Record` itself (one that also serves code that imports no pydantic)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return _whole(source, handler(source))


class Record(ReadOnly):
    """Base of the frozen dataclasses of a document that is read back (a plan): read
    only whole, and read-only once made (reconciler/frozen.py)."""

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return _whole(cls, handler(source))


def _written_always(cls: type) -> tuple[str, ...]:
    """The members of a dataclass the document always has: all but those declared
    `Field(exclude_if=...)`."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        meta = getattr(hints[f.name], "__metadata__", ())
        if not any(isinstance(m, FieldInfo) and m.exclude_if is not None for m in meta):
            out.append(f.name)
    return tuple(out)


# -- the document ------------------------------------------------------------------


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    """pydantic's reading of `cls`'s annotations, made once per class."""
    found = _ADAPTERS.get(cls)
    if found is None:
        found = _ADAPTERS[cls] = TypeAdapter(cls)
    return found


def to_data(obj: Any) -> Any:
    """The JSON value of a model object: plain dicts, lists, strings, numbers, booleans
    and nulls, new ones the caller may keep or change."""
    return _adapter(type(obj)).dump_python(obj, mode="json")


class DocumentError(ValueError):
    """A document that is not what its model writes: `where` is the first bad member's
    path (`a.b[2].c`; "" for the document itself), `what` what was wrong with it."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where = where
        self.what = what


def from_json(cls: type[T], text: bytes | str, kept: dict[str, Any] | None = None) -> T:
    """The object of `cls` a JSON document describes, read strictly (no value converted
    to another type), or DocumentError at its first problem; `kept` receives the
    values read for the members marked `Kept`."""
    try:
        result: T = _adapter(cls).validate_json(text, strict=True, context=kept)
    except ValidationError as exc:
        raise problem(exc) from None
    return result


def problem(exc: ValidationError) -> DocumentError:
    """pydantic's first error, said in terms of JSON, keyed on the error's type."""
    error = exc.errors(include_url=False)[0]
    loc = error["loc"]
    if error["type"] == "member_missing":  # said by the object it is missing from
        loc = (*loc, error["ctx"]["member"])
    return DocumentError(_where(loc), _what(error))


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_KINDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "dataclass_type": "an object",
    "dataclass_exact_type": "an object",
}


def _found(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _what(error: Any) -> str:
    kind = error["type"]
    if kind in ("missing", "member_missing"):
        return "missing"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        return "unknown field"
    if kind in _KINDS:
        return f"expected {_KINDS[kind]}, found {_found(error['input'])}"
    if kind in ("literal_error", "enum"):
        return f"expected one of {error['ctx']['expected']}, found {error['input']!r:.60}"
    message: str = error["msg"]  # the markers' own messages, and anything else pydantic says
    return message


# -- the published schema ------------------------------------------------------------


class _Published(GenerateJsonSchema):
    """Each object's description is the first paragraph of its class's docstring, on
    one line; members have descriptions but no titles or defaults (the document always
    writes them); objects are left open."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        return _open(super().dataclass_schema(schema), schema["cls"])

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        return _open(super().typed_dict_schema(schema), schema.get("cls"))

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if set(inner) == {"type"} and isinstance(inner["type"], str):
            return {"type": [inner["type"], "null"]}  # the short form of a nullable scalar
        return super().nullable_schema(schema)

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        out = super().dict_schema(schema)
        if out.get("additionalProperties") is True:
            del out["additionalProperties"]
        return out


def _open(out: JsonSchemaValue, cls: Any) -> JsonSchemaValue:
    out.pop("additionalProperties", None)
    text = " ".join(((getattr(cls, "__doc__", None) or "").strip().split("\n\n")[0]).split())
    if text and not text.startswith(f"{getattr(cls, '__name__', '')}("):  # not dataclasses'
        out["description"] = text
    else:
        out.pop("description", None)
    return out


def json_schema(cls: Any, schema_id: str, title: str, description: str) -> dict[str, Any]:
    """The published JSON Schema of the documents of `cls`, as they are written
    (members left out when empty are not required)."""
    body = _adapter(cls).json_schema(mode="serialization", schema_generator=_Published)
    defs = body.pop("$defs", {})
    body.pop("description", None)
    body.pop("title", None)
    for definition in defs.values():
        definition.pop("title", None)  # its name is its key
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        "description": description,
        **body,
        "$defs": dict(sorted(defs.items())),
    }

