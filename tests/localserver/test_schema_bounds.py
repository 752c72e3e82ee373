"""Hostile schemas and messages through the real `SchemaServiceClient`: each is
refused with INVALID_ARGUMENT naming what is wrong (or a limit of
`reconciler/localserver/schemas/bounds.py`), in bounded time and memory, nothing runs
from where the server was started, and the server answers a GetTopic afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.localserver.api.wire import varint

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/still-here"
# A hang guard for calls that spun a server thread before their fix, not a timing
# assertion: a regression fails instead of hanging the suite.
HANG_GUARD_S = 120


@pytest.fixture
def alive(publisher_client: Any) -> Any:
    """Checks, when called, that the server still answers a GetTopic."""
    publisher_client.create_topic(name=TOPIC)

    def check() -> None:
        assert publisher_client.get_topic(topic=TOPIC).name == TOPIC

    return check


def avro(definition: Any) -> dict[str, Any]:
    return avro_text(json.dumps(definition))


def avro_text(text: str) -> dict[str, Any]:
    return {"type_": "AVRO", "definition": text}


def proto(text: str) -> dict[str, Any]:
    return {"type_": "PROTOCOL_BUFFER", "definition": text}


def refused(call: Any, **request: Any) -> str:
    """The INVALID_ARGUMENT message `call(request=...)` answers."""
    with pytest.raises(exceptions.InvalidArgument) as info:
        call(request=request, timeout=HANG_GUARD_S)
    return str(info.value.message)


def zigzag(n: int) -> bytes:
    """An Avro long: zigzag, then base-128 varint."""
    return varint((n << 1) ^ (n >> 63))


# ----------------------------------------------------------- recursive error types


def test_a_deep_message_of_a_self_referencing_error_type_is_refused(
    schema_client: Any, alive: Any
) -> None:
    """Once a SIGSEGV: fastavro's compiled reader recursed on the C stack for a
    recursive `error` type (the guard looked only at records)."""
    linked = {"type": "error", "name": "E", "fields": [{"name": "next", "type": ["null", "E"]}]}
    deep = b"\x02" * 1_000_000 + b"\x00"
    message = refused(
        schema_client.validate_message, parent=P, schema=avro(linked), message=deep,
        encoding="BINARY",
    )
    assert message == (
        "Could not parse binary Avro message: nested too deeply (more than 100 levels)"
    )
    alive()


@pytest.mark.parametrize("levels", [100, 101])
def test_message_depth_at_and_over_the_limit(schema_client: Any, levels: int) -> None:
    """A linked list 100 records deep is a message; 101 is refused, in binary and in
    JSON."""
    linked = {"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]}
    binary = b"\x02" * (levels - 1) + b"\x00"
    document: Any = {"next": None}
    for _ in range(levels - 1):
        document = {"next": {"N": document}}
    for encoding, data in (("BINARY", binary), ("JSON", json.dumps(document).encode())):
        request = {"parent": P, "schema": avro(linked), "message": data, "encoding": encoding}
        if levels <= 100:
            schema_client.validate_message(request=request)
        else:
            assert refused(schema_client.validate_message, **request).endswith(
                "nested too deeply (more than 100 levels)"
            )


# ------------------------------------------------------------- zero-width items


@pytest.mark.parametrize("kind", ["record", "error"])
def test_an_array_of_field_less_records_or_errors_is_refused(
    schema_client: Any, alive: Any, kind: str
) -> None:
    """An array of field-less errors once passed the guard that refused records, and
    an 11-byte message then exhausted memory."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": {
        "type": "array", "items": {"type": kind, "name": "E", "fields": []}}}]}
    for call, request in (
        (schema_client.validate_schema, {"schema": avro(schema)}),
        (schema_client.validate_message, {
            "schema": avro(schema), "message": zigzag(2**62 - 1) + b"\x00",
            "encoding": "BINARY"}),
    ):
        assert refused(call, parent=P, **request) == (
            f"Could not parse schema definition: an array of {kind} E takes no bytes per "
            "item, so one message could name any number of them; the local server refuses "
            "such schemas (use a type that takes at least one byte, e.g. a boolean)"
        )
    alive()


