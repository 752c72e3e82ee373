"""IAM policies on Pub/Sub resources through Google's own clients (the Publisher and
Subscriber clients' IAM mixin, `google.iam.v1.IAMPolicy`): the service's etag rules,
update masks, what a policy may hold, TestIamPermissions, and a policy's life: kept
across restarts and crashes, gone with its resource."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.localserver import LocalServer

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/orders"
SUB = f"{P}/subscriptions/orders-sub"
VIEWER = {"role": "roles/pubsub.viewer", "members": ["group:ops@example.com"]}
APP = "serviceAccount:app@p.iam.gserviceaccount.com"
PUBLISHER = {"role": "roles/pubsub.publisher", "members": [APP]}
CALL = {"retry": None, "timeout": 60}


@pytest.fixture
def world(publisher_client: Any, subscriber_client: Any) -> tuple[Any, Any]:
    publisher_client.create_topic(name=TOPIC)
    subscriber_client.create_subscription(name=SUB, topic=TOPIC)
    return publisher_client, subscriber_client


def _set(client: Any, resource: str, *bindings: dict[str, Any], **policy: Any) -> Any:
    return client.set_iam_policy(
        request={"resource": resource, "policy": {"bindings": list(bindings), **policy}}, **CALL
    )


def _roles(policy: Any) -> list[tuple[str, list[str]]]:
    return [(b.role, list(b.members)) for b in policy.bindings]


def test_a_resource_without_a_policy_has_the_empty_one(world: tuple[Any, Any]) -> None:
    pub, sub = world
    for client, resource in ((pub, TOPIC), (sub, SUB)):
        policy = client.get_iam_policy(request={"resource": resource}, **CALL)
        assert base64.b64encode(policy.etag) == b"ACAB"
        assert list(policy.bindings) == [] and policy.version == 0


def test_set_then_get_round_trips_with_a_new_etag_each_time(world: tuple[Any, Any]) -> None:
    pub, _ = world
    first = _set(pub, TOPIC, VIEWER, PUBLISHER)
    assert _roles(first) == [
        ("roles/pubsub.viewer", ["group:ops@example.com"]),
        ("roles/pubsub.publisher", [APP]),
    ]
    assert first.version == 1 and first.etag != base64.b64decode("ACAB")
    got = pub.get_iam_policy(request={"resource": TOPIC}, **CALL)
    assert got == first
    second = _set(pub, TOPIC, VIEWER)
    assert second.etag not in (first.etag, base64.b64decode("ACAB"))
    assert _roles(pub.get_iam_policy(request={"resource": TOPIC}, **CALL)) == [
        ("roles/pubsub.viewer", ["group:ops@example.com"])
    ]


def test_a_stale_etag_is_aborted_and_changes_nothing(world: tuple[Any, Any]) -> None:
    pub, _ = world
    read = pub.get_iam_policy(request={"resource": TOPIC}, **CALL)
    _set(pub, TOPIC, VIEWER, etag=read.etag)  # the read's etag is current: accepted
    with pytest.raises(exceptions.Aborted) as aborted:
        _set(pub, TOPIC, PUBLISHER, etag=read.etag)  # someone changed it since the read
    assert "concurrent policy changes" in aborted.value.message
    assert _roles(pub.get_iam_policy(request={"resource": TOPIC}, **CALL)) == [
        ("roles/pubsub.viewer", ["group:ops@example.com"])
    ]
    _set(pub, TOPIC, PUBLISHER)  # without an etag: a blind overwrite
    assert _roles(pub.get_iam_policy(request={"resource": TOPIC}, **CALL))[0][0] == (
        "roles/pubsub.publisher"
    )


def test_the_update_mask_says_what_changes(world: tuple[Any, Any]) -> None:
    pub, _ = world
    stale = _set(pub, TOPIC, VIEWER).etag
    _set(pub, TOPIC, PUBLISHER)
    audit = [{"service": "pubsub.googleapis.com", "audit_log_configs": [{"log_type": "DATA_READ"}]}]
    # "bindings" alone: the etag is not checked, the audit configs stay as they are.
    masked = pub.set_iam_policy(
        request={
            "resource": TOPIC,
            "policy": {"bindings": [VIEWER], "etag": stale, "audit_configs": audit},
            "update_mask": {"paths": ["bindings"]},
        },
        **CALL,
    )
    assert _roles(masked) == [("roles/pubsub.viewer", ["group:ops@example.com"])]
    assert list(masked.audit_configs) == []
    with_audit = pub.set_iam_policy(
        request={
            "resource": TOPIC,
            "policy": {"audit_configs": audit},
            "update_mask": {"paths": ["auditConfigs"]},
        },
        **CALL,
    )
    assert with_audit.audit_configs[0].service == "pubsub.googleapis.com"
    assert _roles(with_audit) == _roles(masked)  # bindings were not in the mask
    with pytest.raises(exceptions.InvalidArgument, match="labels"):
        pub.set_iam_policy(
            request={"resource": TOPIC, "policy": {}, "update_mask": {"paths": ["labels"]}},
            **CALL,
        )


@pytest.mark.parametrize(
    ("binding", "says"),
    [
        ({"role": "roles/reader", "members": ["allUsers"]}, "not supported for this resource"),
        ({"role": "roles/storage.admin", "members": ["allUsers"]}, "not supported"),
        ({"role": "roles/pubsub.viewer", "members": []}, "has no principal"),
        ({"role": "roles/pubsub.viewer", "members": ["alice@example.com"]}, "Invalid principal"),
        ({"role": "roles/pubsub.viewer", "members": ["user:alice"]}, "needs an email address"),
        ({"role": "roles/pubsub.viewer", "members": ["domain:"]}, "Invalid principal"),
        (
            {
                "role": "roles/pubsub.viewer",
                "members": ["user:a@example.com"],
                "condition": {"expression": "request.time < timestamp('2030-01-01T00:00:00Z')"},
            },
            "do not accept conditional role bindings",
        ),
    ],
)
def test_a_policy_the_service_would_refuse_is_invalid_argument(
    world: tuple[Any, Any], binding: dict[str, Any], says: str
) -> None:
    pub, _ = world
    with pytest.raises(exceptions.InvalidArgument) as refused:
        _set(pub, TOPIC, binding, version=3)
    assert says in refused.value.message
    assert list(pub.get_iam_policy(request={"resource": TOPIC}, **CALL).bindings) == []


def test_roles_are_granted_where_the_service_grants_them(world: tuple[Any, Any]) -> None:
    pub, sub = world
    _set(pub, TOPIC, PUBLISHER)  # Publisher: topics only
    with pytest.raises(exceptions.InvalidArgument, match=r"roles/pubsub\.publisher is not supp"):
        _set(sub, SUB, PUBLISHER)
    subscriber = {"role": "roles/pubsub.subscriber", "members": ["allAuthenticatedUsers"]}
    custom = {"role": "projects/proj-alpha/roles/pubsubReader", "members": ["deleted:user:x@y.z"]}
    pool = "principal://iam.googleapis.com/locations/global/workforcePools/p/subject/s"
    owner = {"role": "roles/owner", "members": [pool]}
    assert len(_set(sub, SUB, subscriber, custom, owner).bindings) == 3


def test_principal_and_group_counts_at_and_over_the_limits(world: tuple[Any, Any]) -> None:
    pub, _ = world
    users = [f"user:u{i}@example.com" for i in range(1500)]
    at = _set(pub, TOPIC, {"role": "roles/pubsub.viewer", "members": users})
    assert sum(len(b.members) for b in at.bindings) == 1500
    # Each occurrence counts: the same principal in two bindings is two.
    with pytest.raises(exceptions.InvalidArgument, match="1501 principals; the maximum is 1500"):
        _set(
            pub,
            TOPIC,
            {"role": "roles/pubsub.viewer", "members": users},
            {"role": "roles/pubsub.editor", "members": users[:1]},
        )
    groups = [f"group:g{i}@example.com" for i in range(251)]
    assert len(_set(pub, TOPIC, {"role": "roles/pubsub.viewer", "members": groups[:250]}).bindings)
    with pytest.raises(exceptions.InvalidArgument, match="251 groups; the maximum is 250"):
        _set(pub, TOPIC, {"role": "roles/pubsub.viewer", "members": groups})


@pytest.mark.parametrize("version", [2, 4, -1])
def test_only_the_policy_versions_iam_knows(world: tuple[Any, Any], version: int) -> None:
    pub, _ = world
    with pytest.raises(exceptions.InvalidArgument, match="versions are 0, 1 and 3"):
        _set(pub, TOPIC, VIEWER, version=version)
    with pytest.raises(exceptions.InvalidArgument, match="requested_policy_version"):
        pub.get_iam_policy(
            request={"resource": TOPIC, "options": {"requested_policy_version": version}}, **CALL
        )
    for ok in (0, 1, 3):
        pub.get_iam_policy(
            request={"resource": TOPIC, "options": {"requested_policy_version": ok}}, **CALL
        )


def test_resources_that_are_not_there_or_not_pubsub(world: tuple[Any, Any]) -> None:
    pub, sub = world
    for call in (
        lambda: pub.get_iam_policy(request={"resource": f"{P}/topics/missing"}, **CALL),
        lambda: _set(pub, f"{P}/topics/missing", VIEWER),
        lambda: sub.get_iam_policy(request={"resource": f"{P}/snapshots/snap-1"}, **CALL),
    ):
        with pytest.raises(exceptions.NotFound) as missing:
            call()
        assert missing.value.message.startswith("Resource not found (resource=")
    with pytest.raises(exceptions.InvalidArgument, match="resources of type project"):
        pub.get_iam_policy(request={"resource": P}, **CALL)
    with pytest.raises(exceptions.InvalidArgument, match="Invalid \\[snapshots\\] name"):
        sub.get_iam_policy(request={"resource": f"{P}/snapshots/x"}, **CALL)
    with pytest.raises(exceptions.InvalidArgument, match="Invalid resource"):
        pub.get_iam_policy(request={"resource": f"{P}/buckets/b-1"}, **CALL)


def test_test_iam_permissions_answers_what_the_type_has(world: tuple[Any, Any]) -> None:
    pub, sub = world
    asked = ["pubsub.topics.publish", "pubsub.topics.attachSubscription", "pubsub.topics.publish"]
    answer = pub.test_iam_permissions(request={"resource": TOPIC, "permissions": asked}, **CALL)
    assert list(answer.permissions) == ["pubsub.topics.publish", "pubsub.topics.attachSubscription"]
    consume = ["pubsub.subscriptions.consume"]
    gone = sub.test_iam_permissions(
        request={"resource": f"{P}/subscriptions/gone-1", "permissions": consume}, **CALL
    )
    assert list(gone.permissions) == []  # no NOT_FOUND: no permissions on what is not there
    for bad, says in (
        ("pubsub.*", "wildcards"),
        ("pubsub.subscriptions.consume", "not valid for this resource"),
        ("pubsub.topics.create", "not valid for this resource"),  # checked on the project
        ("storage.buckets.get", "not valid for this resource"),
    ):
        with pytest.raises(exceptions.InvalidArgument, match=says):
            pub.test_iam_permissions(request={"resource": TOPIC, "permissions": [bad]}, **CALL)


@pytest.mark.parametrize("kind", ["topic", "subscription"])
def test_a_policy_goes_with_its_resource(world: tuple[Any, Any], kind: str) -> None:
    pub, sub = world
    client, name = (pub, TOPIC) if kind == "topic" else (sub, SUB)
    role = PUBLISHER if kind == "topic" else VIEWER
    _set(client, name, role)
    if kind == "topic":
        pub.delete_topic(topic=TOPIC)
        with pytest.raises(exceptions.NotFound):
            pub.get_iam_policy(request={"resource": TOPIC}, **CALL)
        pub.create_topic(name=TOPIC)
    else:
        sub.delete_subscription(subscription=SUB)
        sub.create_subscription(name=SUB, topic=TOPIC)
    again = client.get_iam_policy(request={"resource": name}, **CALL)
    assert list(again.bindings) == [] and base64.b64encode(again.etag) == b"ACAB"


def test_a_snapshot_has_a_policy_and_it_goes_with_the_snapshot(
    world: tuple[Any, Any]
) -> None:
    _, sub = world
    snapshot = f"{P}/snapshots/snap-1"
    sub.create_snapshot(name=snapshot, subscription=SUB)
    binding = {"role": "roles/pubsub.subscriber", "members": ["allUsers"]}
    policy = _set(sub, snapshot, binding)
    assert sub.get_iam_policy(request={"resource": snapshot}, **CALL) == policy
    seek = sub.test_iam_permissions(
        request={"resource": snapshot, "permissions": ["pubsub.snapshots.seek"]}, **CALL
    )
    assert list(seek.permissions) == ["pubsub.snapshots.seek"]
    with pytest.raises(exceptions.InvalidArgument, match="not supported"):
        _set(sub, snapshot, PUBLISHER)  # Publisher is granted on topics only
    sub.delete_snapshot(snapshot=snapshot)
    with pytest.raises(exceptions.NotFound):
        sub.get_iam_policy(request={"resource": snapshot}, **CALL)
    sub.create_snapshot(name=snapshot, subscription=SUB)
    assert list(sub.get_iam_policy(request={"resource": snapshot}, **CALL).bindings) == []


def _durable_clients(server: LocalServer) -> tuple[Any, Any]:
    from reconciler.backends.clients import publisher_client, subscriber_client

    return publisher_client(server.address), subscriber_client(server.address)


@pytest.mark.parametrize("stop", ["clean", "crash", "compacted"])
def test_policies_are_durable_and_their_removal_too(tmp_path: Path, stop: str) -> None:
    state = tmp_path / "state"
    with LocalServer(state_dir=state, fsync=False) as server:
        pub, sub = _durable_clients(server)
        pub.create_topic(name=TOPIC)
        pub.create_topic(name=f"{P}/topics/other")
        sub.create_subscription(name=SUB, topic=TOPIC)
        kept = _set(pub, TOPIC, VIEWER, PUBLISHER)
        _set(sub, SUB, VIEWER)
        _set(pub, f"{P}/topics/other", VIEWER)
        pub.delete_topic(topic=f"{P}/topics/other")
        pub.create_topic(name=f"{P}/topics/other")  # created again: no policy
        if stop == "compacted":
            server.compact()
        if stop == "crash":
            server.crash()
    with LocalServer(state_dir=state, fsync=False) as server:
        pub, sub = _durable_clients(server)
        assert pub.get_iam_policy(request={"resource": TOPIC}, **CALL) == kept
        assert _roles(sub.get_iam_policy(request={"resource": SUB}, **CALL)) == [
            ("roles/pubsub.viewer", ["group:ops@example.com"])
        ]
        other = pub.get_iam_policy(request={"resource": f"{P}/topics/other"}, **CALL)
        assert list(other.bindings) == []
        with pytest.raises(exceptions.Aborted):  # the etag read before the restart is current
            _set(pub, TOPIC, VIEWER, etag=base64.b64decode("ACAB"))
        _set(pub, TOPIC, VIEWER, etag=kept.etag)


def test_a_schema_has_a_policy_and_it_goes_with_the_schema(schema_client: Any) -> None:
    schema = f"{P}/schemas/state"
    definition = '{"type": "record", "name": "S", "fields": [{"name": "n", "type": "string"}]}'

    def create() -> None:
        schema_client.create_schema(
            parent=P, schema_id="state", schema={"type_": "AVRO", "definition": definition}
        )

    create()
    _set(schema_client, schema, VIEWER)
    assert _roles(schema_client.get_iam_policy(request={"resource": schema}, **CALL)) == [
        ("roles/pubsub.viewer", ["group:ops@example.com"])
    ]
    with pytest.raises(exceptions.InvalidArgument, match="not supported"):
        _set(schema_client, schema, PUBLISHER)  # Publisher is granted on topics only
    schema_client.delete_schema(name=schema)
    with pytest.raises(exceptions.NotFound):
        schema_client.get_iam_policy(request={"resource": schema}, **CALL)
    create()
    assert list(schema_client.get_iam_policy(request={"resource": schema}, **CALL).bindings) == []
