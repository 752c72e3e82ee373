"""Topics with schema settings through the real clients: the settings checked as the
service checks them, each published message validated against the revisions in the
topic's range and delivered with the googclient_schema* attributes, a refused
message refused with the service's ErrorInfo, and what deleting a schema or a
revision does to the topics that name it. Persisted across a restart."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from google.api_core import exceptions

from reconciler.backends.clients import publisher_client, schema_client, subscriber_client
from reconciler.localserver import LocalServer

P = "projects/proj-alpha"
SCHEMA = f"{P}/schemas/state"
TOPIC = f"{P}/topics/states"
SUB = f"{P}/subscriptions/states-sub"
V1 = {"type": "record", "name": "State", "fields": [{"name": "name", "type": "string"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "pop", "type": "long", "default": 0}]}


@pytest.fixture
def revisions(schema_client: Any) -> tuple[str, str]:
    """A schema with two revisions (the second adds a field with a default)."""
    first = schema_client.create_schema(
        parent=P, schema={"type_": "AVRO", "definition": json.dumps(V1)}, schema_id="state"
    )
    second = schema_client.commit_schema(
        name=SCHEMA, schema={"type_": "AVRO", "definition": json.dumps(V2)}
    )
    return first.revision_id, second.revision_id


def _topic(publisher_client: Any, **settings: Any) -> Any:
    return publisher_client.create_topic(
        request={"name": TOPIC, "schema_settings": {"schema": SCHEMA, **settings}}
    )


def _pull(subscriber_client: Any) -> list[tuple[bytes, dict[str, str]]]:
    answer = subscriber_client.pull(subscription=SUB, max_messages=100)
    return [(m.message.data, dict(m.message.attributes)) for m in answer.received_messages]


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"schema": ""}, exceptions.InvalidArgument, "No schema name provided"),
        ({"encoding": "ENCODING_UNSPECIFIED"}, exceptions.InvalidArgument,
         "Invalid schema encoding provided"),
        ({"schema": f"{P}/schemas/missing", "encoding": "JSON"}, exceptions.NotFound,
         "Schema could not be found"),
        ({"schema": "not-a-name", "encoding": "JSON"}, exceptions.NotFound,
         "Schema could not be found"),
        ({"encoding": "JSON", "first_revision_id": "deadbeef"}, exceptions.NotFound,
         "First revision could not be found"),
        ({"encoding": "JSON", "last_revision_id": "deadbeef"}, exceptions.NotFound,
         "Last revision could not be found"),
    ],
)
def test_create_topic_checks_the_settings(
    publisher_client: Any, revisions: tuple[str, str], settings: dict[str, Any],
    error: type[Exception], message: str,
) -> None:
    with pytest.raises(error) as info:
        _topic(publisher_client, **settings)
    assert info.value.message == message  # type: ignore[attr-defined]
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=TOPIC)


def test_revision_range_must_be_in_order(publisher_client: Any, revisions: tuple[str, str]) -> None:
    first, second = revisions
    with pytest.raises(exceptions.InvalidArgument, match="First revision creation time is after"):
        _topic(publisher_client, encoding="JSON", first_revision_id=second, last_revision_id=first)
    created = _topic(
        publisher_client, encoding="BINARY", first_revision_id=first, last_revision_id=second
    )
    assert created.schema_settings.encoding.name == "BINARY"
    assert (created.schema_settings.first_revision_id, created.schema_settings.last_revision_id) \
        == revisions


def test_publish_validates_against_the_range_newest_first_and_tags_messages(
    publisher_client: Any, subscriber_client: Any, revisions: tuple[str, str]
) -> None:
    first, second = revisions
    _topic(publisher_client, encoding="JSON", last_revision_id=first)
    subscriber_client.create_subscription(name=SUB, topic=TOPIC)
    publisher_client.publish(topic=TOPIC, messages=[{"data": b'{"name": "Alaska"}'}])
    # One message no revision in range accepts refuses the whole request.
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.publish(
            topic=TOPIC,
            messages=[{"data": b'{"name": "ok"}'}, {"data": b'{"name": 7}'}],  # one bad
        )
    assert info.value.message == "Invalid data in message: Message failed schema validation."
    assert info.value.reason == "INVALID_JSON_AVRO_MESSAGE"
    assert info.value.domain == "pubsub.googleapis.com"
    assert info.value.metadata["revisionInfo"].startswith(
        f"Could not validate message with any schema revision for schema: {SCHEMA}, last "
        f"checked revision: revision_id={first} failed with status: "
    )
    # Widen the range through the nested mask python-pubsub's sample sends.
    publisher_client.update_topic(request={
        "topic": {"name": TOPIC, "schema_settings": {"first_revision_id": "",
                                                     "last_revision_id": second}},
        "update_mask": "schemaSettings.firstRevisionId,schemaSettings.lastRevisionId",
    })
    publisher_client.publish(topic=TOPIC, messages=[
        {"data": b'{"name": "Texas", "pop": 30}'},
        {"data": b'{"name": "Utah"}', "attributes": {"googclient_schemaname": "forged", "k": "v"}},
    ])
    got = _pull(subscriber_client)
    assert [data for data, _ in got] == [
        b'{"name": "Alaska"}', b'{"name": "Texas", "pop": 30}', b'{"name": "Utah"}'
    ]
    tags = [(a["googclient_schemaname"], a["googclient_schemaencoding"],
             a["googclient_schemarevisionid"]) for _, a in got]
    assert tags == [(SCHEMA, "JSON", first), (SCHEMA, "JSON", second), (SCHEMA, "JSON", first)]
    assert got[2][1]["k"] == "v"


def test_binary_encoding(
    publisher_client: Any, subscriber_client: Any, revisions: tuple[str, str]
) -> None:
    _topic(publisher_client, encoding="BINARY")
    subscriber_client.create_subscription(name=SUB, topic=TOPIC)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(V2), {"name": "Ohio", "pop": 11})
    publisher_client.publish(topic=TOPIC, messages=[{"data": out.getvalue()}])
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.publish(topic=TOPIC, messages=[{"data": b'{"name": "Ohio"}'}])
    assert info.value.reason == "INVALID_BINARY_AVRO_MESSAGE"
    [(_, attributes)] = _pull(subscriber_client)
    assert attributes["googclient_schemaencoding"] == "BINARY"
    assert attributes["googclient_schemarevisionid"] == revisions[1]


def test_update_topic_schema_settings(publisher_client: Any, revisions: tuple[str, str]) -> None:
    publisher_client.create_topic(name=TOPIC)

    def update(settings: dict[str, Any], paths: list[str]) -> Any:
        return publisher_client.update_topic(request={
            "topic": {"name": TOPIC, "schema_settings": settings},
            "update_mask": {"paths": paths},
        })

    with pytest.raises(exceptions.InvalidArgument, match=r"^400 No schema name provided$"):
        update({"encoding": "JSON"}, ["schema_settings.encoding"])
    updated = update({"schema": SCHEMA, "encoding": "JSON"}, ["schema_settings"])
    assert updated.schema_settings.schema == SCHEMA
    updated = update({"encoding": "BINARY"}, ["schema_settings.encoding"])
    assert updated.schema_settings.encoding.name == "BINARY"
    assert updated.schema_settings.schema == SCHEMA
    with pytest.raises(exceptions.InvalidArgument, match=r"schema_settings.bogus is not a known"):
        update({}, ["schema_settings.bogus"])
    cleared = publisher_client.update_topic(
        request={"topic": {"name": TOPIC}, "update_mask": {"paths": ["schema_settings"]}}
    )
    assert "schema_settings" not in cleared


def test_deleting_revisions_and_schemas_unlinks_topics(
    publisher_client: Any, schema_client: Any, revisions: tuple[str, str]
) -> None:
    first, second = revisions
    _topic(publisher_client, encoding="JSON", first_revision_id=first, last_revision_id=second)
    schema_client.delete_schema_revision(name=f"{SCHEMA}@{first}")
    settings = publisher_client.get_topic(topic=TOPIC).schema_settings
    assert (settings.first_revision_id, settings.last_revision_id) == (
        "_deleted-schema-revision_", second)
    publisher_client.publish(topic=TOPIC, messages=[{"data": b'{"name": "a", "pop": 1}'}])
    schema_client.delete_schema(name=SCHEMA)
    settings = publisher_client.get_topic(topic=TOPIC).schema_settings
    assert settings.schema == "_deleted-schema_"
    assert settings.last_revision_id == "_deleted-schema-revision_"
    with pytest.raises(exceptions.NotFound, match=r"^404 Schema associated with topic deleted.$"):
        publisher_client.publish(topic=TOPIC, messages=[{"data": b'{"name": "a"}'}])


def test_schemas_and_topic_settings_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LocalServer(state) as server:
        schemas, publisher = schema_client(server.address), publisher_client(server.address)
        first = schemas.create_schema(
            parent=P, schema={"type_": "AVRO", "definition": json.dumps(V1)}, schema_id="state"
        )
        second = schemas.commit_schema(
            name=SCHEMA, schema={"type_": "AVRO", "definition": json.dumps(V2)}
        )
        schemas.create_schema(
            parent=P, schema={"type_": "AVRO", "definition": json.dumps(V1)}, schema_id="gone"
        )
        schemas.delete_schema(name=f"{P}/schemas/gone")
        publisher.create_topic(request={"name": TOPIC, "schema_settings": {
            "schema": SCHEMA, "encoding": "JSON", "last_revision_id": second.revision_id}})
        server.crash()  # no compaction: the journal alone must hold it
    with LocalServer(state) as server:
        schemas, publisher = schema_client(server.address), publisher_client(server.address)
        subscriber = subscriber_client(server.address)
        revisions = [r.revision_id for r in schemas.list_schema_revisions(name=SCHEMA)]
        assert revisions == [first.revision_id, second.revision_id]
        assert [s.name for s in schemas.list_schemas(parent=P)] == [SCHEMA]
        subscriber.create_subscription(name=SUB, topic=TOPIC)
        with pytest.raises(exceptions.InvalidArgument):
            publisher.publish(topic=TOPIC, messages=[{"data": b'{"nom": "x"}'}])
        publisher.publish(topic=TOPIC, messages=[{"data": b'{"name": "x"}'}])
        server.compact()
    with LocalServer(state) as server:
        schemas = schema_client(server.address)
        assert schemas.get_schema(name=SCHEMA).revision_id == second.revision_id
        got = subscriber_client(server.address).pull(subscription=SUB, max_messages=10)
        attributes = got.received_messages[0].message.attributes
        assert attributes["googclient_schemarevisionid"] == first.revision_id