def test_items_that_take_no_bytes_through_references_and_nesting_are_found(
    schema_client: Any,
) -> None:
    """Zero width is settled for every type: a record whose fields are a null, a
    fixed of size 0 and a field-less error, named before the array that uses it."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "empty", "type": {"type": "record", "name": "Z", "fields": [
            {"name": "n", "type": "null"},
            {"name": "f", "type": {"type": "fixed", "name": "F0", "size": 0}},
            {"name": "e", "type": {"type": "error", "name": "E", "fields": []}}]}},
        {"name": "many", "type": {"type": "array", "items": "Z"}}]}
    message = refused(schema_client.validate_schema, parent=P, schema=avro(schema))
    assert "an array of record Z takes no bytes per item" in message
    # The same record with one field that takes a byte is fine.
    schema["fields"][0]["type"]["fields"].append({"name": "b", "type": "boolean"})
    schema_client.validate_schema(parent=P, schema=avro(schema))


def test_the_zero_width_check_is_linear(schema_client: Any, alive: Any) -> None:
    """40 levels of a record whose two fields are the next level (a 3.5 KB schema):
    the check once explored 2^40 paths and left ValidateSchema unanswered."""

    def level(i: int) -> Any:
        if i == 39:
            return {"type": "record", "name": "L39", "fields": [{"name": "z", "type": "null"}]}
        return {"type": "record", "name": f"L{i}", "fields": [
            {"name": "a", "type": level(i + 1)}, {"name": "b", "type": f"L{i + 1}"}]}

    schema = {"type": "record", "name": "Top", "fields": [
        {"name": "xs", "type": {"type": "array", "items": level(0)}}]}
    message = refused(schema_client.validate_schema, parent=P, schema=avro(schema))
    assert "an array of record L0 takes no bytes per item" in message
    alive()


def test_a_union_in_a_union_is_refused(schema_client: Any, alive: Any) -> None:
    """fastavro takes a union that holds a union (the specification forbids it); a
    JSON message for it once ended in INTERNAL "local server bug: AttributeError"."""
    nested = ["null", ["null", "int"]]
    message = refused(
        schema_client.validate_message, parent=P, schema=avro(nested), message=b'{"int": 1}',
        encoding="JSON",
    )
    assert message == (
        "Could not parse schema definition: a union holds a union as a branch; the Avro "
        "specification does not allow it (a union may not immediately contain another union)"
    )
    alive()


def test_enums_and_unions_of_thousands_cost_no_more_per_value(
    schema_client: Any, alive: Any
) -> None:
    """A JSON message of 200,000 values of a 25,000-symbol enum, and a revision that
    lists the symbols the other way round: once a search of the symbols per value
    (neither answered within a minute), now a set."""
    symbols = [f"S{i}" for i in range(25_000)]
    array = {"type": "array", "items": {"type": "enum", "name": "E", "symbols": symbols}}
    schema = {"type": "record", "name": "R", "fields": [{"name": "xs", "type": array}]}
    values = json.dumps({"xs": [symbols[-1]] * 200_000}).encode()
    schema_client.validate_message(
        request={"parent": P, "schema": avro(schema), "message": values, "encoding": "JSON"},
        timeout=HANG_GUARD_S,
    )
    schema_client.create_schema(parent=P, schema_id="big-enum", schema=avro(schema))
    array["items"]["symbols"] = symbols[::-1]
    schema_client.commit_schema(
        name=f"{P}/schemas/big-enum", schema=avro(schema), timeout=HANG_GUARD_S
    )
    alive()


# ------------------------------------------------------ declared counts and lengths


@pytest.mark.parametrize(
    ("items", "data"),
    [
        ({"type": "array", "items": "boolean"}, zigzag(2**62) + b"\x01"),
        ({"type": "array", "items": "boolean"}, zigzag(-(2**62)) + zigzag(2**62) + b"\x01"),
        ({"type": "map", "values": "null"}, zigzag(2**62) + b"\x02k"),
        ("string", zigzag(2**62) + b"abc"),
        ("bytes", b"\xfe" + b"\xff" * 30 + b"\x01"),  # a length of 217 bits
    ],
)
def test_huge_declared_counts_and_lengths_end_at_the_message(
    schema_client: Any, alive: Any, items: Any, data: bytes
) -> None:
    """A count or length is checked against the bytes there are, never allocated."""
    message = refused(
        schema_client.validate_message, parent=P, schema=avro(items), message=data,
        encoding="BINARY",
    )
    assert message == "Could not parse binary Avro message: Not enough data to parse for schema."
    alive()


# ---------------------------------------------------------------- protoc's place


def test_protoc_imports_nothing_from_where_the_server_runs(
    schema_client: Any, alive: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `grpc_tools` package in the server's working directory (a checked-out pull
    request, say) once ran on one ValidateSchema call."""
    marker = tmp_path / "ran"
    package = tmp_path / "grpc_tools"
    package.mkdir()
    for module in ("__init__.py", "protoc.py", "__main__.py"):
        (package / module).write_text(f"open({str(marker)!r}, 'a').write({module!r})\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONSTARTUP", str(package / "__init__.py"))
    schema_client.validate_schema(
        parent=P, schema=proto('syntax = "proto3";\nmessage A { string x = 1; }\n')
    )
    with pytest.raises(exceptions.InvalidArgument, match=r"schema\.proto:2:"):
        schema_client.validate_schema(parent=P, schema=proto('syntax = "proto3";\nmessage {'))
    assert not marker.exists()
    alive()


