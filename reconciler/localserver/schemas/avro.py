"""Avro schemas as Pub/Sub uses them: a definition parsed by fastavro, messages
checked in the JSON encoding or the binary one, and whether a new revision may follow
an old one (Avro's schema resolution both ways: the commit-schema-revision guide says
a new revision must obey the rules "as though it is both the reader schema and the
writer schema").

fastavro is imported when the first Avro definition is compiled, not when the server
starts (a `--local` run that never meets a schema does not load it).

What keeps a hostile definition or message from hurting the server, decided once per
definition over the parsed schema as a graph of its types (`_Graph`, walked without
recursion): its depth and the number of its named types are bounded (`bounds`); a
schema with an array of items that take no bytes (null, a record or error whose
fields all take none, a fixed of size 0) is refused, because one short message could
name billions of items; binary messages are checked by `avro_binary`, which builds
nothing and counts how deeply a message nests, and JSON ones by `_JsonCheck`, which
counts it too. fastavro's own reader is not used on messages: its compiled reader
recurses on the C stack, and a deep message of a recursive schema crashed the
process."""

from __future__ import annotations

import json
from typing import Any

from reconciler.localserver.schemas import bounds
from reconciler.localserver.schemas.avro_binary import binary_checker
from reconciler.localserver.schemas.reasons import short

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})
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

        try:
            raw = json.loads(text)
        except RecursionError:
            raise bounds.OverLimit(bounds.too_deep_to_read()) from None
        except ValueError as exc:
            raise ValueError(f"not JSON ({short(exc)})") from None
        named: dict[str, Any] = {}
        try:
            self.schema = fastavro.parse_schema(raw, named_schemas=named)
        except RecursionError:
            raise bounds.OverLimit(bounds.too_deep_to_read()) from None
        except Exception as exc:
            raise ValueError(short(exc)) from None
        self.named = named
        graph = _Graph(self.schema, named)
        bounds.check_shape(bounds.Shape(depth=graph.depth(), types=len(named)))
        if graph.union_in_union:
            raise ValueError(
                "a union holds a union as a branch; the Avro specification does not allow "
                "it (a union may not immediately contain another union)"
            )
        empty = graph.zero_width_items()
        if empty is not None:
            raise ValueError(
                f"an array of {_describe(empty)} takes no bytes per item, so one "
                "message could name any number of them; the local server refuses such "
                "schemas (use a type that takes at least one byte, e.g. a boolean)"
            )
        # The check of binary messages, called as it is (the Publish hot path).
        self.check_binary = binary_checker(self.schema, named)
        self._json = _JsonCheck(named)

    # ------------------------------------------------------------------- messages

    def check_json(self, data: bytes) -> str | None:
        """None when `data` is one JSON-encoded datum of the schema, else the reason."""
        try:
            document = json.loads(data)
        except RecursionError:
            return bounds.too_deep_message()
        except ValueError as exc:
            return f"not JSON ({short(exc)})"
        return self._json.problem(self.schema, document, "", 0)

    # ------------------------------------------------------------------ revisions

    def incompatibility(self, other: AvroDefinition) -> str | None:
        """Why this revision cannot follow `other` (each must read what the other
        writes), or None."""
        for reader, writer, direction in (
            (self, other, "the new revision cannot read what the other writes"),
            (other, self, "the other revision cannot read what the new one writes"),
        ):
            problem = _Resolution(reader.named, writer.named).problem(
                reader.schema, writer.schema, "", 0
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


class _Graph:
    """A parsed schema's complex types as a graph, read once without recursion: a
    named type is its full name, an array, map or union its node's identity; an edge
    goes from a type to each type it holds (a record's or error's fields, an array's
    items, a map's values, a union's branches)."""

    def __init__(self, schema: Any, named: dict[str, Any]) -> None:
        self.named = named
        self.nodes: dict[Any, Any] = {}  # key -> node
        self.edges: dict[Any, list[Any]] = {}  # key -> the keys of the types it holds
        self.union_in_union = False
        self.root = self.key(schema)
        if self.root is None:
            return
        self.nodes[self.root] = self.resolve(schema)
        todo = [self.root]
        while todo:
            key = todo.pop()
            children = []
            node = self.nodes[key]
            if isinstance(node, list) and any(isinstance(branch, list) for branch in node):
                self.union_in_union = True
            for child in _held(node):
                child_key = self.key(child)
                if child_key is None:
                    continue
                children.append(child_key)
                if child_key not in self.nodes:
                    self.nodes[child_key] = self.resolve(child)
                    todo.append(child_key)
            self.edges[key] = children

    def resolve(self, node: Any) -> Any:
        return self.named[node] if isinstance(node, str) else node

    def key(self, node: Any) -> Any:
        """The graph key of a type, or None for a primitive (it holds nothing)."""
        if isinstance(node, str):
            return node if node in self.named else None
        if isinstance(node, list):
            return id(node)
        kind = node.get("type")
        if kind in _NAMED:
            return node["name"]
        return id(node) if kind in ("array", "map") else None

    def depth(self) -> int:
        if self.root is None:
            return 0
        return bounds.graph_depth([self.root], self.edges)

    def zero_width_items(self) -> Any:
        """The items of the first array whose items take no bytes, or None. A type
        takes a byte at least when it is a primitive other than null, an enum, array,
        map or union, a fixed of size 1 or more, or a record or error with a field
        that does: settled for every type at once by propagation from the types known
        to take bytes (linear; a record that holds only itself takes none)."""
        takes: set[Any] = set()
        waiting: dict[Any, list[Any]] = {}  # key -> the records that wait on it
        ready: list[Any] = []
        for key, node in self.nodes.items():
            kind = _kind(node)
            if kind in ("record", "error"):
                for field in node["fields"]:
                    child = self.key(field["type"])
                    if child is None:
                        if _primitive_takes_bytes(field["type"]):
                            break
                    else:
                        waiting.setdefault(child, []).append(key)
                else:
                    continue
                ready.append(key)
            elif kind != "fixed" or int(node.get("size", 1)) > 0:
                ready.append(key)
        while ready:
            key = ready.pop()
            if key in takes:
                continue
            takes.add(key)
            ready.extend(r for r in waiting.get(key, ()) if r not in takes)
        for node in self.nodes.values():
            if _kind(node) == "array":
                items = node["items"]
                key = self.key(items)
                if key is None and not _primitive_takes_bytes(items):
                    return items
                if key is not None and key not in takes:
                    return self.nodes[key]
        return None


def _held(node: Any) -> list[Any]:
    """The types a complex type holds."""
    if isinstance(node, list):
        return node
    kind = node.get("type")
    if kind in ("record", "error"):
        return [field["type"] for field in node["fields"]]
    if kind == "array":
        return [node["items"]]
    if kind == "map":
        return [node["values"]]
    return []


def _primitive_takes_bytes(node: Any) -> bool:
    return _kind(node) != "null"


def _describe(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
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
        self._sets: dict[str, frozenset[str]] = {}
        self._unions: dict[int, dict[str, Any]] = {}  # by the union's identity (kept alive)

    def _symbols(self, enum: Any) -> frozenset[str]:
        """An enum's symbols as a set (an enum may have tens of thousands, and a
        message as many values)."""
        found = self._sets.get(enum["name"])
        if found is None:
            found = self._sets[enum["name"]] = frozenset(enum["symbols"])
        return found

    def problem(self, schema: Any, value: Any, where: str, depth: int) -> str | None:
        """Why `value` is no datum of `schema`, or None; `depth` is how many records,
        arrays and maps hold it (more than `bounds.MAX_DEPTH` is refused before going
        deeper, so the walk's recursion is bounded)."""
        if isinstance(schema, str):
            if schema in self.named:
                return self.problem(self.named[schema], value, where, depth)
            return self._primitive(schema, value, where)
        if isinstance(schema, list):
            return self._union(schema, value, where, depth)
        kind = schema.get("type")
        if kind in ("record", "error", "array", "map"):
            if depth >= bounds.MAX_DEPTH:
                return bounds.too_deep_message()
            depth += 1
        if kind in ("record", "error"):
            if not isinstance(value, dict):
                return f"{where or 'the message'} is not a JSON object"
            for field in schema["fields"]:
                name = field["name"]
                path = f"{where}.{name}" if where else name
                if name not in value:
                    return f"field {path} is missing"
                problem = self.problem(field["type"], value[name], path, depth)
                if problem is not None:
                    return problem
            return None
        if kind == "enum":
            if not isinstance(value, str) or value not in self._symbols(schema):
                what = where or "the message"
                return f"{what}: {_show(value)} is not a symbol of {schema['name']}"
            return None
        if kind == "array":
            if not isinstance(value, list):
                return f"{where or 'the message'} is not a JSON array"
            for i, item in enumerate(value):
                problem = self.problem(schema["items"], item, f"{where}[{i}]", depth)
                if problem is not None:
                    return problem
            return None
        if kind == "map":
            if not isinstance(value, dict):
                return f"{where or 'the message'} is not a JSON object"
            for key, item in value.items():
                problem = self.problem(schema["values"], item, f"{where}[{key!r}]", depth)
                if problem is not None:
                    return problem
            return None
        if kind == "fixed":
            problem = self._primitive("bytes", value, where)
            if problem is None and len(value) != schema["size"]:
                return f"{where or 'the message'} has {len(value)} bytes, not {schema['size']}"
            return problem
        return self.problem(kind, value, where, depth)  # a primitive with attributes

    def _union(self, branches: list[Any], value: Any, where: str, depth: int) -> str | None:
        if value is None:
            if "null" in self._named_branches(branches):
                return None
            return f"{where or 'the message'} may not be null"
        if not isinstance(value, dict) or len(value) != 1:
            return (
                f"{where or 'the message'}: a union's value is null or an object with one "
                "member named for the branch's type"
            )
        ((key, inner),) = value.items()
        branch = self._named_branches(branches).get(key)
        if branch is None:
            return f"{where or 'the message'}: {key!r} is no branch of the union"
        return self.problem(branch, inner, where, depth)

    def _named_branches(self, branches: list[Any]) -> dict[str, Any]:
        """A union's branches by the names a JSON value may key them with (the full
        name and the unqualified one; the first branch a name fits wins), made once
        per union: a union may have a thousand branches, and a message as many
        values."""
        found = self._unions.get(id(branches))
        if found is None:
            found = {}
            for branch in branches:
                if isinstance(branch, list):
                    continue  # a union in a union, which a definition may not hold
                name = branch if isinstance(branch, str) else branch.get("name", branch.get("type"))
                if isinstance(name, str):
                    found.setdefault(name, branch)
                    found.setdefault(_unqualified(name), branch)
            self._unions[id(branches)] = found
        return found

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
        self._indexes: dict[int, dict[tuple[str, str | None], list[Any]]] = {}

    def _resolve(self, node: Any, named: dict[str, Any]) -> Any:
        if isinstance(node, str) and node not in _PRIMITIVES:
            return named.get(node, node)
        if isinstance(node, dict) and node.get("type") in _PRIMITIVES and len(node) == 1:
            return node["type"]
        return node

    def problem(self, reader: Any, writer: Any, where: str, depth: int) -> str | None:
        """Why data written as `writer` cannot be read as `reader`, or None; `depth`
        counts the records, arrays and maps compared above (bounded, so that the
        comparison's recursion is)."""
        r = self._resolve(reader, self.reader_named)
        w = self._resolve(writer, self.writer_named)
        r_kind, w_kind = _kind(r), _kind(w)
        at = f" at {where}" if where else ""
        if depth > bounds.MAX_DEPTH:
            return (
                f"the revisions nest more than {bounds.MAX_DEPTH} levels deep{at}; the "
                "local server compares no deeper"
            )
        if w_kind == "union":
            for branch in w:
                problem = self.problem(r, branch, where, depth)
                if problem is not None:
                    return problem
            return None
        if r_kind == "union":
            if any(self.problem(b, w, where, depth) is None for b in self._readers_of(r, w)):
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
            return self._record(r, w, where, depth + 1)
        if r_kind == "enum":
            known = set(r.get("symbols", ()))
            missing = [s for s in w.get("symbols", ()) if s not in known]
            if missing and "default" not in r:
                return f"enum {r['name']}{at} lacks the symbol(s) {', '.join(missing)}"
            return None
        if r_kind == "fixed":
            if r.get("size") != w.get("size"):
                return f"fixed {r['name']}{at} has size {r.get('size')}, not {w.get('size')}"
            return None
        if r_kind == "array":
            return self.problem(r["items"], w["items"], f"{where}[]", depth + 1)
        if r_kind == "map":
            return self.problem(r["values"], w["values"], f"{where}{{}}", depth + 1)
        return None

    def _readers_of(self, union: list[Any], w: Any) -> list[Any]:
        """The branches of a reader's union that may read `w` (resolved): those of
        its kind or one it is promoted to, and of its name for a named type; from an
        index made once per union (a union may have a thousand branches)."""
        index = self._indexes.get(id(union))
        if index is None:
            index = {}
            for branch in union:
                resolved = self._resolve(branch, self.reader_named)
                index.setdefault(_branch_key(resolved), []).append(branch)
            self._indexes[id(union)] = index
        kind = _kind(w)
        keys = [_branch_key(w), ("union", None)]  # a union in a union: fastavro takes it
        if kind not in _NAMED:
            keys += [(promoted, None) for promoted in _PROMOTIONS.get(kind, ())]
        return [branch for key in keys for branch in index.get(key, ())]

    def _record(self, r: Any, w: Any, where: str, depth: int) -> str | None:
        written = {f["name"]: f for f in w["fields"]}
        for field in r["fields"]:
            names = [field["name"], *field.get("aliases", ())]
            source = next((written[n] for n in names if n in written), None)
            path = f"{where}.{field['name']}" if where else field["name"]
            if source is None:
                if "default" not in field:
                    return f"field {path} has no default and is missing from the other revision"
                continue
            problem = self.problem(field["type"], source["type"], path, depth)
            if problem is not None:
                return problem
        return None


def _branch_key(node: Any) -> tuple[str, str | None]:
    """A resolved type's kind, and its unqualified name when it is a named type."""
    kind = _kind(node)
    return kind, _unqualified(node.get("name")) if kind in _NAMED else None


def _unqualified(name: Any) -> str:
    return str(name).rsplit(".", 1)[-1]
