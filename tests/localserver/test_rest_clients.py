"""Google's own Python clients on the REST transport (`transport="rest"`, which sends
`$alt=json;enum-encoding=int` on every call) beside the same clients on gRPC: every
method the local server publishes in its method list, each way in a project (and
organization) of its own set up alike, must give the same answer or the same error.

The few methods with no REST twin in Google's Python clients are named with the
reason, and the reason is checked, so no method is left out silently."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.protobuf import json_format

from reconciler.localserver import CLIENT_REGION_KEY, method_names

REST_P, GRPC_P = "proj-rest", "proj-grpc"
ORG = {REST_P: "organizations/2002", GRPC_P: "organizations/1001"}
CALL = {"retry": None, "timeout": 60}
CONSTRAINT = "custom.euOnly"
APP = "serviceAccount:app@example.iam.gserviceaccount.com"
STATE = {"type": "record", "name": "State", "fields": [{"name": "name", "type": "string"}]}
# Compatible with STATE (a field with a default added); STATE_LONG is not.
STATE_V2 = {**STATE, "fields": [*STATE["fields"], {"name": "pop", "type": "long", "default": 0}]}
STATE_LONG = {**STATE, "fields": [{"name": "name", "type": "long"}]}
EU_ONLY = "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"


def _no_rest_transport_in_monitoring() -> bool:
    from google.cloud.monitoring_v3 import MetricServiceClient

    return "rest" not in MetricServiceClient._transport_registry


def _no_streaming_pull_over_rest() -> bool:
    from google.pubsub_v1.services.subscriber.transports.rest import SubscriberRestTransport

    transport = SubscriberRestTransport(credentials=AnonymousCredentials(), host="127.0.0.1:1")
    try:
        transport.streaming_pull(request=None)
    except NotImplementedError:
        return True
    return False


def _promql_is_no_grpc_method() -> bool:
    from google.cloud.monitoring_v3.services.query_service import QueryServiceClient

    return not hasattr(QueryServiceClient, "query_prometheus")


def _no_transform_calls_in_the_python_client() -> bool:
    from google.pubsub_v1 import PublisherClient

    return not any(
        hasattr(PublisherClient, name)
        for name in ("validate_message_transform", "test_message_transforms")
    )


# Methods the server publishes that Google's Python clients cannot call both ways.
NO_REST_TWIN: dict[str, tuple[str, Callable[[], bool]]] = {
    "StreamingPull": ("Pub/Sub's REST surface has no StreamingPull", _no_streaming_pull_over_rest),
    "ListTimeSeries": (
        "google-cloud-monitoring ships no REST transport (tests/localserver/test_rest.py "
        "sends the REST call itself)",
        _no_rest_transport_in_monitoring,
    ),
    "PromQLQuery": (
        "Monitoring's PromQL API is HTTP only, with no gRPC method or Python client "
        "(tests/localserver/test_promql.py)",
        _promql_is_no_grpc_method,
    ),
    **{
        method: (
            "REST only: the installed google-cloud-pubsub has no client method or gRPC "
            "definition for it (tests/localserver/test_transform_rpcs.py calls it through "
            "the real gcloud)",
            _no_transform_calls_in_the_python_client,
        )
        for method in ("ValidateMessageTransform", "TestMessageTransforms")
    },
}


@dataclass
class Clients:
    publisher: Any
    subscriber: Any
    orgpolicy: Any
    schemas: Any
    projects: Any
    folders: Any
    organizations: Any
    tag_bindings: Any
    project: str

    @property
    def org(self) -> str:
        return ORG[self.project]

    def name(self, kind: str, resource: str) -> str:
        return f"projects/{self.project}/{kind}/{resource}"


RM_CLIENTS = ("ProjectsClient", "FoldersClient", "OrganizationsClient", "TagBindingsClient")


def _rest_clients(address: str, project: str) -> Clients:
    from google.cloud import resourcemanager_v3
    from google.cloud.orgpolicy_v2 import OrgPolicyClient
    from google.pubsub_v1 import PublisherClient, SchemaServiceClient, SubscriberClient

    options = ClientOptions(api_endpoint=f"http://{address}")
    classes = (PublisherClient, SubscriberClient, OrgPolicyClient, SchemaServiceClient,
               *(getattr(resourcemanager_v3, name) for name in RM_CLIENTS))
    made = [
        cls(transport="rest", client_options=options, credentials=AnonymousCredentials())
        for cls in classes
    ]
    return Clients(*made, project=project)


def _insecure_rm_clients(address: str) -> list[Any]:
    """Resource Manager's four clients on gRPC, in plaintext."""
    import grpc
    from google.cloud import resourcemanager_v3 as rm
    from google.cloud.resourcemanager_v3.services.folders.transports import FoldersGrpcTransport
    from google.cloud.resourcemanager_v3.services.organizations.transports import (
        OrganizationsGrpcTransport,
    )
    from google.cloud.resourcemanager_v3.services.projects.transports import (
        ProjectsGrpcTransport,
    )
    from google.cloud.resourcemanager_v3.services.tag_bindings.transports import (
        TagBindingsGrpcTransport,
    )

    channel = grpc.insecure_channel(address)
    return [
        rm.ProjectsClient(transport=ProjectsGrpcTransport(channel=channel)),
        rm.FoldersClient(transport=FoldersGrpcTransport(channel=channel)),
        rm.OrganizationsClient(transport=OrganizationsGrpcTransport(channel=channel)),
        rm.TagBindingsClient(transport=TagBindingsGrpcTransport(channel=channel)),
    ]


