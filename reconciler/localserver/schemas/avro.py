"""Avro schemas as Pub/Sub uses them: a definition parsed by fastavro, messages
checked in the JSON encoding or the binary one, and whether a new revision may follow
an old one (Avro's schema resolution both ways: the commit-schema-revision guide says
a new revision must obey the rules "as though it is both the reader schema and the
writer schema").

fastavro is imported when the first Avro definition is compiled, not when the server
starts (a `--local` run that never meets a schema does not load it).

Two guards keep a hostile message from hurting the server, both decided once per
definition: a recursive schema (a record that holds itself) is decoded by fastavro's
pure-Python reader, which stops at Python's recursion limit, because its compiled
reader recurses on the C stack and a deep enough message crashes the process; and a
schema with an array of items that take no bytes (null, a record with no fields, a
fixed of size 0) is refused, because one short message could then name billions of
items."""

from __future__ import annotations

import io
import json
from typing import Any

from reconciler.localserver.schemas.reasons import short

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# What data written as the key type may be read as besides itself (the spec's promotions).
_PROMOTIONS = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


class AvroDefinition:
    """One parsed Avro definition. Raises ValueError (the reason) for a definition
    that does not parse or that the server refuses."""

    def __init__(self, text: str) -> None:
        import fastavro  # lazy: see the module docstring
        import fastavro._read_py
        import fastavro.validation

        self._validate = fastavro.validation.validate
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"not JSON ({short(exc)})") from None
        named: dict[str, Any] = {}
        try:
            self.schema = fastavro.parse_schema(raw, named_schemas=named)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        except Exception as exc:
            raise ValueError(short(exc)) from None
        self.named = named
        walk = _Walk(named)
        walk.visit(self.schema)
        if walk.zero_width_array is not None:
            raise ValueError(
                f"an array of {walk.zero_width_array} takes no bytes per item, so one "
                "message could name any number of them; the local server refuses such "
                "schemas (use a type that takes at least one byte, e.g. a boolean)"
            )
        # The compiled reader recurses on the C stack: see the module docstring.
        self._binary_reader = (
            fastavro._read_py.schemaless_reader if walk.recursive else fastavro.schemaless_reader
        )
        # A binary datum decodes to values of its types; only an int's 32-bit range is
        # left to check (the encoding is the same varint as a long's).
        self._ranges = walk.has_int
        self._json = _JsonCheck(named)

    # ------------------------------------------------------------------- messages

    def check_json(self, data: bytes) -> str | None:
        """None when `data` is one JSON-encoded datum of the schema, else the reason."""
        try:
            document = json.loads(data)
        except RecursionError:
            return "nested too deeply"
        except ValueError as exc:
            return f"not JSON ({short(exc)})"
        try:
            return self._json.problem(self.schema, document, "")
        except RecursionError:
            return "nested too deeply"

    def check_binary(self, data: bytes) -> str | None:
        """None when `data` is exactly one binary-encoded datum of the schema."""
        stream = io.BytesIO(data)
        try:
            datum = self._binary_reader(stream, self.schema)
            if self._ranges and not self._validate(datum, self.schema, raise_errors=False):
                return "a value is out of its type's range"
        except EOFError:
            return "Not enough data to parse for schema."
        except RecursionError:
            return "nested too deeply"
        except Exception as exc:
            return f"does not match the schema ({short(exc)})"
        if stream.tell() != len(data):
            return "Too much data to parse for schema."
        return None

    # ------------------------------------------------------------------ revisions

    def incompatibility(self, other: AvroDefinition) -> str | None:
        """Why this revision cannot follow `other` (each must read what the other
        writes), or None."""
        for reader, writer, direction in (
            (self, other, "the new revision cannot read what the other writes"),
            (other, self, "the other revision cannot read what the new one writes"),
        ):
            problem = _Resolution(reader.named, writer.named).problem(
                reader.schema, writer.schema, ""
            )
            if problem is not None:
                return f"{direction}: {problem}"
        return None