# ------------------------------------------------------------------ depth, types


def _proto_chain(links: int, extra: str = "") -> str:
    """A top-level message holding a chain of `links` nested types, each the next's."""
    body = "".join(f"  message N{i} {{ N{i + 1} next = 1; }}\n" for i in range(links - 1))
    body += f"  message N{links - 1} {{ string x = 1;{extra} }}\n"
    return f'syntax = "proto3";\npackage deep;\nmessage Top {{\n  N0 head = 1;\n{body}}}\n'


def test_a_deep_proto_chain_is_invalid_argument_not_an_internal_error(
    schema_client: Any, alive: Any
) -> None:
    """600 nested types, each holding the next (20 KB): once INTERNAL "local server
    bug: RecursionError"."""
    message = refused(schema_client.validate_schema, parent=P, schema=proto(_proto_chain(600)))
    assert message == (
        "Could not parse schema definition: the definition nests types 601 deep; the local "
        "server takes at most 100 levels"
    )
    alive()


def test_avro_nested_past_what_json_reads_names_the_limit(schema_client: Any, alive: Any) -> None:
    node = '"null"'
    for i in range(600):
        node = f'{{"type":"record","name":"R{i}","fields":[{{"name":"f","type":{node}}}]}}'
    message = refused(schema_client.validate_schema, parent=P, schema=avro_text(node))
    assert message == (
        "Could not parse schema definition: the definition nests too deeply to read; the "
        "local server takes types at most 100 levels deep"
    )
    alive()


def _avro_chain(levels: int) -> dict[str, Any]:
    node: Any = "long"
    for i in range(levels):
        node = {"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": node}]}
    return node  # type: ignore[no-any-return]


def _avro_types(count: int) -> dict[str, Any]:
    return {"type": "record", "name": "Top", "fields": [
        {"name": f"f{i}", "type": {"type": "enum", "name": f"E{i}", "symbols": ["A"]}}
        for i in range(count - 1)
    ]}


def _proto_types(count: int) -> str:
    nested = "".join(f"  enum E{i} {{ E{i}_A = 0; }}\n" for i in range(count - 1))
    return f'syntax = "proto3";\nmessage Top {{\n  string x = 1;\n{nested}}}\n'


