"""Properties of the local server's schema handling, on random input (seeded and
bounded: the same examples every run, a few seconds each):

- the binary Avro check (`schemas/avro_binary.py`) accepts and refuses exactly what
  fastavro's reader does, with the stricter refusals its docstring lists, on random
  schemas and on random, written and mutated bytes;
- random Avro schemas and messages, and random Protocol Buffer definitions and
  messages, sent through the real `SchemaServiceClient`, are answered OK or
  INVALID_ARGUMENT, never anything else, and the server answers a GetTopic after."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import fastavro
import fastavro._read_py
import fastavro.validation
import pytest
from google.api_core import exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.localserver.schemas.avro import AvroDefinition
from reconciler.localserver.schemas.avro_binary import binary_checker

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/still-here"
SEEDED = settings(
    derandomize=True, database=None, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large],
)

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
]


@st.composite
def avro_schemas(draw: Any, depth: int = 0, names: list[str] | None = None) -> Any:
    """A random Avro schema: primitives, logical types, enums, fixeds (size 0
    included), arrays, maps, unions and records (errors too), a record's field now
    and then naming an enclosing record (recursion)."""
    names = [] if names is None else names
    leaf = st.sampled_from(PRIMITIVES) | st.sampled_from(LOGICAL)
    if depth >= 3:
        return draw(leaf)
    kind = draw(st.sampled_from(
        ["leaf", "leaf", "enum", "fixed", "array", "map", "union", "record", "record"]))
    if kind == "leaf":
        return draw(leaf)
    if kind in ("enum", "fixed", "record"):
        name = f"T{len(names)}"
        names.append(name)
        if kind == "enum":
            count = draw(st.integers(1, 4))
            return {"type": "enum", "name": name, "symbols": [f"S{i}" for i in range(count)]}
        if kind == "fixed":
            return {"type": "fixed", "name": name, "size": draw(st.integers(0, 5))}
        fields = []
        for i in range(draw(st.integers(0, 4))):
            if names and draw(st.integers(0, 4)) == 0:  # recursion, through a union
                field_type: Any = ["null", draw(st.sampled_from(names))]
            else:
                field_type = draw(avro_schemas(depth + 1, names))
            fields.append({"name": f"f{i}", "type": field_type})
        record = draw(st.sampled_from(["record", "error"]))
        return {"type": record, "name": name, "fields": fields}
    if kind == "array":
        return {"type": "array", "items": draw(avro_schemas(depth + 1, names))}
    if kind == "map":
        return {"type": "map", "values": draw(avro_schemas(depth + 1, names))}
    branches = draw(st.lists(st.sampled_from(PRIMITIVES), min_size=1, max_size=4, unique=True))
    if draw(st.booleans()):
        branches.append(draw(avro_schemas(depth + 1, names)))
    return branches


def _datum(draw: Any, schema: Any, named: dict[str, Any], depth: int) -> Any:
    """A random datum of a parsed schema, for fastavro's writer."""
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if isinstance(schema, list):
        usable = [b for b in schema if depth < 4 or b == "null"] or schema
        branch = draw(st.sampled_from(usable))
        return _datum(draw, branch, named, depth + 1)
    kind = schema if isinstance(schema, str) else schema["type"]
    logical = None if isinstance(schema, str) else schema.get("logicalType")
    if logical is not None:
        raw = {"date": st.dates(), "uuid": st.uuids().map(str),
               "timestamp-millis": st.datetimes(timezones=st.just(fastavro.read.epoch.tzinfo)),
               "decimal": st.decimals(min_value=-999, max_value=999, places=2,
                                      allow_nan=False, allow_infinity=False)}.get(logical)
        if raw is not None:
            return draw(raw)
        return draw(st.integers(0, 10**6))
    simple = {
        "null": st.none(), "boolean": st.booleans(), "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1), "float": st.floats(width=32),
        "double": st.floats(), "bytes": st.binary(max_size=6), "string": st.text(max_size=6),
    }
    if kind in simple:
        return draw(simple[kind])
    if kind == "enum":
        return draw(st.sampled_from(schema["symbols"]))
    if kind == "fixed":
        return draw(st.binary(min_size=schema["size"], max_size=schema["size"]))
    if kind == "array":
        return [_datum(draw, schema["items"], named, depth + 1)
                for _ in range(draw(st.integers(0, 3 if depth < 4 else 0)))]
    if kind == "map":
        return {draw(st.text(max_size=3)): _datum(draw, schema["values"], named, depth + 1)
                for _ in range(draw(st.integers(0, 3 if depth < 4 else 0)))}
    return {f["name"]: _datum(draw, f["type"], named, depth + 1) for f in schema["fields"]}


