"""The schema service through the real `SchemaServiceClient`: Avro and Protocol Buffer
schemas created, read with views, listed, revised (the compatibility rule and the
20-revision limit), rolled back, their revisions deleted, the schemas deleted, and
schemas and messages validated, each with the service's codes and words."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from google.api_core import exceptions

P = "projects/proj-alpha"
NAME = f"{P}/schemas/state"
STATE = {
    "type": "record",
    "name": "State",
    "namespace": "utilities",
    "fields": [{"name": "name", "type": "string"}, {"name": "post_abbr", "type": "string"}],
}
# A compatible revision: a field with a default added.
STATE_V2 = {**STATE, "fields": [*STATE["fields"], {"name": "pop", "type": "long", "default": 0}]}
PROTO = (
    'syntax = "proto3";\npackage utilities;\n'
    "message StateProto {\n  string name = 1;\n  string post_abbr = 2;\n}\n"
)


def avro(schema_client: Any, schema_id: str = "state", definition: Any = STATE) -> Any:
    return schema_client.create_schema(
        parent=P, schema={"type_": "AVRO", "definition": json.dumps(definition)},
        schema_id=schema_id,
    )


def binary(definition: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(definition), record)
    return out.getvalue()


def test_create_get_and_list_with_views(schema_client: Any) -> None:
    created = avro(schema_client)
    assert created.name == NAME and created.type_.name == "AVRO"
    assert json.loads(created.definition) == STATE
    assert len(created.revision_id) == 8 and int(created.revision_id, 16) >= 0
    # GetSchema answers every field unless asked for BASIC ...
    assert schema_client.get_schema(name=NAME) == created
    basic = schema_client.get_schema(request={"name": NAME, "view": "BASIC"})
    assert basic.definition == "" and basic.revision_id == created.revision_id
    # ... ListSchemas answers BASIC unless asked for FULL.
    avro(schema_client, "other")
    listed = list(schema_client.list_schemas(parent=P))
    assert [s.name for s in listed] == [f"{P}/schemas/other", NAME]
    assert all(s.definition == "" for s in listed)
    full = list(schema_client.list_schemas(request={"parent": P, "view": "FULL"}))
    assert json.loads(full[1].definition) == STATE
    page = schema_client.list_schemas(request={"parent": P, "page_size": 1})
    assert len(list(page)) == 2  # the pager followed the page token


def test_create_refusals(schema_client: Any) -> None:
    avro(schema_client)
    with pytest.raises(exceptions.AlreadyExists, match=r"^409 Schema already exists$"):
        avro(schema_client)
    with pytest.raises(exceptions.InvalidArgument, match=r"^400 Invalid schema type$"):
        schema_client.create_schema(
            parent=P, schema={"definition": json.dumps(STATE)}, schema_id="untyped"
        )
    bad = {"type": "record", "name": "X", "fields": [{"name": "a", "type": "nosuch"}]}
    with pytest.raises(exceptions.InvalidArgument) as info:
        avro(schema_client, "broken", bad)
    assert info.value.message.startswith("Could not parse schema definition: ")
    assert "nosuch" in info.value.message
    for schema_id, reason in [
        ("9lives", "must start with a letter"),
        ("goog-x", "must not start with 'goog'"),
        ("ab", "3 to 255 characters"),
        ("a@bcd", "may contain only letters"),
    ]:
        with pytest.raises(exceptions.InvalidArgument, match=reason) as info:
            avro(schema_client, schema_id)
        assert info.value.message.startswith(f"Invalid [schemas] name: (name={P}/schemas/")


def test_definition_size_limit_at_and_over(schema_client: Any) -> None:
    """300 KB, read as 300,000 bytes: exactly at the limit passes."""
    padding = 300_000 - len(json.dumps({**STATE, "doc": ""}))
    at_limit = {**STATE, "doc": "x" * padding}
    assert len(json.dumps(at_limit).encode()) == 300_000
    avro(schema_client, "at-limit", at_limit)
    over = {**STATE, "doc": "x" * (padding + 1)}
    with pytest.raises(exceptions.InvalidArgument, match="300,001 bytes; the maximum is 300,000"):
        avro(schema_client, "over-limit", over)


def test_protocol_buffer_schemas(schema_client: Any) -> None:
    created = schema_client.create_schema(
        parent=P, schema={"type_": "PROTOCOL_BUFFER", "definition": PROTO}, schema_id="proto"
    )
    assert created.type_.name == "PROTOCOL_BUFFER" and created.definition == PROTO
    two = PROTO + "message Other { string x = 1; }\n"
    with pytest.raises(exceptions.InvalidArgument, match=r"exactly one top-level message type"):
        schema_client.validate_schema(
            parent=P, schema={"type_": "PROTOCOL_BUFFER", "definition": two}
        )
    imports = 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\nmessage A {}\n'
    with pytest.raises(exceptions.InvalidArgument, match="import statements are not supported"):
        schema_client.validate_schema(
            parent=P, schema={"type_": "PROTOCOL_BUFFER", "definition": imports}
        )
    with pytest.raises(exceptions.InvalidArgument, match=r"parse schema definition: .*3:"):
        schema_client.validate_schema(
            parent=P, schema={"type_": "PROTOCOL_BUFFER", "definition": "message A {\n\n oops"}
        )


def test_commit_list_revisions_and_the_compatibility_rule(schema_client: Any) -> None:
    first = avro(schema_client)
    second = schema_client.commit_schema(
        name=NAME, schema={"type_": "AVRO", "definition": json.dumps(STATE_V2)}
    )
    assert second.revision_id != first.revision_id
    assert schema_client.get_schema(name=NAME) == second  # the newest is the schema
    assert schema_client.get_schema(name=f"{NAME}@{first.revision_id}") == first
    revisions = list(schema_client.list_schema_revisions(name=NAME))
    assert [r.revision_id for r in revisions] == [first.revision_id, second.revision_id]
    assert all(r.definition == "" for r in revisions)  # BASIC unless asked
    full = list(schema_client.list_schema_revisions(request={"name": NAME, "view": "FULL"}))
    assert json.loads(full[1].definition) == STATE_V2
    paged = list(schema_client.list_schema_revisions(request={"name": NAME, "page_size": 1}))
    assert [r.revision_id for r in paged] == [first.revision_id, second.revision_id]
    # A field whose type cannot be read either way, checked against every revision.
    changed = {**STATE, "fields": [{"name": "name", "type": "long"}, STATE["fields"][1]]}
    with pytest.raises(exceptions.InvalidArgument) as info:
        schema_client.commit_schema(
            name=NAME, schema={"type_": "AVRO", "definition": json.dumps(changed)}
        )
    assert info.value.message.startswith(
        f'Compatibility checking failed to commit a schema revision for (schema="{NAME}"). '
        f'(reason="Revision is incompatible with previous revision: {second.revision_id}. '
    )
    assert "string cannot be read as long at name" in info.value.message
    # A field without a default added: old data cannot be read by the new revision.
    required = {**STATE, "fields": [*STATE["fields"], {"name": "pop", "type": "long"}]}
    with pytest.raises(exceptions.InvalidArgument, match="field pop has no default"):
        schema_client.commit_schema(
            name=NAME, schema={"type_": "AVRO", "definition": json.dumps(required)}
        )
    with pytest.raises(exceptions.InvalidArgument, match=r"type cannot change \(AVRO to PROTOCOL"):
        schema_client.commit_schema(
            name=NAME, schema={"type_": "PROTOCOL_BUFFER", "definition": PROTO}
        )
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema not found$"):
        schema_client.commit_schema(
            name=f"{P}/schemas/missing", schema={"type_": "AVRO", "definition": json.dumps(STATE)}
        )
    assert len(list(schema_client.list_schema_revisions(name=NAME))) == 2


def test_protocol_buffer_revisions_add_or_remove_optional_fields_only(schema_client: Any) -> None:
    schema_client.create_schema(
        parent=P, schema={"type_": "PROTOCOL_BUFFER", "definition": PROTO}, schema_id="proto"
    )
    name = f"{P}/schemas/proto"

    def commit(definition: str) -> Any:
        return schema_client.commit_schema(
            name=name, schema={"type_": "PROTOCOL_BUFFER", "definition": definition}
        )

    commit(PROTO.replace("}\n", "  optional int64 population = 3;\n}\n"))
    with pytest.raises(exceptions.InvalidArgument, match="adds the repeated field"):
        commit(PROTO.replace("}\n", "  repeated string cities = 4;\n}\n"))
    with pytest.raises(
        exceptions.InvalidArgument, match=r"changes the field utilities\.StateProto\.name = 1"
    ):
        commit(PROTO.replace("string name = 1", "bytes name = 1"))


def test_revision_limit_at_and_over(schema_client: Any) -> None:
    avro(schema_client)
    for _ in range(19):
        schema_client.commit_schema(
            name=NAME, schema={"type_": "AVRO", "definition": json.dumps(STATE)}
        )
    assert len(list(schema_client.list_schema_revisions(name=NAME))) == 20
    with pytest.raises(
        exceptions.ResourceExhausted, match=r"^429 Already at maximum number of schema revisions$"
    ):
        schema_client.commit_schema(
            name=NAME, schema={"type_": "AVRO", "definition": json.dumps(STATE)}
        )


def test_rollback_and_delete_revision(schema_client: Any) -> None:
    first = avro(schema_client)
    second = schema_client.commit_schema(
        name=NAME, schema={"type_": "AVRO", "definition": json.dumps(STATE_V2)}
    )
    third = schema_client.rollback_schema(name=NAME, revision_id=first.revision_id)
    assert third.revision_id not in (first.revision_id, second.revision_id)
    assert third.definition == first.definition
    assert schema_client.get_schema(name=NAME).revision_id == third.revision_id
    with pytest.raises(exceptions.NotFound, match=r"^404 Revision not found$"):
        schema_client.rollback_schema(name=NAME, revision_id="deadbeef")
    with pytest.raises(exceptions.InvalidArgument, match=r"^400 Missing revision ID$"):
        schema_client.rollback_schema(name=NAME, revision_id="")

    deleted = schema_client.delete_schema_revision(name=f"{NAME}@{second.revision_id}")
    assert deleted.revision_id == second.revision_id
    left = [r.revision_id for r in schema_client.list_schema_revisions(name=NAME)]
    assert left == [first.revision_id, third.revision_id]
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema revision not found$"):
        schema_client.get_schema(name=f"{NAME}@{second.revision_id}")
    with pytest.raises(exceptions.NotFound, match="name the revision as"):
        schema_client.delete_schema_revision(name=NAME)
    schema_client.delete_schema_revision(name=f"{NAME}@{first.revision_id}")
    with pytest.raises(exceptions.InvalidArgument, match="Please use DeleteSchema"):
        schema_client.delete_schema_revision(name=f"{NAME}@{third.revision_id}")


def test_delete_schema(schema_client: Any) -> None:
    avro(schema_client)
    schema_client.delete_schema(name=NAME)
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema not found$"):
        schema_client.get_schema(name=NAME)
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema not found$"):
        schema_client.delete_schema(name=NAME)
    assert list(schema_client.list_schemas(parent=P)) == []


def test_validate_schema_and_message(schema_client: Any) -> None:
    avro(schema_client)
    schema_client.validate_schema(parent=P, schema={"type_": "AVRO", "definition": '"string"'})
    good = json.dumps({"name": "Alaska", "post_abbr": "AK"}).encode()

    def validate(**request: Any) -> Any:
        return schema_client.validate_message(request={"parent": P, **request})

    validate(name=NAME, message=good, encoding="JSON")
    validate(name=NAME, message=binary(STATE, {"name": "A", "post_abbr": "AK"}), encoding="BINARY")
    validate(schema={"type_": "AVRO", "definition": json.dumps(STATE)}, message=good,
             encoding="JSON")
    with pytest.raises(exceptions.InvalidArgument, match=r"^400 No encoding provided.$"):
        validate(name=NAME, message=good)
    with pytest.raises(exceptions.InvalidArgument, match="Could not parse JSON Avro message"):
        validate(name=NAME, message=b'{"name": 1, "post_abbr": "AK"}', encoding="JSON")
    with pytest.raises(exceptions.InvalidArgument, match="Too much data to parse for schema"):
        validate(name=NAME, message=binary(STATE, {"name": "A", "post_abbr": "B"}) + b"\0",
                 encoding="BINARY")
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema not found$"):
        validate(name=f"{P}/schemas/missing", message=good, encoding="JSON")
    proto = {"type_": "PROTOCOL_BUFFER", "definition": PROTO}
    validate(schema=proto, message=b'{"name": "Alaska", "postAbbr": "AK"}', encoding="JSON")
    with pytest.raises(exceptions.InvalidArgument, match="Could not parse JSON Protocol Buffer"):
        validate(schema=proto, message=b'{"nom": "Alaska"}', encoding="JSON")
    with pytest.raises(exceptions.InvalidArgument, match="Could not parse binary Protocol Buffer"):
        validate(schema=proto, message=b"\xff\xff\xff", encoding="BINARY")


def test_hostile_avro_schemas_and_messages_leave_the_server_serving(schema_client: Any) -> None:
    """A recursive schema's deep message is refused (the compiled reader would crash the
    process on it); an array of items that take no bytes is refused at create."""
    node = {
        "type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]
    }
    avro(schema_client, "linked", node)
    deep = b"\x02" * 1_000_000 + b"\x00"
    with pytest.raises(exceptions.InvalidArgument, match="nested too deeply"):
        schema_client.validate_message(request={
            "parent": P, "name": f"{P}/schemas/linked", "message": deep, "encoding": "BINARY",
        })
    nulls = {"type": "record", "name": "N", "fields": [
        {"name": "a", "type": {"type": "array", "items": "null"}}]}
    with pytest.raises(exceptions.InvalidArgument, match="array of null takes no bytes"):
        avro(schema_client, "nulls", nulls)
    assert schema_client.get_schema(name=f"{P}/schemas/linked").name.endswith("linked")


KINDS = {
    "type": "record", "name": "Kinds", "fields": [
        {"name": "maybe", "type": ["null", "string"]},
        {"name": "small", "type": "int"},
        {"name": "raw", "type": "bytes"},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}},
        {"name": "tags", "type": {"type": "map", "values": "long"}},
    ],
}
GOOD = {"maybe": {"string": "x"}, "small": 1, "raw": "\u00ff", "color": "RED", "tags": {"a": 1}}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({}, None),
        ({"maybe": None}, None),
        ({"maybe": "x"}, "a union's value is null or an object with one member"),
        ({"small": 2**31}, "is not a int"),
        ({"small": True}, "is not a int"),
        ({"raw": "\u0100"}, "is not a bytes"),
        ({"color": "GREEN"}, "is not a symbol of Color"),
        ({"tags": {"a": "1"}}, "tags['a']: \"1\" is not a long"),
        ({"extra": 1}, None),  # ignored, as Google's emulator ignores it
    ],
)
def test_the_json_encoding(schema_client: Any, change: dict[str, Any], problem: str | None) -> None:
    request = {
        "parent": P, "schema": {"type_": "AVRO", "definition": json.dumps(KINDS)},
        "message": json.dumps({**GOOD, **change}).encode(), "encoding": "JSON",
    }
    if problem is None:
        schema_client.validate_message(request=request)
        return
    with pytest.raises(exceptions.InvalidArgument) as info:
        schema_client.validate_message(request=request)
    assert info.value.message.startswith("Could not parse JSON Avro message: ")
    assert problem in info.value.message


def test_a_json_field_is_required_even_with_a_default(schema_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument, match="field pop is missing"):
        schema_client.validate_message(request={
            "parent": P, "schema": {"type_": "AVRO", "definition": json.dumps(STATE_V2)},
            "message": b'{"name": "A", "post_abbr": "AK"}', "encoding": "JSON",
        })


SCHEMA_METHODS = {
    "CreateSchema", "GetSchema", "ListSchemas", "ListSchemaRevisions", "CommitSchema",
    "RollbackSchema", "DeleteSchemaRevision", "DeleteSchema", "ValidateSchema",
    "ValidateMessage",
}


def test_the_schema_methods_are_listed_counted_and_faultable(
    local_server: Any, schema_client: Any
) -> None:
    assert set(local_server.method_names()) >= SCHEMA_METHODS
    local_server.faults.add("CreateSchema", error="PERMISSION_DENIED", error_next=1,
                            message="injected")
    with pytest.raises(exceptions.PermissionDenied, match="injected"):
        avro(schema_client)
    avro(schema_client)
    assert local_server.counters.for_project("CreateSchema", "proj-alpha") == 2
