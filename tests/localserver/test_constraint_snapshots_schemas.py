"""The local server enforces custom constraints on `pubsub.googleapis.com/Snapshot`
(CreateSnapshot, UpdateSnapshot) and `pubsub.googleapis.com/Schema` (CreateSchema)
as it does on topics, through the real clients and the REST face: the service's
code, message and ErrorInfo, dry run only logged, UPDATE of a snapshot that already
violates, and CommitSchema left alone (the service's documentation does not say it
is an UPDATE)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.orgpolicy.model import Policy
from tests.localserver.rest_support import rest

ORG = "organizations/5151"
PROJECT = "snap-schema-proj"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-sub"
SNAPSHOTS = f"projects/{PROJECT}/snapshots"
SNAPSHOT = "pubsub.googleapis.com/Snapshot"
SCHEMA = "pubsub.googleapis.com/Schema"
AVRO = json.dumps({"type": "record", "name": "Order",
                   "fields": [{"name": "id", "type": "string"}]})
OWNED = "has(resource.labels.team)"
OWNED_TEXT = "Snapshots say which team owns them."
AVRO_ONLY = "resource.type == 'AVRO'"
AVRO_TEXT = "Schemas are Avro."


def _install(server: Any, client: Any, name: str, resource_type: str, condition: str,
             description: str, *, methods: tuple[str, ...] = ("CREATE", "UPDATE"),
             dry_run: bool = False) -> None:
    """The project under ORG, the constraint created through the Org Policy API and
    enforced (or dry-run) on the project."""
    server.set_ancestry(f"projects/{PROJECT}", ORG)
    client.create_custom_constraint(parent=ORG, custom_constraint={
        "name": f"{ORG}/customConstraints/{name}", "resource_types": [resource_type],
        "method_types": list(methods), "condition": condition, "action_type": "ALLOW",
        "description": description,
    })
    key = "dryRunSpec" if dry_run else "spec"
    server.put_policy(Policy.from_dict({
        "name": f"projects/{PROJECT}/policies/{name}", key: {"rules": [{"enforce": True}]}
    }))


def _refusal(constraint: str, description: str) -> str:
    return (f'Operation denied by custom org policy: ["customConstraints/{constraint}": '
            f'"{description}"]')


def _assert_refused(info: Any, constraint: str, description: str) -> None:
    assert info.value.message == _refusal(constraint, description)
    assert info.value.reason == "CUSTOM_ORG_POLICY_VIOLATION"
    assert info.value.domain == "googleapis.com"
    assert info.value.metadata == {
        "customConstraints": f"customConstraints/{constraint}",
        "service": "pubsub.googleapis.com",
    }


@pytest.fixture
def subscribed(local_server: Any, publisher_client: Any, subscriber_client: Any) -> Any:
    publisher_client.create_topic(name=TOPIC)
    subscriber_client.create_subscription(name=SUB, topic=TOPIC)
    return local_server


def test_a_violating_snapshot_create_is_refused(
    subscribed: Any, orgpolicy_client: Any, subscriber_client: Any
) -> None:
    _install(subscribed, orgpolicy_client, "custom.ownedSnapshots", SNAPSHOT, OWNED,
             OWNED_TEXT)
    with pytest.raises(exceptions.FailedPrecondition) as info:
        subscriber_client.create_snapshot(name=f"{SNAPSHOTS}/nobody", subscription=SUB)
    _assert_refused(info, "custom.ownedSnapshots", OWNED_TEXT)
    with pytest.raises(exceptions.NotFound):
        subscriber_client.get_snapshot(snapshot=f"{SNAPSHOTS}/nobody")
    made = subscriber_client.create_snapshot(
        request={"name": f"{SNAPSHOTS}/owned", "subscription": SUB, "labels": {"team": "a"}}
    )
    assert made.topic == TOPIC


def test_the_condition_sees_the_snapshot_the_call_makes(
    subscribed: Any, orgpolicy_client: Any, subscriber_client: Any
) -> None:
    # The request names a subscription; the snapshot made has the topic and an expiry.
    _install(subscribed, orgpolicy_client, "custom.ordersOnly", SNAPSHOT,
             "resource.topic.endsWith('/topics/orders') && has(resource.expireTime)",
             "Only snapshots of orders.")
    subscriber_client.create_snapshot(name=f"{SNAPSHOTS}/of-orders", subscription=SUB)
    assert subscriber_client.get_snapshot(snapshot=f"{SNAPSHOTS}/of-orders").topic == TOPIC


def test_a_violating_snapshot_update_and_an_already_violating_snapshot(
    subscribed: Any, orgpolicy_client: Any, subscriber_client: Any
) -> None:
    legacy = f"{SNAPSHOTS}/legacy"
    subscriber_client.create_snapshot(name=legacy, subscription=SUB)  # before the rule
    subscriber_client.create_snapshot(
        request={"name": f"{SNAPSHOTS}/owned", "subscription": SUB, "labels": {"team": "a"}}
    )
    _install(subscribed, orgpolicy_client, "custom.ownedSnapshots", SNAPSHOT, OWNED,
             OWNED_TEXT)
    # Dropping the label of a conforming snapshot breaks the rule.
    with pytest.raises(exceptions.FailedPrecondition) as info:
        subscriber_client.update_snapshot(request={
            "snapshot": {"name": f"{SNAPSHOTS}/owned", "labels": {"tier": "b"}},
            "update_mask": {"paths": ["labels"]},
        })
    _assert_refused(info, "custom.ownedSnapshots", OWNED_TEXT)
    # A change that leaves the violation in place is refused; the fix goes through.
    with pytest.raises(exceptions.FailedPrecondition, match=r"custom\.ownedSnapshots"):
        subscriber_client.update_snapshot(request={
            "snapshot": {"name": legacy, "labels": {"tier": "b"}},
            "update_mask": {"paths": ["labels"]},
        })
    assert subscriber_client.get_snapshot(snapshot=legacy).labels == {}
    fixed = subscriber_client.update_snapshot(request={
        "snapshot": {"name": legacy, "labels": {"team": "b"}},
        "update_mask": {"paths": ["labels"]},
    })
    assert fixed.labels == {"team": "b"}


def test_a_create_only_snapshot_constraint_and_dry_run(
    subscribed: Any, orgpolicy_client: Any, subscriber_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _install(subscribed, orgpolicy_client, "custom.ownedSnapshots", SNAPSHOT, OWNED,
             OWNED_TEXT, methods=("CREATE",))
    subscriber_client.create_snapshot(
        request={"name": f"{SNAPSHOTS}/owned", "subscription": SUB, "labels": {"team": "a"}}
    )
    subscriber_client.update_snapshot(request={  # UPDATE is not restricted
        "snapshot": {"name": f"{SNAPSHOTS}/owned", "labels": {}},
        "update_mask": {"paths": ["labels"]},
    })
    _install(subscribed, orgpolicy_client, "custom.shortName", SNAPSHOT,
             "size(resource.name) < 40", "Short names.", dry_run=True)
    with caplog.at_level("INFO", logger="reconciler.localserver.pubsub.constraints"):
        subscriber_client.create_snapshot(
            request={"name": f"{SNAPSHOTS}/a-rather-long-name", "subscription": SUB,
                     "labels": {"team": "a"}}
        )
    assert "dry-run custom constraint custom.shortName would refuse CREATE" in caplog.text


def test_a_violating_schema_create_is_refused_and_commit_is_not_judged(
    local_server: Any, orgpolicy_client: Any, schema_client: Any
) -> None:
    parent = f"projects/{PROJECT}"
    avro = {"type_": "AVRO", "definition": AVRO}
    schema_client.create_schema(parent=parent, schema=avro, schema_id="before")
    _install(local_server, orgpolicy_client, "custom.avroOnly", SCHEMA, AVRO_ONLY, AVRO_TEXT)
    proto = {"type_": "PROTOCOL_BUFFER",
             "definition": 'syntax = "proto3"; message Order { string id = 1; }'}
    with pytest.raises(exceptions.FailedPrecondition) as info:
        schema_client.create_schema(parent=parent, schema=proto, schema_id="orders-pb")
    _assert_refused(info, "custom.avroOnly", AVRO_TEXT)
    with pytest.raises(exceptions.NotFound):
        schema_client.get_schema(name=f"{parent}/schemas/orders-pb")
    made = schema_client.create_schema(parent=parent, schema=avro, schema_id="orders")
    assert made.name == f"{parent}/schemas/orders"
    # A new revision is not judged: the documentation does not make it an UPDATE.
    revised = schema_client.commit_schema(
        name=f"{parent}/schemas/orders",
        schema={**avro, "definition": json.dumps({
            "type": "record", "name": "Order", "fields": [
                {"name": "id", "type": "string"},
                {"name": "note", "type": "string", "default": ""},
            ]})},
    )
    assert revised.revision_id != made.revision_id


def test_the_schema_condition_sees_no_labels(
    local_server: Any, orgpolicy_client: Any, schema_client: Any
) -> None:
    # A schema has no labels field: reading it is an error, refused saying why.
    _install(local_server, orgpolicy_client, "custom.schemaTeam", SCHEMA,
             "'team' in resource.labels", "Schemas say their team.")
    with pytest.raises(exceptions.FailedPrecondition) as info:
        schema_client.create_schema(
            parent=f"projects/{PROJECT}", schema={"type_": "AVRO", "definition": AVRO},
            schema_id="orders",
        )
    assert "could not evaluate the condition of custom constraint" in info.value.message
    assert "resource.labels" in info.value.message


def _rest_error(answer: Any) -> dict[str, Any]:
    assert answer.status == 400, answer.body
    error: dict[str, Any] = answer.body["error"]
    return error


def test_the_rest_face_refuses_the_same_way(
    subscribed: Any, orgpolicy_client: Any
) -> None:
    _install(subscribed, orgpolicy_client, "custom.ownedSnapshots", SNAPSHOT, OWNED,
             OWNED_TEXT)
    _install(subscribed, orgpolicy_client, "custom.avroOnly", SCHEMA, AVRO_ONLY, AVRO_TEXT)
    address = subscribed.address
    error = _rest_error(rest(address, "PUT", f"/v1/{SNAPSHOTS}/nobody", {"subscription": SUB}))
    assert error["status"] == "FAILED_PRECONDITION"
    assert error["message"] == _refusal("custom.ownedSnapshots", OWNED_TEXT)
    (info,) = error["details"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == "CUSTOM_ORG_POLICY_VIOLATION"
    assert info["metadata"]["customConstraints"] == "customConstraints/custom.ownedSnapshots"
    made = rest(address, "PUT", f"/v1/{SNAPSHOTS}/owned",
                {"subscription": SUB, "labels": {"team": "a"}})
    assert made.status == 200, made.body
    error = _rest_error(rest(
        address, "PATCH", f"/v1/{SNAPSHOTS}/owned",
        {"snapshot": {"labels": {}}, "updateMask": "labels"},
    ))
    assert error["message"] == _refusal("custom.ownedSnapshots", OWNED_TEXT)
    error = _rest_error(rest(
        address, "POST", f"/v1/projects/{PROJECT}/schemas?schemaId=orders-pb",
        {"type": "PROTOCOL_BUFFER",
         "definition": 'syntax = "proto3"; message Order { string id = 1; }'},
    ))
    assert error["message"] == _refusal("custom.avroOnly", AVRO_TEXT)
    assert error["details"][0]["reason"] == "CUSTOM_ORG_POLICY_VIOLATION"