def _kind(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    return str(node.get("type"))


class _Walk:
    """One pass over a parsed schema: is any named type recursive, and does any
    array hold items that take no bytes."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.recursive = False
        self.has_int = False
        self.zero_width_array: str | None = None
        self._open: list[str] = []
        self._seen: set[str] = set()

    def visit(self, node: Any) -> None:
        if node == "int" or (isinstance(node, dict) and node.get("type") == "int"):
            self.has_int = True
        if isinstance(node, str):
            if node in self._open:
                self.recursive = True
            elif node in self.named and node not in self._seen:
                self.visit(self.named[node])
            return
        if isinstance(node, list):
            for branch in node:
                self.visit(branch)
            return
        kind = node.get("type")
        name = node.get("name")
        if name is not None:
            self._seen.add(name)
            self._open.append(name)
        try:
            if kind == "record":
                for f in node.get("fields", ()):
                    self.visit(f["type"])
            elif kind == "array":
                if self.zero_width_array is None and self._zero_width(node["items"], set()):
                    self.zero_width_array = _describe(node["items"])
                self.visit(node["items"])
            elif kind == "map":
                self.visit(node["values"])
            elif isinstance(kind, (dict, list)):
                self.visit(kind)
        finally:
            if name is not None:
                self._open.pop()

    def _zero_width(self, node: Any, open_: set[str]) -> bool:
        if isinstance(node, str):
            if node == "null":
                return True
            if node in open_ or node not in self.named:
                return False
            return self._zero_width(self.named[node], open_ | {node})
        if isinstance(node, list):
            return False  # a union writes its branch index
        kind = node.get("type")
        if kind == "record":
            name = node.get("name", "")
            return all(self._zero_width(f["type"], open_ | {name}) for f in node["fields"])
        if kind == "fixed":
            return int(node.get("size", 1)) == 0
        return bool(kind == "null")


def _describe(node: Any) -> str:
    if isinstance(node, str):
        return node
    name = node.get("name")
    return f"{node.get('type')} {name}" if name else str(node.get("type"))


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class _JsonCheck:
    """Is a decoded JSON document a datum of the schema in Avro's JSON encoding (the
    specification's "JSON Encoding"): a record is an object naming every field (extra
    members are ignored, as Google's emulator ignores them; a field's default does
    not stand in for it), a union is null or a one-member object keyed by the
    branch's type name, bytes and fixed are strings of code points up to 255, and
    numbers are in their type's range. The schema itself is fastavro's parse."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def problem(self, schema: Any, value: Any, where: str) -> str | None:
        if isinstance(schema, str):
            if schema in self.named:
                return self.problem(self.named[schema], value, where)
            return self._primitive(schema, value, where)
        if isinstance(schema, list):
            return self._union(schema, value, where)
        kind = schema.get("type")
        if kind in ("record", "error"):
            if not isinstance(value, dict):
                return f"{where or 'the message'} is not a JSON object"
            for field in schema["fields"]:
                name = field["name"]
                path = f"{where}.{name}" if where else name
                if name not in value:
                    return f"field {path} is missing"
                problem = self.problem(field["type"], value[name], path)
                if problem is not None:
                    return problem
            return None
        if kind == "enum":
            if value not in schema["symbols"]:
                what = where or "the message"
                return f"{what}: {_show(value)} is not a symbol of {schema['name']}"
            return None
        if kind == "array":
            if not isinstance(value, list):
                return f"{where or 'the message'} is not a JSON array"
            for i, item in enumerate(value):
                problem = self.problem(schema["items"], item, f"{where}[{i}]")
                if problem is not None:
                    return problem
            return None
        if kind == "map":
            if not isinstance(value, dict):
                return f"{where or 'the message'} is not a JSON object"
            for key, item in value.items():
                problem = self.problem(schema["values"], item, f"{where}[{key!r}]")
                if problem is not None:
                    return problem
            return None
        if kind == "fixed":
            problem = self._primitive("bytes", value, where)
            if problem is None and len(value) != schema["size"]:
                return f"{where or 'the message'} has {len(value)} bytes, not {schema['size']}"
            return problem
        return self.problem(kind, value, where)  # a primitive with attributes

    def _union(self, branches: list[Any], value: Any, where: str) -> str | None:
        if value is None:
            return None if "null" in branches else f"{where or 'the message'} may not be null"
        if not isinstance(value, dict) or len(value) != 1:
            return (
                f"{where or 'the message'}: a union's value is null or an object with one "
                "member named for the branch's type"
            )
        ((key, inner),) = value.items()
        for branch in branches:
            name = branch if isinstance(branch, str) else branch.get("name", branch.get("type"))
            if key == name or (isinstance(name, str) and key == _unqualified(name)):
                return self.problem(branch, inner, where)
        return f"{where or 'the message'}: {key!r} is no branch of the union"

    @staticmethod
    def _primitive(kind: str, value: Any, where: str) -> str | None:
        ok: bool
        if kind == "null":
            ok = value is None
        elif kind == "boolean":
            ok = isinstance(value, bool)
        elif kind in ("int", "long"):
            low, high = _INT32 if kind == "int" else _INT64
            ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        elif kind in ("float", "double"):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind == "string":
            ok = isinstance(value, str)
        elif kind == "bytes":
            ok = isinstance(value, str) and all(ord(c) < 256 for c in value)
        else:
            return f"unknown type {kind}"
        return None if ok else f"{where or 'the message'}: {_show(value)} is not a {kind}"


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Resolution:
    """Avro's schema resolution rules: can a reader of one schema read data written
    with another (the specification's "Schema Resolution" section)."""

    def __init__(self, reader_named: dict[str, Any], writer_named: dict[str, Any]) -> None:
        self.reader_named = reader_named
        self.writer_named = writer_named
        self._assumed: set[tuple[str, str]] = set()  # recursive pairs taken as fine

    def _resolve(self, node: Any, named: dict[str, Any]) -> Any:
        if isinstance(node, str) and node not in _PRIMITIVES:
            return named.get(node, node)
        if isinstance(node, dict) and node.get("type") in _PRIMITIVES and len(node) == 1:
            return node["type"]
        return node

    def problem(self, reader: Any, writer: Any, where: str) -> str | None:
        r = self._resolve(reader, self.reader_named)
        w = self._resolve(writer, self.writer_named)
        r_kind, w_kind = _kind(r), _kind(w)
        at = f" at {where}" if where else ""
        if w_kind == "union":
            for branch in w:
                problem = self.problem(r, branch, where)
                if problem is not None:
                    return problem
            return None
        if r_kind == "union":
            if any(self.problem(branch, w, where) is None for branch in r):
                return None
            return f"no branch of the union{at} can read {_describe(w)}"
        if isinstance(r, str) or isinstance(w, str):
            if r_kind == w_kind or r_kind in _PROMOTIONS.get(w_kind, ()):
                return None
            return f"{_describe(w)} cannot be read as {_describe(r)}{at}"
        if r_kind != w_kind:
            return f"{_describe(w)} cannot be read as {_describe(r)}{at}"
        if r_kind in ("record", "enum", "fixed") and _unqualified(r.get("name")) != _unqualified(
            w.get("name")
        ):
            return f"{_describe(w)} cannot be read as {_describe(r)}{at}"
        if r_kind == "record":
            pair = (r["name"], w["name"])
            if pair in self._assumed:
                return None
            self._assumed.add(pair)
            return self._record(r, w, where)
        if r_kind == "enum":
            missing = [s for s in w.get("symbols", ()) if s not in r.get("symbols", ())]
            if missing and "default" not in r:
                return f"enum {r['name']}{at} lacks the symbol(s) {', '.join(missing)}"
            return None
        if r_kind == "fixed":
            if r.get("size") != w.get("size"):
                return f"fixed {r['name']}{at} has size {r.get('size')}, not {w.get('size')}"
            return None
        if r_kind == "array":
            return self.problem(r["items"], w["items"], f"{where}[]")
        if r_kind == "map":
            return self.problem(r["values"], w["values"], f"{where}{{}}")
        return None

    def _record(self, r: Any, w: Any, where: str) -> str | None:
        written = {f["name"]: f for f in w["fields"]}
        for field in r["fields"]:
            names = [field["name"], *field.get("aliases", ())]
            source = next((written[n] for n in names if n in written), None)
            path = f"{where}.{field['name']}" if where else field["name"]
            if source is None:
                if "default" not in field:
                    return f"field {path} has no default and is missing from the other revision"
                continue
            problem = self.problem(field["type"], source["type"], path)
            if problem is not None:
                return problem
        return None


def _unqualified(name: Any) -> str:
    return str(name).rsplit(".", 1)[-1]
