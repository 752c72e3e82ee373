"""The documents the tool writes and reads, as JSON, and their JSON Schemas: one
mechanism, msgspec, for the plan (its file and `--format json`), the residency report,
apply's outcome, the diagnostics' `--format json` and SARIF, `projects`' output, the
org-policy snapshot's custom constraints and the plan's fingerprints.

A document's model is a set of `Record`s (msgspec Structs: frozen, built in C, cheap
for the code that makes one per declared topic) and plain dataclasses; msgspec reads
their annotations, and from them come the document, the strict reading of one and its
published schema, so that a member added to a model is written, read, checked and
documented without another edit:

    to_data(obj) -> JSON value            plain dicts and lists, members in their order
    canonical_json(obj, ascii=False) -> bytes   sorted keys, no whitespace, UTF-8
    indented_json(obj, ascii=False) -> str      two-space indentation, members in order
                                          (`ascii`: non-ASCII as `\\uXXXX`, as `json.dumps`
                                          writes by default: diagnostics, fingerprints)
    from_json(cls, text) -> obj           strict: every value of the type the model says,
                                          no key the model does not have
    from_data(cls, data) -> obj           the same, of a JSON value already read
        DocumentError(where, what)        at its first problem, e.g.
                                          ("prune", "expected `bool`, got `str`")
    first_difference(written, read)       the first key a document read lacks or adds
    json_schema(cls, ...) -> dict         draft 2020-12, objects left open

Both text forms are byte for byte what the standard library's `json.dumps` writes
with the same settings (non-ASCII characters as themselves), so a digest over the
canonical form does not depend on which of the two wrote it
(tests/plan/test_json_text.py holds them together, every code point included).

A string holding a lone surrogate, a byte of a file name that is not UTF-8 as
`os.fsdecode` gives it, has no UTF-8 form: such a document is written by the standard
library with each lone surrogate as its `\\udcXX` escape (valid JSON text; Python's
`json` and JavaScript read it back as the same string, and `os.fsencode` of that gives
the file name's bytes), and `from_json` reads it back so.

A text type is a class of the model written as one string: `str(value)` writes it,
its classmethod `from_text(text)` reads it back (a ValueError refuses the document),
and its `TEXT_PATTERN` is its schema's pattern (plan/reasons.py's `Reason`).

What a `Record` writes: every member, except one whose default is a plain value
(`EMPTY`, `None`, "") while it holds that very value: such a member is left out of the
document, and may be absent when read. A member with a default the document writes
all the same declares it `always(value)`. What is read has exactly its model's keys
(unknown ones are refused); a member left out defaults, so the reader of a document
that must come back as it was written (a plan file) compares it with what it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from msgspec import NODEFAULT, Struct

from reconciler.frozen import EMPTY, FrozenDict, FrozenList, freeze

T = TypeVar("T")

# -- the models' base -----------------------------------------------------------------

_CONTAINERS = (dict, list, tuple)
# The common members that need no look inside (a member holding a Record is looked at
# as a container, and is none).
_AS_THEY_ARE = frozenset({str, int, bool, float, type(None), FrozenDict, FrozenList})


class Record(Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Base of the classes of a document: frozen, and read-only all the way down (every
    list, tuple and dict a member is given, or read, is replaced by its read-only copy
    when the object is made: reconciler/frozen.py). A subclass with its own
    `__post_init__` calls this one first."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if type(value) not in _AS_THEY_ARE and isinstance(value, _CONTAINERS):
                msgspec.structs.force_setattr(self, name, freeze(value))
            elif type(value) is FrozenList and not value:
                msgspec.structs.force_setattr(self, name, EMPTY)  # the one empty list


def always(value: T) -> T:
    """A default the document writes even while the member holds it (a plain default
    is left out: see the module's docstring)."""
    result: T = msgspec.field(default_factory=lambda: value)
    return result


def doc(text: str) -> msgspec.Meta:
    """A member's description, for the published schema: `Annotated[T, doc("...")]`."""
    return msgspec.Meta(description=text)


def derive(record: Struct, name: str, value: Any) -> None:
    """Set a member its record derives from the others, in its `__post_init__` (the
    record is frozen for everyone else)."""
    msgspec.structs.force_setattr(record, name, value)


def replace(record: T, **changes: Any) -> T:
    """A copy of `record` with `changes`, made as the record is (its derived members
    derived again)."""
    copy: T = msgspec.structs.replace(record, **changes)  # type: ignore[type-var]
    return copy


# -- text types -------------------------------------------------------------------


def _is_text_type(cls: Any) -> bool:
    return isinstance(cls, type) and hasattr(cls, "from_text")


def _encode_text(obj: Any) -> Any:
    if _is_text_type(type(obj)):
        return str(obj)
    raise TypeError(f"no JSON form for {type(obj).__name__}")


def _decode_text(cls: type, obj: Any) -> Any:
    if _is_text_type(cls) and isinstance(obj, str):
        return cls.from_text(obj)  # type: ignore[attr-defined]
    raise TypeError(f"no {cls.__name__} is read from JSON")


def _text_schema(cls: type) -> dict[str, Any]:
    if _is_text_type(cls):
        return {"type": "string", "pattern": cls.TEXT_PATTERN}  # type: ignore[attr-defined]
    raise NotImplementedError(f"no schema for {cls.__name__}")


# -- writing ------------------------------------------------------------------------

_SORTED = msgspec.json.Encoder(order="sorted", enc_hook=_encode_text)
_IN_ORDER = msgspec.json.Encoder(enc_hook=_encode_text)


def to_data(obj: Any) -> Any:
    """The JSON value of a model object: plain dicts, lists, strings, numbers, booleans
    and nulls, new ones the caller may keep or change."""
    return msgspec.to_builtins(obj, enc_hook=_encode_text)


def canonical_json(value: Any, *, ascii: bool = False) -> bytes:
    """Sorted keys, no whitespace, UTF-8 (non-ASCII characters as themselves, or with
    `ascii` as their `\\uXXXX` escapes). What msgspec refuses (a str subclass, keys of
    mixed types, a lone surrogate) goes to `json`."""
    try:
        data = _SORTED.encode(value)
    except (TypeError, ValueError):
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii, default=to_data
        )
        return _surrogates_escaped(text).encode("utf-8")
    return _ascii_escaped(data.decode()).encode() if ascii else data


