"""The binary Avro check: is a message exactly one datum of a parsed schema. Built
once per definition as one small function per type of the schema, it walks the
message's bytes and builds no value, so that checking costs no memory whatever a
message declares, and time in proportion to its bytes: an array's count or a
string's length is checked against the bytes left, never allocated.

It refuses what fastavro's reader refuses (tests/localserver/test_schema_properties.py
holds the two side by side on random schemas and bytes): too few bytes, trailing
bytes, a negative length, a union branch or enum symbol index out of range, a string
or map key that is not UTF-8, a value a logical type cannot hold (fastavro's own
conversion is applied to it). And more, as the specification reads: an int outside
32 bits and a long outside 64 (fastavro's compiled reader wraps them), a negative
union or enum index (fastavro takes it as Python's index from the end), and a message
nested deeper than `bounds.MAX_DEPTH` records, arrays and maps (fastavro's compiled
reader recurses on the C stack: a deep message of a recursive schema crashed the
process).

The functions call one another as the schema's types hold one another; the schema's
depth is bounded before they are built (`bounds.check_shape`), and a message's
depth is counted as it is read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reconciler.localserver.schemas.bounds import MAX_DEPTH, too_deep_message
from reconciler.localserver.schemas.reasons import short

# A reader takes the message, where its datum starts and how deeply it is nested;
# it answers where the datum ends, or raises.
Reader = Callable[[bytes, int, int], int]

NOT_ENOUGH = "Not enough data to parse for schema."
TOO_MUCH = "Too much data to parse for schema."
OUT_OF_RANGE = "a value is out of its type's range"
_INT_END = 1 << 32  # a zigzag varint below this is an int (32 bits)
_LONG_END = 1 << 64


class _Refused(Exception):
    """The message is no datum of the schema; the reason."""


class _TooDeep(Exception):
    """The message nests deeper than `MAX_DEPTH`."""


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at `pos` (below `end`, else out of range) and where it
    ends. Padding groups of zeros past 64 bits are read, as fastavro reads them."""
    n = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if n >= end:
            raise _Refused(OUT_OF_RANGE)
        if b < 0x80:
            return n, pos
        shift += 7