@pytest.fixture
def both(local_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Clients]]:
    """The REST clients in one project, the gRPC clients in another, each project set
    up alike (over gRPC).

    A Pull that finds nothing is held open 1 s instead of the server's 10 s: the cases
    that expect no message (Acknowledge's second Pull) get the same empty answer, and
    an acked message is not delivered again within either (its ack deadline is 30 s)."""
    from reconciler.backends import clients as made_for
    from reconciler.localserver.pubsub import subscriber_service

    monkeypatch.setattr(subscriber_service, "PULL_WAIT_S", 1.0)

    address = local_server.address
    grpc_clients = Clients(
        made_for.publisher_client(address),
        made_for.subscriber_client(address),
        made_for.orgpolicy_client(address),
        made_for.schema_client(address),
        *_insecure_rm_clients(address),
        GRPC_P,
    )
    made = {"rest": _rest_clients(address, REST_P), "grpc": grpc_clients}
    for project in (REST_P, GRPC_P):
        _set_up(dataclasses.replace(grpc_clients, project=project))
    yield made
    for clients in made.values():
        for client in (clients.publisher, clients.subscriber, clients.orgpolicy, clients.schemas,
                       clients.projects, clients.folders, clients.organizations):
            client.transport.close()


def _set_up(c: Clients) -> None:
    """The same world in each project, made over gRPC: a topic in us-east1 with two
    subscriptions and one message, a policy on the topic, a location policy on the
    project, a custom constraint in the organization, an Avro schema, a snapshot of the
    subscription."""
    topic = c.name("topics", "orders")
    c.publisher.create_topic(
        request={
            "name": topic,
            "labels": {"team": "payments"},
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
        }
    )
    c.publisher.create_topic(name=c.name("topics", "spare"))
    for sub in ("orders-sub", "spare-sub"):
        c.subscriber.create_subscription(
            request={
                "name": c.name("subscriptions", sub), "topic": topic, "ack_deadline_seconds": 30
            }
        )
    c.publisher.publish(
        topic=topic,
        messages=[{"data": b"first", "attributes": {"k": "v"}}],
        metadata=[(CLIENT_REGION_KEY, "us-east1")],
    )
    c.publisher.set_iam_policy(
        request={
            "resource": topic,
            "policy": {
                "bindings": [{"role": "roles/pubsub.viewer", "members": ["group:ops@example.com"]}]
            },
        }
    )
    c.orgpolicy.create_policy(
        parent=f"projects/{c.project}",
        policy={
            "name": f"projects/{c.project}/policies/gcp.resourceLocations",
            "spec": {"rules": [{"values": {"allowed_values": ["in:us-locations"]}}]},
        },
    )
    c.orgpolicy.create_custom_constraint(parent=c.org, custom_constraint=_constraint(c))
    c.schemas.create_schema(
        parent=f"projects/{c.project}", schema_id="state",
        schema={"type_": "AVRO", "definition": json.dumps(STATE)},
    )
    c.subscriber.create_snapshot(
        request={"name": c.name("snapshots", "snap-1"),
                 "subscription": c.name("subscriptions", "orders-sub"),
                 "labels": {"kind": "before"}}
    )
    folder = c.folders.create_folder(folder={"parent": c.org, "display_name": "Payments"})
    c.projects.create_project(project={
        "project_id": c.project, "parent": folder.result().name, "labels": {"team": "pay"},
    }).result()