@st.composite
def messages(draw: Any, parsed: Any, named: dict[str, Any]) -> bytes:
    """Bytes to check: a written datum, that datum mutated, or any bytes at all."""
    how = draw(st.sampled_from(["written", "mutated", "mutated", "random"]))
    if how == "random":
        return bytes(draw(st.binary(max_size=40)))
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, parsed, _datum(draw, parsed, named, 0))
    except (ValueError, TypeError, OverflowError, AttributeError):
        return bytes(draw(st.binary(max_size=40)))  # a datum fastavro will not write
    data = bytearray(out.getvalue())
    if how == "written":
        return bytes(data)
    for _ in range(draw(st.integers(1, 3))):
        edit = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "append"]))
        at = draw(st.integers(0, len(data)))
        byte = draw(st.integers(0, 255))
        if edit == "flip" and at < len(data):
            data[at] = byte
        elif edit == "insert":
            data.insert(at, byte)
        elif edit == "delete" and at < len(data):
            del data[at]
        elif edit == "truncate":
            del data[at:]
        else:
            data.append(byte)
    return bytes(data)


def fastavro_accepts(parsed: Any, data: bytes) -> bool | None:
    """fastavro's pure-Python reader (exact integers) with the server's two checks
    on top, trailing bytes and ranges; None where it recurses past Python's limit."""
    stream = io.BytesIO(data)
    try:
        datum = fastavro._read_py.schemaless_reader(stream, parsed, None)
    except RecursionError:
        return None
    except Exception:
        return False
    if stream.tell() != len(data):
        return False
    return bool(fastavro.validation.validate(datum, parsed, raise_errors=False))


# Where the server is stricter than fastavro, by design (avro_binary's docstring).
STRICTER = re.compile(r"-\d+ is no (branch|symbol) index|nested too deeply")


@settings(SEEDED, max_examples=150)
@given(st.data())
def test_the_binary_check_refuses_what_fastavro_refuses(data: Any) -> None:
    schema = data.draw(avro_schemas())
    named: dict[str, Any] = {}
    parsed = fastavro.parse_schema(schema, named_schemas=named)
    try:
        AvroDefinition(json.dumps(schema))
    except ValueError as exc:  # an array of items that take no bytes, a union in a union
        assert "takes no bytes per item" in str(exc) or "holds a union" in str(exc)
        return
    check = binary_checker(parsed, named)
    for _ in range(4):
        message = data.draw(messages(parsed, named))
        ours = check(message)
        theirs = fastavro_accepts(parsed, message)
        if theirs is None:
            assert ours is not None and "nested too deeply" in ours
            continue
        if ours is None:
            assert theirs, (schema, message)
            # ... and fastavro's compiled reader reads it too, to the same end.
            stream = io.BytesIO(message)
            fastavro.schemaless_reader(stream, parsed, None)
            assert stream.tell() == len(message)
        elif theirs:
            assert STRICTER.search(ours), (schema, message, ours)


@pytest.fixture
def alive(publisher_client: Any) -> Any:
    publisher_client.create_topic(name=TOPIC)
    return lambda: publisher_client.get_topic(topic=TOPIC)


def _answer(call: Any, request: dict[str, Any]) -> str:
    """"OK" or "INVALID_ARGUMENT"; anything else fails the test."""
    try:
        call(request=request, timeout=120)
    except exceptions.InvalidArgument:
        return "INVALID_ARGUMENT"
    return "OK"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=10,
)


