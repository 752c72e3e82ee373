"""The plan format, read from the plan model's own annotations (plan/model.py).

The model's dataclasses are the one description of the plan file: every field's type,
its description, its constraints and whether it is derived. This module turns them
into a tree of nodes once, and from that tree come the plan's JSON document
(`encoder`), the reading of a plan file back into the model (`decoder`), the reader's
shape check and the published JSON Schema (plan/planschema.py). A field added to the
model is therefore written, read, checked and documented without another edit.

A class of the model with `from_text` (and `TEXT_PATTERN`) is written as the string
`str(value)` and read back with `from_text` (plan/reasons.py).

Markers, in `Annotated[...]` on a field of the model:
    Doc("...")            the description (the JSON Schema's and the reader's)
    Pattern(regex, what)  a string must match; the reader says "expected WHAT"
    Exactly(n, what)      a list has exactly n items; the reader says "expected WHAT"
    Choice(values)        a string must be one of these (when its Python type is wider)
    Shape(TypedDict)      the keys of a read-only mapping (`Mapping[str, Any]` in Python)
    OMIT_EMPTY            left out of the document when empty (and may be absent)
    DERIVED               computed by the model from the other fields: written, and
                          checked when read, never given to the constructor
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, dataclass_transform

from reconciler.plan.frozen import READ_ONLY, freeze


@dataclass(frozen=True)
class Doc:
    text: str


@dataclass(frozen=True)
class Pattern:
    regex: str  # matched in full
    expected: str


@dataclass(frozen=True)
class Exactly:
    count: int
    expected: str


@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Shape:
    typed_dict: type


class _Flag:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


OMIT_EMPTY = _Flag("OMIT_EMPTY")
DERIVED = _Flag("DERIVED")


# -- the nodes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    type: type  # str, int or bool
    pattern: Pattern | None = None
    # A class of the model written as this string (`str(value)`), read back with its
    # `from_text`, and checked by its TEXT_PATTERN.
    python: Any = None


@dataclass(frozen=True)
class Enum:
    values: tuple[Any, ...]
    python: type[enum.Enum] | None = None  # values of this Enum class in the model


@dataclass(frozen=True)
class Nullable:
    inner: Node


@dataclass(frozen=True)
class ListOf:
    item: Node
    exactly: Exactly | None = None


@dataclass(frozen=True)
class MapOf:
    value: Node  # keys are strings


@dataclass(frozen=True)
class AnyValue:
    pass


@dataclass(frozen=True)
class Member:
    name: str
    node: Node
    doc: str = ""
    omit_empty: bool = False
    derived: bool = False


@dataclass(frozen=True, eq=False)
class Object:
    """A dataclass of the model, or a TypedDict (a JSON object held as a read-only
    dict): exactly these keys."""

    cls: type
    name: str  # its name in the JSON Schema's $defs
    doc: str
    members: tuple[Member, ...]

    @property
    def is_dataclass(self) -> bool:
        return dataclasses.is_dataclass(self.cls)


Node = Scalar | Enum | Nullable | ListOf | MapOf | AnyValue | Object

_OBJECTS: dict[type, Object] = {}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _doc(cls: type) -> str:
    """The first paragraph of a class's docstring, on one line."""
    text = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(text.split())


def object_node(cls: type) -> Object:
    """The node of a dataclass or TypedDict of the model (made once per class)."""
    found = _OBJECTS.get(cls)
    if found is not None:
        return found
    hints = typing.get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
    elif typing.is_typeddict(cls):
        names = list(hints)
    else:
        raise TypeError(f"{cls.__name__} is neither a dataclass nor a TypedDict")
    members = []
    for name in names:
        base, meta = _split(hints[name])
        members.append(
            Member(
                name,
                node_of(base, meta),
                doc=next((m.text for m in meta if isinstance(m, Doc)), ""),
                omit_empty=OMIT_EMPTY in meta,
                derived=DERIVED in meta,
            )
        )
    node = Object(cls, _snake(cls.__name__), _doc(cls), tuple(members))
    _OBJECTS[cls] = node
    return node