def _folder(c: Clients) -> str:
    """The folder the set-up made in the project's organization."""
    [folder] = c.folders.list_folders(parent=c.org, **CALL)
    return str(folder.name)


def _operation(c: Clients) -> Any:
    made = c.folders.create_folder(folder={"parent": c.org, "display_name": "Ops"}, **CALL)
    return c.folders.get_operation(request={"name": made.operation.name}, **CALL)


def _constraint(c: Clients, **overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"{c.org}/customConstraints/{CONSTRAINT}",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": EU_ONLY,
        "action_type": "ALLOW",
        "display_name": "EU only",
    }
    out.update(overrides)
    return out


def _pull(c: Clients) -> Any:
    return c.subscriber.pull(
        subscription=c.name("subscriptions", "orders-sub"), max_messages=10, **CALL
    )


def _acknowledged(c: Clients) -> Any:
    ack_ids = [m.ack_id for m in _pull(c).received_messages]
    c.subscriber.acknowledge(
        subscription=c.name("subscriptions", "orders-sub"), ack_ids=ack_ids, **CALL
    )
    return _pull(c)


def _deadline_zero(c: Clients) -> Any:
    ack_ids = [m.ack_id for m in _pull(c).received_messages]
    c.subscriber.modify_ack_deadline(
        subscription=c.name("subscriptions", "orders-sub"),
        ack_ids=ack_ids,
        ack_deadline_seconds=0,
        **CALL,
    )
    return _pull(c)  # the message is delivered again at once


def _stale_etag(c: Clients) -> Any:
    topic = c.name("topics", "orders")
    read = c.publisher.get_iam_policy(request={"resource": topic}, **CALL)
    c.publisher.set_iam_policy(request={"resource": topic, "policy": read}, **CALL)
    return c.publisher.set_iam_policy(request={"resource": topic, "policy": read}, **CALL)


@dataclass
class Case:
    id: str  # "METHOD" or "METHOD-what"
    call: Callable[[Clients], Any]
    error: type[Exception] | None = None  # the error both ways, None when it succeeds


def _schema(c: Clients, schema_id: str = "state") -> str:
    return c.name("schemas", schema_id)


def _commit(c: Clients, definition: dict[str, Any]) -> Any:
    return c.schemas.commit_schema(
        name=_schema(c), schema={"type_": "AVRO", "definition": json.dumps(definition)}, **CALL
    )


def _rolled_back(c: Clients) -> Any:
    first = _commit(c, STATE_V2)  # the newest is now this one; roll back to the first
    revisions = list(c.schemas.list_schema_revisions(name=_schema(c), **CALL))
    assert revisions[-1].revision_id == first.revision_id
    return c.schemas.rollback_schema(
        name=_schema(c), revision_id=revisions[0].revision_id, **CALL
    )


def _revision_deleted(c: Clients) -> Any:
    _commit(c, STATE_V2)
    oldest = next(iter(c.schemas.list_schema_revisions(name=_schema(c), **CALL)))
    return c.schemas.delete_schema_revision(
        name=f"{_schema(c)}@{oldest.revision_id}", **CALL
    )


def _tag_bindings(c: Clients) -> Any:
    """The bindings of a topic created with tags (tests/localserver/test_tag_bindings.py)."""
    topic = c.name("topics", "tagged")
    c.publisher.create_topic(request={"name": topic, "tags": {"123/environment": "prod"}},
                             **CALL)
    return list(c.tag_bindings.list_tag_bindings(
        parent=f"//pubsub.googleapis.com/{topic}", **CALL))


def _policy(c: Clients) -> str:
    return f"projects/{c.project}/policies/gcp.resourceLocations"