@settings(SEEDED, max_examples=60)
@given(data=st.data())
def test_avro_schemas_and_messages_get_ok_or_invalid_argument(
    schema_client: Any, alive: Any, data: Any
) -> None:
    text = data.draw(st.one_of(
        avro_schemas().map(json.dumps),
        json_values.map(json.dumps),
        st.text(max_size=60),
    ))
    shaped = []  # messages written for the schema, when it is one fastavro writes
    try:
        named: dict[str, Any] = {}
        parsed = fastavro.parse_schema(json.loads(text), named_schemas=named)
        shaped.append(("BINARY", data.draw(messages(parsed, named))))
        out = io.StringIO()
        fastavro.json_writer(out, parsed, [_datum(data.draw, parsed, named, 0)])
        shaped.append(("JSON", out.getvalue().encode()))
    except Exception:
        pass
    _schema_then_messages(schema_client, {"type_": "AVRO", "definition": text}, data, shaped)
    alive()


def _schema_then_messages(
    schema_client: Any, schema: dict[str, Any], data: Any,
    shaped: list[tuple[str, bytes]] | None = None,
) -> None:
    """ValidateSchema, then ValidateMessage of random bytes, random JSON and any
    messages `shaped` for the schema: each OK or INVALID_ARGUMENT (a schema refused
    refuses every message)."""
    answer = _answer(schema_client.validate_schema, {"parent": P, "schema": schema})
    for encoding, message in [
        ("BINARY", data.draw(st.binary(max_size=60))),
        ("JSON", json.dumps(data.draw(json_values)).encode()),
        *(shaped or []),
    ]:
        request = {"parent": P, "schema": schema, "message": message, "encoding": encoding}
        got = _answer(schema_client.validate_message, request)
        assert answer == "OK" or got == "INVALID_ARGUMENT"


@st.composite
def proto_definitions(draw: Any) -> str:
    """Random `.proto` text: a message with random fields (scalars, enums, nested and
    recursive messages, maps, oneofs, repeated), now and then a broken token."""
    scalars = ["int32", "int64", "uint32", "sint64", "bool", "string", "bytes", "double",
               "fixed32", "sfixed64", "float"]
    lines = [draw(st.sampled_from(['syntax = "proto3";', 'syntax = "proto2";', ""]))]
    proto2 = "proto2" in lines[0]
    nested = [f"N{i}" for i in range(draw(st.integers(0, 3)))]
    body = []
    for number, _ in enumerate(range(draw(st.integers(0, 6))), start=1):
        kind = draw(st.sampled_from(["scalar", "nested", "self", "map", "enum", "repeated"]))
        label = draw(st.sampled_from(["optional ", "required ", ""])) if proto2 else ""
        if kind == "scalar":
            body.append(f"{label}{draw(st.sampled_from(scalars))} f{number} = {number};")
        elif kind in ("nested", "self") and (nested or kind == "self"):
            target = "Top" if kind == "self" or not nested else draw(st.sampled_from(nested))
            body.append(f"{label or 'optional ' if proto2 else ''}{target} f{number} = {number};")
        elif kind == "map":
            body.append(f"map<string, {draw(st.sampled_from(scalars))}> f{number} = {number};")
        elif kind == "enum":
            body.append(f"enum En{number} {{ EN{number}_A = 0; EN{number}_B = 1; }}")
            body.append(f"{label or 'optional ' if proto2 else ''}En{number} f{number} = {number};")
        else:
            body.append(f"repeated {draw(st.sampled_from(scalars))} f{number} = {number};")
    for name in nested:
        inner = draw(st.sampled_from(["", "optional Top back = 1;" if proto2 else "Top back = 1;"]))
        body.append(f"message {name} {{ {inner} }}")
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(0, len(body)))
        body.insert(at, draw(st.sampled_from(["}", "{", "= 1;", "message", "import \"x\";",
                                              "oneof o { int32 a = 99; }", "\x00"])))
    lines.append("message Top {")
    lines.extend(f"  {line}" for line in body)
    lines.append("}")
    return "\n".join(lines) + "\n"


@settings(SEEDED, max_examples=12)
@given(data=st.data())
def test_protocol_buffer_definitions_and_messages_get_ok_or_invalid_argument(
    schema_client: Any, alive: Any, data: Any
) -> None:
    schema = {"type_": "PROTOCOL_BUFFER", "definition": data.draw(proto_definitions())}
    _schema_then_messages(schema_client, schema, data)
    alive()