def _split(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        inner, more = _split(base)
        return inner, (*meta, *more)
    return annotation, ()


def node_of(annotation: Any, meta: tuple[Any, ...] = ()) -> Node:
    """The node of one annotation; an annotation this module does not know raises, so
    that a new kind of field is never written or checked wrongly."""
    annotation, more = _split(annotation)
    meta = (*meta, *more)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    choice = next((m for m in meta if isinstance(m, Choice)), None)
    shape = next((m for m in meta if isinstance(m, Shape)), None)
    if origin in (typing.Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        if len(others) != 1 or len(args) != 2:
            raise TypeError(f"only `X | None` unions are known, not {annotation!r}")
        return Nullable(node_of(others[0], meta))
    if origin is typing.Literal:
        return Enum(tuple(args))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Enum(tuple(m.value for m in annotation), annotation)
    if isinstance(annotation, type) and hasattr(annotation, "from_text"):
        return Scalar(str, getattr(annotation, "TEXT_PATTERN", None), annotation)
    if annotation in (str, int, bool):
        if choice is not None:
            return Enum(choice.values)
        pattern = next((m for m in meta if isinstance(m, Pattern)), None)
        return Scalar(annotation, pattern)
    if annotation is Any:
        return AnyValue()
    if origin in (Sequence, list, tuple):
        item = args[0] if args else Any
        return ListOf(node_of(item), next((m for m in meta if isinstance(m, Exactly)), None))
    if origin in (Mapping, dict) and shape is not None:
        return object_node(shape.typed_dict)
    if origin in (Mapping, dict):
        if args and args[0] is not str:
            raise TypeError(f"object keys are strings, not {args[0]!r}")
        return MapOf(node_of(args[1] if args else Any))
    if isinstance(annotation, type) and (
        dataclasses.is_dataclass(annotation) or typing.is_typeddict(annotation)
    ):
        return object_node(annotation)
    raise TypeError(f"the plan format has no node for {annotation!r}")


# -- the document ------------------------------------------------------------------

Encode = Callable[[Any], Any]


def _through(node: Node, leaf: Callable[[Node], Encode | None]) -> Encode | None:
    """How a value of `node` converts, `leaf` saying it for an enum or an object: nulls,
    lists and maps carry the conversion through; None: nothing to convert."""
    if isinstance(node, Nullable):
        inner = _through(node.inner, leaf)
        return None if inner is None else _nullable(inner)
    if isinstance(node, ListOf):
        item = _through(node.item, leaf)
        return None if item is None else _list(item)
    if isinstance(node, MapOf):
        value = _through(node.value, leaf)
        return None if value is None else _map(value)
    return leaf(node)


def encoder(node: Node) -> Encode | None:
    """How a value of the model becomes JSON; None: it is JSON already (read-only dicts
    and lists, strings, numbers, booleans), and shared, not copied."""
    return _through(node, _encode_leaf)


def _encode_leaf(node: Node) -> Encode | None:
    if isinstance(node, Enum):
        return None if node.python is None else _enum_value
    if isinstance(node, Scalar) and node.python is not None:
        return str
    if isinstance(node, Object):
        return _object_encoder(node)
    return None


def _enum_value(value: Any) -> Any:
    return value.value


def _nullable(inner: Encode) -> Encode:
    return lambda value: None if value is None else inner(value)


def _list(item: Encode) -> Encode:
    return lambda values: [item(v) for v in values]


def _map(value: Encode) -> Encode:
    return lambda values: {k: value(v) for k, v in values.items()}


_ENCODERS: dict[type, Encode | None] = {}


def _object_encoder(node: Object) -> Encode | None:
    if not node.is_dataclass:
        return None  # a TypedDict is held as the read-only dict it describes
    if node.cls in _ENCODERS:
        return _ENCODERS[node.cls]
    encode = _compile_encoder(node)
    _ENCODERS[node.cls] = encode
    return encode


def _compile_encoder(node: Object) -> Encode:
    """One function per class, written out as dataclasses writes `__init__`: a 50,000
    topic plan's document is a million member reads, and a loop over the members (and a
    call per list) was half as fast again."""
    scope: dict[str, Any] = {}
    lines = ["def encode(obj):", "    out = {}"]
    for i, m in enumerate(node.members):
        nullable = isinstance(m.node, Nullable)
        inner = m.node.inner if isinstance(m.node, Nullable) else m.node
        item = encoder(inner.item) if isinstance(inner, ListOf) else None
        enc = encoder(inner)
        if item is not None:  # a list of objects (None stays None: it is falsy)
            scope[f"enc{i}"] = item
            value = f"[enc{i}(v) for v in x] if x else x"
        elif enc is not None:
            scope[f"enc{i}"] = enc
            value = f"None if x is None else enc{i}(x)" if nullable else f"enc{i}(x)"
        else:
            value = "x"  # JSON already: shared
        lines.append(f"    x = obj.{m.name}")
        if m.omit_empty:
            lines += ["    if x:", f"        out[{m.name!r}] = {value}"]
        else:
            lines.append(f"    out[{m.name!r}] = {value}")
    lines.append("    return out")
    exec("\n".join(lines), scope)  # names and code from the model's own fields
    encode: Encode = scope["encode"]
    return encode


def document(obj: Any) -> dict[str, Any]:
    """The JSON document of a model object (a dataclass), in field order. It shares the
    object's read-only values: read it, or `frozen.thaw` it to change it."""
    encode = _object_encoder(object_node(type(obj)))
    assert encode is not None
    result: dict[str, Any] = encode(obj)
    return result


# -- reading -----------------------------------------------------------------------

Decode = Callable[[Any], Any]
_DECODERS: dict[type, Decode] = {}


def _decode_leaf(node: Node) -> Decode | None:
    if isinstance(node, Enum):
        return node.python  # None: the value itself
    if isinstance(node, Scalar) and node.python is not None:
        decode: Decode = node.python.from_text
        return decode
    if isinstance(node, Object) and node.is_dataclass:
        return decoder(node.cls)
    return None  # the model makes the value read-only itself


def decoder(cls: type) -> Decode:
    """JSON of the shape the reader accepted -> an object of the model. Derived
    members are left to the model to compute again (the reader compares them)."""
    if cls in _DECODERS:
        return _DECODERS[cls]
    node = object_node(cls)
    members = tuple(
        (m.name, _through(m.node, _decode_leaf)) for m in node.members if not m.derived
    )

    def decode(data: Mapping[str, Any]) -> Any:
        given = {}
        for name, dec in members:
            if name in data:
                value = data[name]
                given[name] = value if dec is None else dec(value)
        return cls(**given)

    _DECODERS[cls] = decode
    return decode


# -- the model's classes: frozen, and read-only all the way down -----------------------

C = TypeVar("C", bound=type)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_model(cls: C) -> C:
    """A frozen dataclass whose constructor also makes every list and object it is
    given read-only (plan/frozen.py), then calls `__post_init__` if there is one.

    The constructor is written out per class, as dataclasses writes its own, but sets
    the members straight into its `__dict__`: a frozen dataclass's generated constructor
    sets each member through `object.__setattr__`, which made building a 50,000-topic
    plan more than twice as slow."""
    dataclass(frozen=True)(cls)  # made in place (no slots)
    cls.__init__ = _compile_init(cls)  # type: ignore[misc]
    return cls


_MISSING = object()


def _compile_init(cls: type) -> Callable[..., None]:
    held = {
        m.name for m in object_node(cls).members if not m.derived and _holds_containers(m.node)
    }
    scope: dict[str, Any] = {"_freeze": freeze, "_READ_ONLY": READ_ONLY, "_MISSING": _MISSING}
    params: list[str] = []
    body: list[str] = []
    members: list[tuple[str, str]] = []
    for i, f in enumerate(dataclasses.fields(cls)):
        if not f.init:
            scope[f"_d{i}"] = f.default
            members.append((f.name, f"_d{i}"))
            continue
        if f.default is not dataclasses.MISSING:
            scope[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_f{i}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING: {f.name} = _f{i}()")
        else:
            params.append(f.name)
        if f.name in held:
            body.append(f"    if type({f.name}) not in _READ_ONLY: {f.name} = _freeze({f.name})")
        members.append((f.name, f.name))
    lines = [f"def __init__(self, {', '.join(params)}):", *body, "    d = self.__dict__",
             *(f"    d[{name!r}] = {value}" for name, value in members)]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    exec("\n".join(lines), scope)  # names and code from the class's own fields
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _holds_containers(node: Node) -> bool:
    if isinstance(node, Nullable):
        return _holds_containers(node.inner)
    return isinstance(node, ListOf | MapOf | AnyValue) or (
        isinstance(node, Object) and not node.is_dataclass
    )