@pytest.mark.parametrize(
    ("schema", "over"),
    [
        (avro(_avro_chain(100)), None),
        (avro(_avro_chain(101)), "the definition nests types 101 deep; the local server "
         "takes at most 100 levels"),
        (proto(_proto_chain(99)), None),
        (proto(_proto_chain(100)), "the definition nests types 101 deep; the local server "
         "takes at most 100 levels"),
        (avro(_avro_types(1_000)), None),
        (avro(_avro_types(1_001)), "the definition declares 1,001 types; the local server "
         "takes at most 1,000"),
        (proto(_proto_types(1_000)), None),
        (proto(_proto_types(1_001)), "the definition declares 1,001 types; the local server "
         "takes at most 1,000"),
    ],
    ids=["avro-depth-100", "avro-depth-101", "proto-depth-100", "proto-depth-101",
         "avro-types-1000", "avro-types-1001", "proto-types-1000", "proto-types-1001"],
)
def test_depth_and_type_limits_at_and_over(
    schema_client: Any, schema: dict[str, Any], over: str | None
) -> None:
    if over is None:
        schema_client.validate_schema(parent=P, schema=schema)
        return
    assert refused(schema_client.validate_schema, parent=P, schema=schema) == (
        f"Could not parse schema definition: {over}"
    )


def test_every_method_that_takes_a_definition_enforces_the_limits(
    schema_client: Any, alive: Any
) -> None:
    """CreateSchema, CommitSchema, ValidateSchema and ValidateMessage (a schema of its
    own) refuse the same over-limit definitions with the same words."""
    schema_client.create_schema(parent=P, schema_id="small", schema=avro(_avro_chain(1)))
    over = {
        "size": avro({**_avro_chain(1), "doc": "x" * 300_000}),
        "depth": avro(_avro_chain(101)),
        "types": proto(_proto_types(1_001)),
    }
    words = {
        "size": "bytes; the maximum is 300,000 bytes (300 KB)",
        "depth": "nests types 101 deep",
        "types": "declares 1,001 types",
    }
    for limit, schema in over.items():
        for call, request in (
            (schema_client.create_schema, {"parent": P, "schema_id": "big", "schema": schema}),
            (schema_client.commit_schema, {"name": f"{P}/schemas/small", "schema": schema}),
            (schema_client.validate_schema, {"parent": P, "schema": schema}),
            (schema_client.validate_message, {
                "parent": P, "schema": schema, "message": b"{}", "encoding": "JSON"}),
        ):
            message = refused(call, **request)
            assert message.startswith("Could not parse schema definition: "), message
            assert words[limit] in message, (limit, message)
    assert [r.revision_id for r in schema_client.list_schema_revisions(
        name=f"{P}/schemas/small")] == [schema_client.get_schema(name=f"{P}/schemas/small")
                                        .revision_id]
    with pytest.raises(exceptions.NotFound):
        schema_client.get_schema(name=f"{P}/schemas/big")
    alive()


def test_a_deep_protocol_buffer_message_is_refused(schema_client: Any, alive: Any) -> None:
    """protobuf's own bound (100 levels) holds for messages of a recursive type, in
    binary and in JSON."""
    linked = proto('syntax = "proto3";\nmessage Node {\n  Node next = 1;\n}\n')
    binary = b""
    for _ in range(1_000):
        binary = b"\x0a" + varint(len(binary)) + binary
    document = '{"next": ' * 1_000 + "{}" + "}" * 1_000
    for encoding, data, words in (
        ("BINARY", binary, "Could not parse binary Protocol Buffer message: is not a Node"),
        ("JSON", document.encode(),
         "Could not parse JSON Protocol Buffer message: does not match Node"),
    ):
        message = refused(
            schema_client.validate_message, parent=P, schema=linked, message=data,
            encoding=encoding,
        )
        assert message.startswith(words), message
    alive()