def _count(data: bytes, pos: int) -> tuple[int, int]:
    """A length, count or index: a long read without a range (an out-of-range one
    exceeds the bytes left or the branches), zigzag-decoded."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    n = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        if b & 0x7F:
            n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if n >> 72:  # past any length the bytes left could hold: read on, keep it small
            n = 1 << 72 | n & 1


def _null(data: bytes, pos: int, depth: int) -> int:
    return pos


def _boolean(data: bytes, pos: int, depth: int) -> int:
    if pos >= len(data):  # any byte reads, as in fastavro and in Avro's Java library
        raise IndexError
    return pos + 1


def _int(data: bytes, pos: int, depth: int) -> int:
    if data[pos] < 0x80:
        return pos + 1
    return _varint(data, pos, _INT_END)[1]


def _long(data: bytes, pos: int, depth: int) -> int:
    if data[pos] < 0x80:
        return pos + 1
    return _varint(data, pos, _LONG_END)[1]


def _float(data: bytes, pos: int, depth: int) -> int:
    pos += 4
    if pos > len(data):
        raise IndexError
    return pos


def _double(data: bytes, pos: int, depth: int) -> int:
    pos += 8
    if pos > len(data):
        raise IndexError
    return pos


def _span(data: bytes, pos: int) -> tuple[int, int]:
    """Where the content of a length-prefixed value (bytes, a string) starts and
    ends."""
    b = data[pos]
    if b < 0x80:
        size, start = (b >> 1) ^ -(b & 1), pos + 1
    else:
        size, start = _count(data, pos)
    if size < 0:
        raise _Refused(f"a length is negative ({size})")
    end = start + size
    if end > len(data):
        raise IndexError
    return start, end


def _bytes(data: bytes, pos: int, depth: int) -> int:
    return _span(data, pos)[1]


def _string(data: bytes, pos: int, depth: int) -> int:
    start, end = _span(data, pos)
    data[start:end].decode("utf-8")
    return end


# A string of a message that is all ASCII is UTF-8 wherever it is cut: read as bytes.
_ascii_string = _bytes


def _fixed(size: int) -> Reader:
    def fixed(data: bytes, pos: int, depth: int) -> int:
        pos += size
        if pos > len(data):
            raise IndexError
        return pos

    return fixed


def _enum(name: str, symbols: int) -> Reader:
    def enum(data: bytes, pos: int, depth: int) -> int:
        index, pos = _count(data, pos)
        if not 0 <= index < symbols:
            raise _Refused(f"{index} is no symbol index of enum {name} ({symbols} symbols)")
        return pos

    return enum


def _union(branches: list[Reader]) -> Reader:
    count = len(branches)

    def union(data: bytes, pos: int, depth: int) -> int:
        b = data[pos]
        if b < 0x80 and not b & 1:  # the common case: a small non-negative index
            index = b >> 1
            pos += 1
        else:
            index, pos = _count(data, pos)
        if not 0 <= index < count:
            raise _Refused(f"{index} is no branch index of a union of {count}")
        return branches[index](data, pos, depth)

    return union


# A record's fields of these types are read in the record's own loop rather than by
# a call each (the Publish hot path: most fields are strings and numbers).
_STRING, _ASCII, _LONG, _INT, _DOUBLE, _CALL = range(6)


def _record(fields: list[Reader]) -> Reader:
    ops = tuple(_op(read) for read in fields)

    def record(data: bytes, pos: int, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise _TooDeep
        depth += 1
        n = len(data)
        for op, read in ops:
            if op <= _ASCII:  # a string: its length, then (unless all is ASCII) UTF-8
                b = data[pos]
                if b < 0x80:
                    size = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    size, pos = _count(data, pos)
                if size < 0:
                    raise _Refused(f"a length is negative ({size})")
                end = pos + size
                if end > n:
                    raise IndexError
                if op == _STRING:
                    data[pos:end].decode("utf-8")
                pos = end
            elif op in (_LONG, _INT):
                if data[pos] < 0x80:
                    pos += 1
                else:
                    pos = _varint(data, pos, _LONG_END if op == _LONG else _INT_END)[1]
            elif op == _DOUBLE:
                pos += 8
                if pos > n:
                    raise IndexError
            else:
                pos = read(data, pos, depth)
        return pos

    return record


def _op(read: Reader) -> tuple[int, Reader]:
    """How a record reads a field of this reader: inline, or by calling it."""
    inline: dict[Reader, int] = {
        _string: _STRING, _ascii_string: _ASCII, _long: _LONG, _int: _INT, _double: _DOUBLE,
    }
    return inline.get(read, _CALL), read


def _array(items: Reader) -> Reader:
    def array(data: bytes, pos: int, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise _TooDeep
        depth += 1
        count, pos = _count(data, pos)
        while count:
            if count < 0:  # a block with its size in bytes, which is not needed
                count = -count
                _, pos = _count(data, pos)
            # Every item takes a byte at least (the definition is refused otherwise),
            # so a count past the bytes left ends at the message's end.
            for _ in range(count):
                pos = items(data, pos, depth)
            count, pos = _count(data, pos)
        return pos

    return array


def _map(values: Reader, key: Reader) -> Reader:
    def map_(data: bytes, pos: int, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise _TooDeep
        depth += 1
        count, pos = _count(data, pos)
        while count:
            if count < 0:
                count = -count
                _, pos = _count(data, pos)
            for _ in range(count):
                pos = values(data, key(data, pos, depth), depth)
            count, pos = _count(data, pos)
        return pos

    return map_


def _logical(kind: str, read: Reader, convert: Callable[..., Any], schema: Any) -> Reader:
    """A primitive with a logical type fastavro converts: the value decoded and given
    to fastavro's own conversion, whose refusal is the message's."""

    def value(data: bytes, pos: int, end: int) -> Any:
        if kind in ("int", "long"):
            n, _ = _varint(data, pos, _INT_END if kind == "int" else _LONG_END)
            return (n >> 1) ^ -(n & 1)
        raw = data[pos:end]
        if kind == "fixed":
            return raw
        _, start = _count(data, pos)
        raw = data[start:end]
        return raw.decode("utf-8") if kind == "string" else raw

    def logical(data: bytes, pos: int, depth: int) -> int:
        end = read(data, pos, depth)
        try:
            convert(value(data, pos, end), schema, None)
        except (_Refused, IndexError):
            raise
        except Exception as exc:
            what = schema.get("logicalType")
            raise _Refused(f"a {what} value is invalid ({short(exc)})") from None
        return end

    return logical


_PRIMITIVES: dict[str, Reader] = {
    "null": _null, "boolean": _boolean, "int": _int, "long": _long, "float": _float,
    "double": _double, "bytes": _bytes, "string": _string,
}


class _Builder:
    """The readers of a parsed schema's types, each named type's built once (a type
    that holds itself reaches its reader through a cell filled once it is built)."""

    def __init__(self, named: dict[str, Any], conversions: dict[str, Any], string: Reader) -> None:
        self.named = named
        self.conversions = conversions
        self.primitives = {**_PRIMITIVES, "string": string}
        self.built: dict[str, Reader] = {}
        self.cells: dict[str, list[Reader]] = {}

    def reader(self, node: Any) -> Reader:
        if isinstance(node, str):
            primitive = self.primitives.get(node)
            return primitive if primitive is not None else self._named(node)
        if isinstance(node, list):
            return _union([self.reader(branch) for branch in node])
        kind = node["type"]
        if kind in ("record", "error", "enum", "fixed") and node["name"] in self.cells:
            return self._named(node["name"])
        if kind in ("record", "error", "enum", "fixed"):
            return self._define(node)
        if kind == "array":
            return _array(self.reader(node["items"]))
        if kind == "map":
            return _map(self.reader(node["values"]), self.primitives["string"])
        return self._with_logical(node, self.primitives[kind], kind)

    def _named(self, name: str) -> Reader:
        done = self.built.get(name)
        if done is not None:
            return done
        cell = self.cells.get(name)
        if cell is None:  # not met yet: define it from the named types
            return self._define(self.named[name])
        if cell:
            return cell[0]

        def later(data: bytes, pos: int, depth: int) -> int:
            return cell[0](data, pos, depth)

        return later

    def _define(self, node: Any) -> Reader:
        name, kind = node["name"], node["type"]
        cell: list[Reader] = []
        self.cells[name] = cell
        made: Reader
        if kind == "enum":
            made = _enum(name, len(node["symbols"]))
        elif kind == "fixed":
            made = self._with_logical(node, _fixed(int(node["size"])), "fixed")
        else:
            made = _record([self.reader(field["type"]) for field in node["fields"]])
        cell.append(made)
        self.built[name] = made
        return made

    def _with_logical(self, node: Any, read: Reader, kind: str) -> Reader:
        logical = node.get("logicalType")
        convert = self.conversions.get(f"{kind}-{logical}") if logical else None
        return read if convert is None else _logical(kind, read, convert, node)


def binary_checker(schema: Any, named: dict[str, Any]) -> Callable[[bytes], str | None]:
    """The check of a parsed schema's binary messages: None for exactly one datum,
    else the reason."""
    from fastavro.read import LOGICAL_READERS  # the conversions fastavro's reader applies

    # A message that is all ASCII (most are) has no string to check for UTF-8.
    ascii_root = _Builder(named, LOGICAL_READERS, _ascii_string).reader(schema)
    root = _Builder(named, LOGICAL_READERS, _string).reader(schema)

    def check(data: bytes) -> str | None:
        try:
            end = (ascii_root if data.isascii() else root)(data, 0, 0)
        except IndexError:
            return NOT_ENOUGH
        except _TooDeep:
            return too_deep_message()
        except _Refused as refused:
            return f"does not match the schema ({refused})"
        except UnicodeDecodeError as exc:
            return f"does not match the schema (a string is not UTF-8: {short(exc)})"
        return TOO_MUCH if end != len(data) else None

    return check