CASES = [
    Case("CreateTopic", lambda c: c.publisher.create_topic(
        request={"name": c.name("topics", "fresh"), "labels": {"env": "dev"}}, **CALL)),
    Case("CreateTopic-exists", lambda c: c.publisher.create_topic(
        name=c.name("topics", "orders"), **CALL), exceptions.Conflict),
    Case("CreateTopic-zone", lambda c: c.publisher.create_topic(request={
        "name": c.name("topics", "fresh"),
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1-b"]}}, **CALL),
        exceptions.BadRequest),
    Case("GetTopic", lambda c: c.publisher.get_topic(topic=c.name("topics", "orders"), **CALL)),
    Case("GetTopic-missing", lambda c: c.publisher.get_topic(
        topic=c.name("topics", "missing"), **CALL), exceptions.NotFound),
    Case("UpdateTopic", lambda c: c.publisher.update_topic(request={
        "topic": {"name": c.name("topics", "orders"), "labels": {"env": "prod"}},
        "update_mask": {"paths": ["labels"]}}, **CALL)),
    Case("UpdateTopic-bad-mask", lambda c: c.publisher.update_topic(request={
        "topic": {"name": c.name("topics", "orders")}, "update_mask": {"paths": ["labelz"]}},
        **CALL), exceptions.BadRequest),
    Case("ListTopics", lambda c: list(c.publisher.list_topics(
        request={"project": f"projects/{c.project}", "page_size": 1}, **CALL))),
    Case("DeleteTopic", lambda c: c.publisher.delete_topic(
        topic=c.name("topics", "spare"), **CALL)),
    Case("DeleteTopic-missing", lambda c: c.publisher.delete_topic(
        topic=c.name("topics", "missing"), **CALL), exceptions.NotFound),
    Case("ListTopicSubscriptions", lambda c: list(c.publisher.list_topic_subscriptions(
        topic=c.name("topics", "orders"), **CALL))),
    Case("DetachSubscription", lambda c: c.publisher.detach_subscription(
        request={"subscription": c.name("subscriptions", "spare-sub")}, **CALL)),
    Case("Publish", lambda c: c.publisher.publish(
        topic=c.name("topics", "orders"), messages=[{"data": b"x", "ordering_key": ""}], **CALL)),
    Case("Publish-empty", lambda c: c.publisher.publish(
        topic=c.name("topics", "orders"), messages=[{"data": b""}], **CALL),
        exceptions.BadRequest),
    Case("CreateSubscription", lambda c: c.subscriber.create_subscription(request={
        "name": c.name("subscriptions", "fresh-sub"), "topic": c.name("topics", "orders"),
        "retain_acked_messages": True, "labels": {"env": "dev"}}, **CALL)),
    Case("CreateSubscription-bad-deadline", lambda c: c.subscriber.create_subscription(request={
        "name": c.name("subscriptions", "fresh-sub"), "topic": c.name("topics", "orders"),
        "ack_deadline_seconds": 5}, **CALL), exceptions.BadRequest),
    Case("GetSubscription", lambda c: c.subscriber.get_subscription(
        subscription=c.name("subscriptions", "orders-sub"), **CALL)),
    Case("UpdateSubscription", lambda c: c.subscriber.update_subscription(request={
        "subscription": {"name": c.name("subscriptions", "orders-sub"), "ack_deadline_seconds": 60},
        "update_mask": {"paths": ["ack_deadline_seconds"]}}, **CALL)),
    Case("UpdateSubscription-nested", lambda c: c.subscriber.update_subscription(request={
        "subscription": {"name": c.name("subscriptions", "orders-sub"),
                         "retry_policy": {"minimum_backoff": {"seconds": 20}}},
        "update_mask": {"paths": ["retry_policy.minimum_backoff"]}}, **CALL)),
    Case("ModifyPushConfig", lambda c: (c.subscriber.modify_push_config(request={
        "subscription": c.name("subscriptions", "orders-sub"),
        "push_config": {"push_endpoint": "https://example.com/push", "oidc_token": {
            "service_account_email": "pusher@p.iam.gserviceaccount.com"}}},
        **CALL), c.subscriber.get_subscription(
        subscription=c.name("subscriptions", "orders-sub"), **CALL))[1]),
    Case("ModifyPushConfig-bad-account", lambda c: c.subscriber.modify_push_config(request={
        "subscription": c.name("subscriptions", "orders-sub"),
        "push_config": {"push_endpoint": "https://example.com/push",
                        "oidc_token": {"service_account_email": "not-an-email"}}}, **CALL),
        exceptions.BadRequest),
    Case("ListSubscriptions", lambda c: list(c.subscriber.list_subscriptions(
        project=f"projects/{c.project}", **CALL))),
    Case("DeleteSubscription", lambda c: c.subscriber.delete_subscription(
        subscription=c.name("subscriptions", "spare-sub"), **CALL)),
    Case("DeleteSubscription-missing", lambda c: c.subscriber.delete_subscription(
        subscription=c.name("subscriptions", "missing"), **CALL), exceptions.NotFound),
    Case("Pull", _pull),
    Case("Acknowledge", _acknowledged),
    Case("Acknowledge-garbage", lambda c: c.subscriber.acknowledge(
        subscription=c.name("subscriptions", "orders-sub"), ack_ids=["junk"], **CALL),
        exceptions.BadRequest),
    Case("ModifyAckDeadline", _deadline_zero),
    Case("GetIamPolicy", lambda c: c.publisher.get_iam_policy(
        request={"resource": c.name("topics", "orders")}, **CALL)),
    Case("GetIamPolicy-subscription", lambda c: c.subscriber.get_iam_policy(
        request={"resource": c.name("subscriptions", "orders-sub")}, **CALL)),
    Case("GetIamPolicy-missing", lambda c: c.publisher.get_iam_policy(
        request={"resource": c.name("topics", "missing")}, **CALL), exceptions.NotFound),
    Case("SetIamPolicy", lambda c: c.subscriber.set_iam_policy(request={
        "resource": c.name("subscriptions", "orders-sub"),
        "policy": {"bindings": [{"role": "roles/pubsub.subscriber", "members": [APP]}]}}, **CALL)),
    Case("SetIamPolicy-stale-etag", _stale_etag, exceptions.Conflict),
    Case("SetIamPolicy-publisher-on-subscription", lambda c: c.subscriber.set_iam_policy(request={
        "resource": c.name("subscriptions", "orders-sub"),
        "policy": {"bindings": [{"role": "roles/pubsub.publisher", "members": ["allUsers"]}]}},
        **CALL), exceptions.BadRequest),
    Case("TestIamPermissions", lambda c: c.publisher.test_iam_permissions(request={
        "resource": c.name("topics", "orders"),
        "permissions": ["pubsub.topics.publish", "pubsub.topics.update"]}, **CALL)),
    Case("TestIamPermissions-missing", lambda c: c.subscriber.test_iam_permissions(request={
        "resource": c.name("subscriptions", "missing"),
        "permissions": ["pubsub.subscriptions.consume"]}, **CALL)),
    Case("TestIamPermissions-wildcard", lambda c: c.publisher.test_iam_permissions(request={
        "resource": c.name("topics", "orders"), "permissions": ["pubsub.*"]}, **CALL),
        exceptions.BadRequest),
    Case("CreateSnapshot", lambda c: c.subscriber.create_snapshot(
        name=c.name("snapshots", "snap-2"), subscription=c.name("subscriptions", "orders-sub"),
        **CALL)),
    Case("CreateSnapshot-exists", lambda c: c.subscriber.create_snapshot(
        name=c.name("snapshots", "snap-1"), subscription=c.name("subscriptions", "orders-sub"),
        **CALL), exceptions.Conflict),
    Case("GetSnapshot", lambda c: c.subscriber.get_snapshot(
        snapshot=c.name("snapshots", "snap-1"), **CALL)),
    Case("ListSnapshots", lambda c: list(c.subscriber.list_snapshots(
        project=f"projects/{c.project}", **CALL))),
    Case("ListTopicSnapshots", lambda c: list(c.publisher.list_topic_snapshots(
        topic=c.name("topics", "orders"), **CALL))),
    Case("UpdateSnapshot", lambda c: c.subscriber.update_snapshot(request={
        "snapshot": {"name": c.name("snapshots", "snap-1"), "labels": {"kind": "after"}},
        "update_mask": {"paths": ["labels"]}}, **CALL)),
    Case("DeleteSnapshot", lambda c: c.subscriber.delete_snapshot(
        snapshot=c.name("snapshots", "snap-1"), **CALL)),
    Case("Seek", lambda c: (c.subscriber.seek(request={
        "subscription": c.name("subscriptions", "orders-sub"),
        "snapshot": c.name("snapshots", "snap-1")}, **CALL), _pull(c))[1]),
    Case("Seek-no-target", lambda c: c.subscriber.seek(request={
        "subscription": c.name("subscriptions", "orders-sub")}, **CALL), exceptions.BadRequest),
    Case("GetIamPolicy-snapshot", lambda c: c.subscriber.get_iam_policy(
        request={"resource": c.name("snapshots", "snap-1")}, **CALL)),
    Case("CreateSchema", lambda c: c.schemas.create_schema(
        parent=f"projects/{c.project}", schema_id="other",
        schema={"type_": "AVRO", "definition": json.dumps(STATE)}, **CALL)),
    Case("CreateSchema-exists", lambda c: c.schemas.create_schema(
        parent=f"projects/{c.project}", schema_id="state",
        schema={"type_": "AVRO", "definition": json.dumps(STATE)}, **CALL), exceptions.Conflict),
    Case("GetSchema", lambda c: c.schemas.get_schema(name=_schema(c), **CALL)),
    Case("GetSchema-missing", lambda c: c.schemas.get_schema(
        name=_schema(c, "missing"), **CALL), exceptions.NotFound),
    Case("ListSchemas", lambda c: list(c.schemas.list_schemas(
        request={"parent": f"projects/{c.project}", "view": "FULL"}, **CALL))),
    Case("ListSchemaRevisions", lambda c: list(c.schemas.list_schema_revisions(
        name=_schema(c), **CALL))),
    Case("CommitSchema", lambda c: _commit(c, STATE_V2)),
    Case("CommitSchema-incompatible", lambda c: _commit(c, STATE_LONG), exceptions.BadRequest),
    Case("RollbackSchema", _rolled_back),
    Case("DeleteSchemaRevision", _revision_deleted),
    Case("DeleteSchema", lambda c: c.schemas.delete_schema(name=_schema(c), **CALL)),
    Case("ValidateSchema", lambda c: c.schemas.validate_schema(
        parent=f"projects/{c.project}",
        schema={"type_": "AVRO", "definition": json.dumps(STATE_V2)}, **CALL)),
    Case("ValidateMessage", lambda c: c.schemas.validate_message(request={
        "parent": f"projects/{c.project}", "name": _schema(c), "encoding": "JSON",
        "message": b'{"name": "Utah"}'}, **CALL)),
    Case("ValidateMessage-bad", lambda c: c.schemas.validate_message(request={
        "parent": f"projects/{c.project}", "name": _schema(c), "encoding": "JSON",
        "message": b'{"name": 7}'}, **CALL), exceptions.BadRequest),
    Case("SetIamPolicy-schema", lambda c: c.schemas.set_iam_policy(request={
        "resource": _schema(c),
        "policy": {"bindings": [{"role": "roles/pubsub.viewer", "members": [APP]}]}}, **CALL)),
    Case("GetIamPolicy-schema", lambda c: c.schemas.get_iam_policy(
        request={"resource": _schema(c)}, **CALL)),
    Case("GetPolicy", lambda c: c.orgpolicy.get_policy(name=_policy(c), **CALL)),
    Case("GetPolicy-missing", lambda c: c.orgpolicy.get_policy(
        name=f"projects/{c.project}/policies/gcp.restrictTLSVersion", **CALL), exceptions.NotFound),
    Case("GetEffectivePolicy", lambda c: c.orgpolicy.get_effective_policy(
        name=_policy(c), **CALL)),
    Case("ListPolicies", lambda c: list(c.orgpolicy.list_policies(
        parent=f"projects/{c.project}", **CALL))),
    Case("CreatePolicy", lambda c: c.orgpolicy.create_policy(parent=c.org, policy={
        "name": f"{c.org}/policies/gcp.resourceLocations",
        "spec": {"rules": [{"values": {"allowed_values": ["in:eu-locations"]}}]}}, **CALL)),
    Case("CreatePolicy-exists", lambda c: c.orgpolicy.create_policy(
        parent=f"projects/{c.project}", policy={"name": _policy(c), "spec": {"rules": [
            {"allow_all": True}]}}, **CALL), exceptions.Conflict),
    Case("UpdatePolicy", lambda c: c.orgpolicy.update_policy(policy={
        "name": _policy(c),
        "spec": {"rules": [{"values": {"allowed_values": ["in:europe-west1-locations"]}}]}},
        **CALL)),
    Case("DeletePolicy", lambda c: c.orgpolicy.delete_policy(name=_policy(c), **CALL)),
    Case("CreateCustomConstraint", lambda c: c.orgpolicy.create_custom_constraint(
        parent=c.org, custom_constraint=_constraint(
            c, name=f"{c.org}/customConstraints/custom.other"), **CALL)),
    Case("UpdateCustomConstraint", lambda c: c.orgpolicy.update_custom_constraint(
        custom_constraint=_constraint(c, display_name="EU only, really"), **CALL)),
    Case("GetCustomConstraint", lambda c: c.orgpolicy.get_custom_constraint(
        name=f"{c.org}/customConstraints/{CONSTRAINT}", **CALL)),
    Case("ListCustomConstraints", lambda c: list(c.orgpolicy.list_custom_constraints(
        parent=c.org, **CALL))),
    Case("DeleteCustomConstraint", lambda c: c.orgpolicy.delete_custom_constraint(
        name=f"{c.org}/customConstraints/{CONSTRAINT}", **CALL)),
    Case("DeleteCustomConstraint-missing", lambda c: c.orgpolicy.delete_custom_constraint(
        name=f"{c.org}/customConstraints/custom.none", **CALL), exceptions.NotFound),
    Case("GetProject", lambda c: c.projects.get_project(name=f"projects/{c.project}", **CALL)),
    Case("GetProject-bad-id", lambda c: c.projects.get_project(
        name="projects/Not_An_Id", **CALL), exceptions.BadRequest),
    Case("GetProject-unknown-number", lambda c: c.projects.get_project(
        name="projects/123456", **CALL), exceptions.Forbidden),
    Case("ListProjects", lambda c: list(c.projects.list_projects(parent=_folder(c), **CALL))),
    Case("ListProjects-bad-parent", lambda c: list(c.projects.list_projects(
        parent=f"projects/{c.project}", **CALL)), exceptions.BadRequest),
    Case("SearchProjects", lambda c: list(c.projects.search_projects(
        query=f"id:{c.project} AND labels.team:pay", **CALL))),
    Case("SearchProjects-bad-query", lambda c: list(c.projects.search_projects(
        query="NOT id:x", **CALL)), exceptions.BadRequest),
    Case("CreateProject", lambda c: c.projects.create_project(project={
        "project_id": f"{c.project}-two", "parent": c.org}, **CALL).result()),
    Case("CreateProject-exists", lambda c: c.projects.create_project(project={
        "project_id": c.project}, **CALL).result(), exceptions.Conflict),
    Case("MoveProject", lambda c: c.projects.move_project(
        name=f"projects/{c.project}", destination_parent=c.org, **CALL).result()),
    Case("GetFolder", lambda c: c.folders.get_folder(name=_folder(c), **CALL)),
    Case("GetFolder-missing", lambda c: c.folders.get_folder(
        name="folders/999", **CALL), exceptions.Forbidden),
    Case("ListFolders", lambda c: list(c.folders.list_folders(parent=c.org, **CALL))),
    Case("SearchFolders", lambda c: list(c.folders.search_folders(
        query=f"parent={c.org} AND displayName=Pay*", **CALL))),
    Case("CreateFolder", lambda c: c.folders.create_folder(folder={
        "parent": _folder(c), "display_name": "Team A"}, **CALL).result()),
    Case("CreateFolder-taken", lambda c: c.folders.create_folder(folder={
        "parent": c.org, "display_name": "Payments"}, **CALL).result(), exceptions.BadRequest),
    Case("GetOrganization", lambda c: c.organizations.get_organization(name=c.org, **CALL)),
    Case("GetOrganization-unknown", lambda c: c.organizations.get_organization(
        name="organizations/31337", **CALL), exceptions.Forbidden),
    Case("SearchOrganizations", lambda c: list(c.organizations.search_organizations(
        query=f"directoryCustomerId:C{c.org.removeprefix('organizations/')}", **CALL))),
    Case("GetOperation", _operation),
    Case("ListTagBindings", _tag_bindings),
    Case("ListTagBindings-not-a-full-name", lambda c: list(c.tag_bindings.list_tag_bindings(
        parent=c.name("topics", "orders"), **CALL)), exceptions.BadRequest),
]

# Per-call values: IDs, times, etags (their presence is compared, not their value).
VOLATILE = {
    "messageId", "publishTime", "ackId", "updateTime", "etag", "revisionId", "revisionCreateTime",
    "expireTime", "createTime",
}


def _plain(value: Any) -> Any:
    """A response as JSON-like data: proto-plus and protobuf messages, lists of them."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None:
        return None
    pb = type(value).pb(value) if hasattr(type(value), "pb") else value
    if isinstance(pb, str):
        return pb
    return json_format.MessageToDict(pb)


def _normal(value: Any, project: str) -> Any:
    if isinstance(value, str):  # a schema revision's random ID in a message too
        value = re.sub(r"revision: [0-9a-f]{8}\b", "revision: <id>", value)
        # Numbers the server gives (projects, folders, operations) differ by project.
        value = re.sub(r"\b(projects|folders)/[0-9]{3,}\b", r"\1/<n>", value)
        value = re.sub(r"\boperations/[a-z]+\.[0-9]+\b", "operations/<n>", value)
        number = ORG[project].removeprefix("organizations/")
        return (value.replace(project, "{P}").replace(ORG[project], "{O}")
                .replace(f"organization-{number}", "{O}").replace(f"C{number}", "{C}"))
    if isinstance(value, dict):
        return {k: _normal_field(k, v, project) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v, project) for v in value]
    return value


def _normal_field(key: str, value: Any, project: str) -> Any:
    if key == "messageIds":
        return len(value)
    if key in VOLATILE and value:
        return "<set>"
    return _normal(value, project)


def _outcome(case: Case, clients: Clients) -> tuple[str, Any]:
    try:
        return "OK", _normal(_plain(case.call(clients)), clients.project)
    except exceptions.GoogleAPICallError as err:
        status = err.grpc_status_code.name if err.grpc_status_code else None
        if hasattr(err.response, "json"):  # REST: the status the JSON error carries
            status = err.response.json()["error"]["status"]
            message = err.message.split(": ", 1)[1]  # after "METHOD URL"
        else:
            message = err.message
        return f"{type(err).__name__} {err.code} {status}", _normal(message, clients.project)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_rest_client_call_and_its_grpc_twin_agree(
    local_server: Any, both: dict[str, Clients], case: Case
) -> None:
    local_server.counters.reset()
    rest_kind, rest_answer = _outcome(case, both["rest"])
    grpc_kind, grpc_answer = _outcome(case, both["grpc"])
    if case.error is None:
        assert rest_kind == "OK", rest_answer
    else:
        assert rest_kind.split()[1] == str(case.error.code), (rest_kind, rest_answer)
    assert rest_kind.split()[1:] == grpc_kind.split()[1:], (rest_answer, grpc_answer)
    assert rest_answer == grpc_answer
    # Both went through the one dispatcher: counted alike, per project.
    method = case.id.split("-", 1)[0]
    assert local_server.counters.get(method) >= 2
    assert local_server.counters.get(method) % 2 == 0


def test_every_published_method_has_a_rest_client_twin(local_server: Any) -> None:
    published = set(method_names())
    assert published == set(local_server.method_names())
    covered = {case.id.split("-", 1)[0] for case in CASES}
    assert covered | set(NO_REST_TWIN) == published, "a published method has no case"
    assert not covered & set(NO_REST_TWIN)
    for method, (reason, holds) in NO_REST_TWIN.items():
        assert holds(), f"{method}: {reason} -- no longer true: give it a case"
    assert {"GetIamPolicy", "SetIamPolicy", "TestIamPermissions"} <= published