def indented_json(value: Any, *, ascii: bool = False) -> str:
    """Two-space indentation, members and keys in their order, a final newline
    (`ascii`: non-ASCII characters as their `\\uXXXX` escapes)."""
    try:
        text = msgspec.json.format(_IN_ORDER.encode(value), indent=2).decode()
    except (TypeError, ValueError):
        text = json.dumps(value, indent=2, ensure_ascii=ascii, default=to_data)
        return _surrogates_escaped(text) + "\n"
    return (_ascii_escaped(text) if ascii else text) + "\n"


_NOT_ASCII = re.compile("[\x7f-\U0010ffff]")


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as `json` writes it
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _ascii_escaped(text: str) -> str:
    """JSON text with every character past `~` as its escape: what `json.dumps`
    writes with `ensure_ascii` (the default). Such characters are only ever inside
    strings (JSON's own syntax is ASCII)."""
    return _NOT_ASCII.sub(lambda m: _escape(m.group()), text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogates_escaped(text: str) -> str:
    """JSON text with each lone surrogate (only ever inside a string) as its escape:
    the same value when read, and text that UTF-8 can encode."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# -- reading ------------------------------------------------------------------------


class DocumentError(ValueError):
    """A document that is not what its model writes: `where` is the first bad member's
    path (`a.b[2].c`, `a.labels[...]` for a value under any key; "" for the document
    itself), `what` what was wrong with it."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where = where
        self.what = what


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def from_json(cls: type[T], text: bytes | str) -> T:
    """The object of `cls` a JSON document describes, read strictly (no value converted
    to another type, no unknown key), or DocumentError at its first problem."""
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = msgspec.json.Decoder(cls, dec_hook=_decode_text)
    try:
        result: T = decoder.decode(text)
    except msgspec.ValidationError as exc:
        raise _problem(str(exc)) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        if "surrogate" in str(exc):  # a lone one: what the writer escapes (see above)
            return _with_surrogates(cls, text)
        raise DocumentError("", f"not JSON: {exc}") from None
    return result


def from_data(cls: type[T], data: Any) -> T:
    """`from_json` of a document already read as plain JSON data (a JSON value from
    another reader: YAML, a protobuf message's JSON form), as strictly."""
    try:
        result: T = msgspec.convert(data, cls, dec_hook=_decode_text)
    except msgspec.ValidationError as exc:
        raise _problem(str(exc)) from None
    return result


def _with_surrogates(cls: type[T], text: bytes | str) -> T:
    """`from_json` of a document holding a lone surrogate escape, which msgspec's
    reader refuses: read by `json`, then converted as strictly."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DocumentError("", f"not JSON: {exc}") from None
    return from_data(cls, data)


# msgspec's errors say the path last ("... - at `$.a.b[2]`"), and name the member a
# missing or unknown key is (the only two that sit at the object that holds them).
_AT = re.compile(r"(?P<what>.*?)(?: - at `\$(?P<where>[^`]*)`)?", re.DOTALL)
_MEMBER = re.compile(r"Object (?P<kind>missing required|contains unknown) field `(?P<name>[^`]+)`")


def _problem(message: str) -> DocumentError:
    found = _AT.fullmatch(message)
    assert found is not None  # the pattern matches any text
    what, where = found["what"], (found["where"] or "").lstrip(".")
    member = _MEMBER.fullmatch(what)
    if member is not None:
        where = f"{where}.{member['name']}" if where else member["name"]
        what = "missing" if member["kind"] == "missing required" else "unknown field"
    elif what:
        what = what[0].lower() + what[1:]
    return DocumentError(where, what)


def first_difference(written: Any, read: Any, derived: frozenset[str] = frozenset(),
                     where: str = "") -> DocumentError | None:
    """Where `read` (a document as its file holds it) has a key that `written` (the
    same document as its model writes it back) has not, or lacks one it has: the
    first such key, in document order. Values that differ are not looked at, nor what
    is inside the members named `derived` (the model derives them from the others:
    their reader compares them)."""
    if isinstance(written, dict) and isinstance(read, dict):
        for key in written:
            at = f"{where}.{key}" if where else str(key)
            if key not in read:
                return DocumentError(at, "missing")
            if key not in derived:
                inner = first_difference(written[key], read[key], derived, at)
                if inner is not None:
                    return inner
        for key in read:
            if key not in written:
                at = f"{where}.{key}" if where else str(key)
                return DocumentError(at, "unknown field" if read[key] else
                                     "written empty (it is left out when empty)")
    elif isinstance(written, list) and isinstance(read, list):
        for i, (w, r) in enumerate(zip(written, read, strict=False)):
            inner = first_difference(w, r, derived, f"{where}[{i}]")
            if inner is not None:
                return inner
    return None


# -- the published schema ------------------------------------------------------------


def json_schema(cls: Any, schema_id: str, title: str, description: str,
                written_always: Callable[[str], bool] = lambda name: False) -> dict[str, Any]:
    """The published JSON Schema of the documents of `cls`, as they are written: a
    member left out when it holds its default is not required (`written_always` names
    those a writer never leaves out all the same); objects are left open, each
    described by the first paragraph of its class's docstring, on one line."""
    schema = msgspec.json.schema(cls, schema_hook=_text_schema)
    defs: dict[str, Any] = schema["$defs"]
    for info in _records(cls):
        definition = defs[info.cls.__name__]
        definition["required"] = [
            f.encode_name for f in info.fields
            if not _left_out(info, f) or written_always(f.encode_name)
        ]
    for definition in defs.values():
        definition.pop("title", None)
        definition.pop("additionalProperties", None)
        text = definition.get("description", "").strip().split("\n\n")[0]
        if text:
            definition["description"] = " ".join(text.split())
        for prop in definition.get("properties", {}).values():
            prop.pop("default", None)
    root = defs.pop(schema["$ref"].rsplit("/", 1)[1])
    root.pop("description", None)
    published: dict[str, Any] = _short_nullables({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        "description": description,
        **root,
        "$defs": dict(sorted(defs.items())),
    })
    return published


def _records(cls: Any) -> list[Any]:
    """The Struct types reachable from `cls`, with their fields (msgspec's view)."""
    out: dict[type, Any] = {}
    todo = [msgspec.inspect.type_info(cls)]
    while todo:
        info = todo.pop()
        if isinstance(info, msgspec.inspect.StructType | msgspec.inspect.DataclassType):
            if info.cls in out:
                continue
            out[info.cls] = info
            todo += [f.type for f in info.fields]
        elif isinstance(info, msgspec.inspect.TypedDictType):
            todo += [f.type for f in info.fields]
        elif isinstance(info, msgspec.inspect.Metadata):
            todo.append(info.type)
        else:
            todo += [getattr(info, a) for a in ("item_type", "value_type") if hasattr(info, a)]
            todo += list(getattr(info, "types", ()))
    return list(out.values())


def _left_out(info: Any, field: Any) -> bool:
    """A member a Record leaves out when it holds its plain default (a dataclass writes
    every member)."""
    return isinstance(info, msgspec.inspect.StructType) and field.default is not NODEFAULT


def _short_nullables(node: Any) -> Any:
    """`{"anyOf": [{"type": T}, {"type": "null"}]}` written `{"type": [T, "null"]}`."""
    if isinstance(node, list):
        return [_short_nullables(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _short_nullables(v) for k, v in node.items()}
    options = out.get("anyOf")
    if (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        other = options[0] if options[1] == {"type": "null"} else options[1]
        if set(other) == {"type"} and isinstance(other["type"], str):
            del out["anyOf"]
            out["type"] = [other["type"], "null"]
    return out
