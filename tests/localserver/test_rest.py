"""The REST face (Pub/Sub v1, Monitoring v3 timeSeries) against its gRPC twin: one
parametrized test sends every supported method both ways, each way in a project of
its own set up alike, and requires the same result and the same error."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from rest_support import rest

from reconciler.localserver import CLIENT_REGION_KEY

REST_P, GRPC_P = "proj-rest", "proj-grpc"
HTTP = {
    "OK": 200,
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INTERNAL": 500,
    "DATA_LOSS": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


def _sub(value: Any, project: str) -> Any:
    """`value` with "{P}" replaced by the project ID, at any depth."""
    if isinstance(value, str):
        return value.replace("{P}", project)
    if isinstance(value, dict):
        return {k: _sub(v, project) for k, v in value.items()}
    if isinstance(value, list):
        return [_sub(v, project) for v in value]
    return value


@dataclass
class Twin:
    """One REST request and its gRPC twin (written independently: the REST side as
    gcloud or Terraform send it, the gRPC side as the GAPIC client does)."""

    id: str
    verb: str
    path: str
    body: Any
    client: str  # "publisher", "subscriber" or "monitoring"
    method: str  # the transport's method
    request: dict[str, Any]
    ok: bool = True  # whether the call succeeds (an error case must fail both ways)
    query: dict[str, str] = field(default_factory=dict)


T, S = "projects/{P}/topics", "projects/{P}/subscriptions"
UNTIL_2030 = "request.time < timestamp('2030-01-01T00:00:00Z')"
CONDITIONAL_POLICY = {
    "version": 3,
    "bindings": [
        {
            "role": "roles/pubsub.viewer",
            "members": ["user:a@example.com"],
            "condition": {"expression": UNTIL_2030},
        }
    ],
}
SC = "projects/{P}/schemas"
AVSC = '{"type": "record", "name": "State", "fields": [{"name": "name", "type": "string"}]}'
AVSC_V2 = (
    '{"type": "record", "name": "State", "fields": [{"name": "name", "type": "string"}, '
    '{"name": "pop", "type": "long", "default": 0}]}'
)
AVSC_LONG = '{"type": "record", "name": "State", "fields": [{"name": "name", "type": "long"}]}'
NOW = int(time.time())
SINCE, UNTIL = NOW - 600, NOW + 3600
FILTER = 'metric.type = "pubsub.googleapis.com/topic/send_request_count"'
TS_QUERY = {
    "filter": FILTER,
    "interval.startTime": f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(SINCE))}",
    "interval.endTime": f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(UNTIL))}",
    "aggregation.alignmentPeriod": "3600s",
    "aggregation.perSeriesAligner": "ALIGN_DELTA",
}
TS_REQUEST = {
    "name": "projects/{P}",
    "filter": FILTER,
    "interval": {"start_time": {"seconds": SINCE}, "end_time": {"seconds": UNTIL}},
    "aggregation": {"alignment_period": {"seconds": 3600}, "per_series_aligner": "ALIGN_DELTA"},
}

TWINS = [
    # Publisher
    Twin(
        "CreateTopic",
        "PUT",
        f"/v1/{T}/fresh",
        {"labels": {"team": "a"}},
        "publisher",
        "create_topic",
        {"name": f"{T}/fresh", "labels": {"team": "a"}},
    ),
    Twin(
        "CreateTopic-exists",
        "PUT",
        f"/v1/{T}/orders",
        {},
        "publisher",
        "create_topic",
        {"name": f"{T}/orders"},
        ok=False,
    ),
    Twin(
        "CreateTopic-no-region",
        "PUT",
        f"/v1/{T}/fresh",
        {"messageStoragePolicy": {"allowedPersistenceRegions": []}},
        "publisher",
        "create_topic",
        {"name": f"{T}/fresh", "message_storage_policy": {"allowed_persistence_regions": []}},
        ok=False,
    ),
    Twin(
        "CreateTopic-zone",
        "PUT",
        f"/v1/{T}/fresh",
        {"messageStoragePolicy": {"allowedPersistenceRegions": ["us-east1-b"]}},
        "publisher",
        "create_topic",
        {
            "name": f"{T}/fresh",
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1-b"]},
        },
        ok=False,
    ),
    Twin(
        "GetTopic",
        "GET",
        f"/v1/{T}/orders",
        None,
        "publisher",
        "get_topic",
        {"topic": f"{T}/orders"},
    ),
    Twin(
        "GetTopic-missing",
        "GET",
        f"/v1/{T}/missing",
        None,
        "publisher",
        "get_topic",
        {"topic": f"{T}/missing"},
        ok=False,
    ),
    Twin(
        "GetTopic-bad-name",
        "GET",
        f"/v1/{T}/x",
        None,
        "publisher",
        "get_topic",
        {"topic": f"{T}/x"},
        ok=False,
    ),
    Twin(
        "UpdateTopic",
        "PATCH",
        f"/v1/{T}/orders",
        {"topic": {"labels": {"env": "dev"}}, "updateMask": "labels"},
        "publisher",
        "update_topic",
        {
            "topic": {"name": f"{T}/orders", "labels": {"env": "dev"}},
            "update_mask": {"paths": ["labels"]},
        },
    ),
    Twin(
        "UpdateTopic-policy",
        "PATCH",
        f"/v1/{T}/orders",
        {
            "topic": {"messageStoragePolicy": {"allowedPersistenceRegions": ["europe-west1"]}},
            "updateMask": "messageStoragePolicy",
        },
        "publisher",
        "update_topic",
        {
            "topic": {
                "name": f"{T}/orders",
                "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]},
            },
            "update_mask": {"paths": ["message_storage_policy"]},
        },
    ),
    Twin(
        "UpdateTopic-bad-mask",
        "PATCH",
        f"/v1/{T}/orders",
        {"topic": {"labels": {}}, "updateMask": "labelz"},
        "publisher",
        "update_topic",
        {"topic": {"name": f"{T}/orders"}, "update_mask": {"paths": ["labelz"]}},
        ok=False,
    ),
    Twin(
        "UpdateTopic-no-mask",
        "PATCH",
        f"/v1/{T}/orders",
        {"topic": {"labels": {"a": "b"}}},
        "publisher",
        "update_topic",
        {"topic": {"name": f"{T}/orders", "labels": {"a": "b"}}},
        ok=False,
    ),
    Twin(
        "ListTopics",
        "GET",
        "/v1/projects/{P}/topics",
        None,
        "publisher",
        "list_topics",
        {"project": "projects/{P}", "page_size": 10},
        query={"pageSize": "10"},
    ),
    Twin(
        "ListTopics-negative-page",
        "GET",
        "/v1/projects/{P}/topics",
        None,
        "publisher",
        "list_topics",
        {"project": "projects/{P}", "page_size": -1},
        query={"pageSize": "-1"},
        ok=False,
    ),
    Twin(
        "ListTopicSubscriptions",
        "GET",
        f"/v1/{T}/orders/subscriptions",
        None,
        "publisher",
        "list_topic_subscriptions",
        {"topic": f"{T}/orders"},
    ),
    Twin(
        "ListTopicSubscriptions-missing",
        "GET",
        f"/v1/{T}/missing/subscriptions",
        None,
        "publisher",
        "list_topic_subscriptions",
        {"topic": f"{T}/missing"},
        ok=False,
    ),
    Twin(
        "Publish",
        "POST",
        f"/v1/{T}/orders:publish",
        {"messages": [{"data": "aGVsbG8=", "attributes": {"k": "v"}, "orderingKey": ""}]},
        "publisher",
        "publish",
        {"topic": f"{T}/orders", "messages": [{"data": b"hello", "attributes": {"k": "v"}}]},
    ),
    Twin(
        "Publish-empty",
        "POST",
        f"/v1/{T}/orders:publish",
        {"messages": []},
        "publisher",
        "publish",
        {"topic": f"{T}/orders", "messages": []},
        ok=False,
    ),
    Twin(
        "Publish-missing-topic",
        "POST",
        f"/v1/{T}/missing:publish",
        {"messages": [{"data": "eA=="}]},
        "publisher",
        "publish",
        {"topic": f"{T}/missing", "messages": [{"data": b"x"}]},
        ok=False,
    ),
    Twin(
        "DetachSubscription",
        "POST",
        f"/v1/{S}/orders-sub:detach",
        None,
        "publisher",
        "detach_subscription",
        {"subscription": f"{S}/orders-sub"},
    ),
    Twin(
        "DetachSubscription-missing",
        "POST",
        f"/v1/{S}/missing:detach",
        None,
        "publisher",
        "detach_subscription",
        {"subscription": f"{S}/missing"},
        ok=False,
    ),
    Twin(
        "DeleteTopic",
        "DELETE",
        f"/v1/{T}/orders",
        None,
        "publisher",
        "delete_topic",
        {"topic": f"{T}/orders"},
    ),
    Twin(
        "DeleteTopic-missing",
        "DELETE",
        f"/v1/{T}/missing",
        None,
        "publisher",
        "delete_topic",
        {"topic": f"{T}/missing"},
        ok=False,
    ),
    Twin(
        "ListTopicSnapshots",
        "GET",
        f"/v1/{T}/orders/snapshots",
        None,
        "publisher",
        "list_topic_snapshots",
        {"topic": f"{T}/orders"},
    ),
    # Subscriber
    Twin(
        "CreateSubscription",
        "PUT",
        f"/v1/{S}/fresh-sub",
        {"topic": f"{T}/orders", "ackDeadlineSeconds": 30, "retainAckedMessages": True},
        "subscriber",
        "create_subscription",
        {
            "name": f"{S}/fresh-sub",
            "topic": f"{T}/orders",
            "ack_deadline_seconds": 30,
            "retain_acked_messages": True,
        },
    ),
    Twin(
        "CreateSubscription-bad-deadline",
        "PUT",
        f"/v1/{S}/fresh-sub",
        {"topic": f"{T}/orders", "ackDeadlineSeconds": 5},
        "subscriber",
        "create_subscription",
        {"name": f"{S}/fresh-sub", "topic": f"{T}/orders", "ack_deadline_seconds": 5},
        ok=False,
    ),
    Twin(
        "CreateSubscription-no-topic",
        "PUT",
        f"/v1/{S}/fresh-sub",
        {"topic": f"{T}/missing"},
        "subscriber",
        "create_subscription",
        {"name": f"{S}/fresh-sub", "topic": f"{T}/missing"},
        ok=False,
    ),
    Twin(
        "GetSubscription",
        "GET",
        f"/v1/{S}/orders-sub",
        None,
        "subscriber",
        "get_subscription",
        {"subscription": f"{S}/orders-sub"},
    ),
    Twin(
        "GetSubscription-missing",
        "GET",
        f"/v1/{S}/missing",
        None,
        "subscriber",
        "get_subscription",
        {"subscription": f"{S}/missing"},
        ok=False,
    ),
    Twin(
        "UpdateSubscription",
        "PATCH",
        f"/v1/{S}/orders-sub",
        {"subscription": {"ackDeadlineSeconds": 60}, "updateMask": "ackDeadlineSeconds"},
        "subscriber",
        "update_subscription",
        {
            "subscription": {"name": f"{S}/orders-sub", "ack_deadline_seconds": 60},
            "update_mask": {"paths": ["ack_deadline_seconds"]},
        },
    ),
    Twin(
        "UpdateSubscription-nested",
        "PATCH",
        f"/v1/{S}/orders-sub",
        {
            "subscription": {"pushConfig": {"noWrapper": {"writeMetadata": True}}},
            "updateMask": "pushConfig.noWrapper,ackDeadlineSeconds",
        },
        "subscriber",
        "update_subscription",
        {
            "subscription": {
                "name": f"{S}/orders-sub",
                "push_config": {"no_wrapper": {"write_metadata": True}},
            },
            "update_mask": {"paths": ["push_config.no_wrapper", "ack_deadline_seconds"]},
        },
    ),
    Twin(
        "UpdateSubscription-snake-case-mask",
        "PATCH",
        f"/v1/{S}/orders-sub",
        {
            "subscription": {"ackDeadlineSeconds": 30, "pushConfig": {"noWrapper": {}}},
            "updateMask": "push_config.no_wrapper,ack_deadline_seconds",
        },
        "subscriber",
        "update_subscription",
        {
            "subscription": {
                "name": f"{S}/orders-sub", "ack_deadline_seconds": 30,
                "push_config": {"no_wrapper": {}},
            },
            "update_mask": {"paths": ["push_config.no_wrapper", "ack_deadline_seconds"]},
        },
    ),
    Twin(
        "UpdateSubscription-immutable",
        "PATCH",
        f"/v1/{S}/orders-sub",
        {"subscription": {"topic": f"{T}/other"}, "updateMask": "topic"},
        "subscriber",
        "update_subscription",
        {
            "subscription": {"name": f"{S}/orders-sub", "topic": f"{T}/other"},
            "update_mask": {"paths": ["topic"]},
        },
        ok=False,
    ),
    Twin(
        "ListSubscriptions",
        "GET",
        "/v1/projects/{P}/subscriptions",
        None,
        "subscriber",
        "list_subscriptions",
        {"project": "projects/{P}"},
    ),
    Twin(
        "ListSubscriptions-bad-project",
        "GET",
        "/v1/projects/{P}_/subscriptions",
        None,
        "subscriber",
        "list_subscriptions",
        {"project": "projects/{P}_"},
        ok=False,
    ),
    Twin(
        "Pull",
        "POST",
        f"/v1/{S}/orders-sub:pull",
        {"maxMessages": 10, "returnImmediately": True},
        "subscriber",
        "pull",
        {"subscription": f"{S}/orders-sub", "max_messages": 10, "return_immediately": True},
    ),
    Twin(
        "Pull-no-max",
        "POST",
        f"/v1/{S}/orders-sub:pull",
        {},
        "subscriber",
        "pull",
        {"subscription": f"{S}/orders-sub"},
        ok=False,
    ),
    Twin(
        "Pull-missing",
        "POST",
        f"/v1/{S}/missing:pull",
        {"maxMessages": 1},
        "subscriber",
        "pull",
        {"subscription": f"{S}/missing", "max_messages": 1},
        ok=False,
    ),
    Twin(
        "Acknowledge-made-up",
        "POST",
        f"/v1/{S}/orders-sub:acknowledge",
        {"ackIds": ["999-1"]},
        "subscriber",
        "acknowledge",
        {"subscription": f"{S}/orders-sub", "ack_ids": ["999-1"]},
        ok=False,
    ),
    Twin(
        "Acknowledge-garbage",
        "POST",
        f"/v1/{S}/orders-sub:acknowledge",
        {"ackIds": ["junk"]},
        "subscriber",
        "acknowledge",
        {"subscription": f"{S}/orders-sub", "ack_ids": ["junk"]},
        ok=False,
    ),
    Twin(
        "ModifyAckDeadline-made-up",
        "POST",
        f"/v1/{S}/orders-sub:modifyAckDeadline",
        {"ackIds": ["999-1"], "ackDeadlineSeconds": 30},
        "subscriber",
        "modify_ack_deadline",
        {"subscription": f"{S}/orders-sub", "ack_ids": ["999-1"], "ack_deadline_seconds": 30},
        ok=False,
    ),
    Twin(
        "ModifyAckDeadline-too-long",
        "POST",
        f"/v1/{S}/orders-sub:modifyAckDeadline",
        {"ackIds": ["999-1"], "ackDeadlineSeconds": 601},
        "subscriber",
        "modify_ack_deadline",
        {"subscription": f"{S}/orders-sub", "ack_ids": ["999-1"], "ack_deadline_seconds": 601},
        ok=False,
    ),
    Twin(
        "DeleteSubscription",
        "DELETE",
        f"/v1/{S}/orders-sub",
        None,
        "subscriber",
        "delete_subscription",
        {"subscription": f"{S}/orders-sub"},
    ),
    Twin(
        "DeleteSubscription-missing",
        "DELETE",
        f"/v1/{S}/missing",
        None,
        "subscriber",
        "delete_subscription",
        {"subscription": f"{S}/missing"},
        ok=False,
    ),
    # The IAM mixin (Python's client sends getIamPolicy as a GET, Node's as a POST)
    Twin(
        "GetIamPolicy",
        "GET",
        f"/v1/{T}/orders:getIamPolicy",
        None,
        "publisher",
        "get_iam_policy",
        {"resource": f"{T}/orders"},
        query={"options.requestedPolicyVersion": "1"},
    ),
    Twin(
        "GetIamPolicy-post",
        "POST",
        f"/v1/{S}/orders-sub:getIamPolicy",
        {"options": {"requestedPolicyVersion": 3}},
        "subscriber",
        "get_iam_policy",
        {"resource": f"{S}/orders-sub", "options": {"requested_policy_version": 3}},
    ),
    Twin(
        "GetIamPolicy-bad-version",
        "GET",
        f"/v1/{T}/orders:getIamPolicy",
        None,
        "publisher",
        "get_iam_policy",
        {"resource": f"{T}/orders", "options": {"requested_policy_version": 2}},
        query={"options.requestedPolicyVersion": "2"},
        ok=False,
    ),
    Twin(
        "SetIamPolicy",
        "POST",
        f"/v1/{T}/orders:setIamPolicy",
        {"policy": {"bindings": [{"role": "roles/pubsub.publisher", "members": ["allUsers"]}]}},
        "publisher",
        "set_iam_policy",
        {
            "resource": f"{T}/orders",
            "policy": {"bindings": [{"role": "roles/pubsub.publisher", "members": ["allUsers"]}]},
        },
    ),
    Twin(
        "SetIamPolicy-condition",
        "POST",
        f"/v1/{T}/orders:setIamPolicy",
        {"policy": CONDITIONAL_POLICY},
        "publisher",
        "set_iam_policy",
        {"resource": f"{T}/orders", "policy": CONDITIONAL_POLICY},
        ok=False,
    ),
    Twin(
        "TestIamPermissions",
        "POST",
        f"/v1/{S}/orders-sub:testIamPermissions",
        {"permissions": ["pubsub.subscriptions.consume", "pubsub.subscriptions.get"]},
        "subscriber",
        "test_iam_permissions",
        {
            "resource": f"{S}/orders-sub",
            "permissions": ["pubsub.subscriptions.consume", "pubsub.subscriptions.get"],
        },
    ),
    Twin(
        "TestIamPermissions-other-type",
        "POST",
        f"/v1/{S}/orders-sub:testIamPermissions",
        {"permissions": ["pubsub.topics.publish"]},
        "subscriber",
        "test_iam_permissions",
        {"resource": f"{S}/orders-sub", "permissions": ["pubsub.topics.publish"]},
        ok=False,
    ),
    Twin(
        "ModifyPushConfig",
        "POST",
        f"/v1/{S}/orders-sub:modifyPushConfig",
        {"pushConfig": {"pushEndpoint": "https://example.com/push", "noWrapper": {}}},
        "subscriber",
        "modify_push_config",
        {
            "subscription": f"{S}/orders-sub",
            "push_config": {"push_endpoint": "https://example.com/push", "no_wrapper": {}},
        },
    ),
    Twin(
        "ModifyPushConfig-ftp",
        "POST",
        f"/v1/{S}/orders-sub:modifyPushConfig",
        {"pushConfig": {"pushEndpoint": "ftp://example.com/push"}},
        "subscriber",
        "modify_push_config",
        {"subscription": f"{S}/orders-sub", "push_config": {"push_endpoint": "ftp://example.com/push"}},
        ok=False,
    ),
    Twin(
        "Seek-missing-snapshot",
        "POST",
        f"/v1/{S}/orders-sub:seek",
        {"snapshot": "projects/{P}/snapshots/gone"},
        "subscriber",
        "seek",
        {"subscription": f"{S}/orders-sub", "snapshot": "projects/{P}/snapshots/gone"},
        ok=False,
    ),
    Twin(
        "Seek",
        "POST",
        f"/v1/{S}/orders-sub:seek",
        {"time": "2020-01-01T00:00:00Z"},
        "subscriber",
        "seek",
        {"subscription": f"{S}/orders-sub", "time": {"seconds": 1577836800}},
    ),
    Twin(
        "CreateSnapshot",
        "PUT",
        "/v1/projects/{P}/snapshots/before-deploy",
        {"subscription": f"{S}/orders-sub", "labels": {"team": "a"}},
        "subscriber",
        "create_snapshot",
        {"name": "projects/{P}/snapshots/before-deploy", "subscription": f"{S}/orders-sub",
         "labels": {"team": "a"}},
    ),
    Twin(
        "GetSnapshot-missing",
        "GET",
        "/v1/projects/{P}/snapshots/gone",
        None,
        "subscriber",
        "get_snapshot",
        {"snapshot": "projects/{P}/snapshots/gone"},
        ok=False,
    ),
    Twin(
        "ListSnapshots",
        "GET",
        "/v1/projects/{P}/snapshots",
        None,
        "subscriber",
        "list_snapshots",
        {"project": "projects/{P}"},
    ),
    Twin(
        "UpdateSnapshot-missing",
        "PATCH",
        "/v1/projects/{P}/snapshots/gone",
        {"snapshot": {"labels": {"a": "b"}}, "updateMask": "labels"},
        "subscriber",
        "update_snapshot",
        {"snapshot": {"name": "projects/{P}/snapshots/gone", "labels": {"a": "b"}},
         "update_mask": {"paths": ["labels"]}},
        ok=False,
    ),
    Twin(
        "DeleteSnapshot-missing",
        "DELETE",
        "/v1/projects/{P}/snapshots/gone",
        None,
        "subscriber",
        "delete_snapshot",
        {"snapshot": "projects/{P}/snapshots/gone"},
        ok=False,
    ),
    # SchemaService
    Twin(
        "CreateSchema",
        "POST",
        "/v1/projects/{P}/schemas",
        {"type": "AVRO", "definition": AVSC},
        "schema",
        "create_schema",
        {"parent": "projects/{P}", "schema": {"type_": "AVRO", "definition": AVSC},
         "schema_id": "fresh"},
        query={"schemaId": "fresh"},
    ),
    Twin(
        "CreateSchema-exists",
        "POST",
        "/v1/projects/{P}/schemas",
        {"type": "AVRO", "definition": AVSC},
        "schema",
        "create_schema",
        {"parent": "projects/{P}", "schema": {"type_": "AVRO", "definition": AVSC},
         "schema_id": "state"},
        query={"schemaId": "state"},
        ok=False,
    ),
    Twin(
        "CreateSchema-bad-definition",
        "POST",
        "/v1/projects/{P}/schemas",
        {"type": "AVRO", "definition": "{"},
        "schema",
        "create_schema",
        {"parent": "projects/{P}", "schema": {"type_": "AVRO", "definition": "{"},
         "schema_id": "fresh"},
        query={"schemaId": "fresh"},
        ok=False,
    ),
    Twin(
        "GetSchema",
        "GET",
        f"/v1/{SC}/state",
        None,
        "schema",
        "get_schema",
        {"name": f"{SC}/state"},
    ),
    Twin(
        "GetSchema-basic",
        "GET",
        f"/v1/{SC}/state",
        None,
        "schema",
        "get_schema",
        {"name": f"{SC}/state", "view": "BASIC"},
        query={"view": "BASIC"},
    ),
    Twin(
        "GetSchema-missing",
        "GET",
        f"/v1/{SC}/missing",
        None,
        "schema",
        "get_schema",
        {"name": f"{SC}/missing"},
        ok=False,
    ),
    Twin(
        "ListSchemas",
        "GET",
        "/v1/projects/{P}/schemas",
        None,
        "schema",
        "list_schemas",
        {"parent": "projects/{P}", "view": "FULL"},
        query={"view": "FULL"},
    ),
    Twin(
        "ListSchemaRevisions",
        "GET",
        f"/v1/{SC}/state:listRevisions",
        None,
        "schema",
        "list_schema_revisions",
        {"name": f"{SC}/state"},
    ),
    Twin(
        "CommitSchema",
        "POST",
        f"/v1/{SC}/state:commit",
        {"schema": {"type": "AVRO", "definition": AVSC_V2}},
        "schema",
        "commit_schema",
        {"name": f"{SC}/state", "schema": {"type_": "AVRO", "definition": AVSC_V2}},
    ),
    Twin(
        "CommitSchema-incompatible",
        "POST",
        f"/v1/{SC}/state:commit",
        {"schema": {"type": "AVRO", "definition": AVSC_LONG}},
        "schema",
        "commit_schema",
        {"name": f"{SC}/state", "schema": {"type_": "AVRO", "definition": AVSC_LONG}},
        ok=False,
    ),
    Twin(
        "RollbackSchema-missing-revision",
        "POST",
        f"/v1/{SC}/state:rollback",
        {"revisionId": "deadbeef"},
        "schema",
        "rollback_schema",
        {"name": f"{SC}/state", "revision_id": "deadbeef"},
        ok=False,
    ),
    Twin(
        "DeleteSchemaRevision-missing",
        "DELETE",
        f"/v1/{SC}/state@deadbeef:deleteRevision",
        None,
        "schema",
        "delete_schema_revision",
        {"name": f"{SC}/state@deadbeef"},
        ok=False,
    ),
    Twin(
        "DeleteSchema",
        "DELETE",
        f"/v1/{SC}/state",
        None,
        "schema",
        "delete_schema",
        {"name": f"{SC}/state"},
    ),
    Twin(
        "ValidateSchema",
        "POST",
        "/v1/projects/{P}/schemas:validate",
        {"schema": {"type": "AVRO", "definition": AVSC}},
        "schema",
        "validate_schema",
        {"parent": "projects/{P}", "schema": {"type_": "AVRO", "definition": AVSC}},
    ),
    Twin(
        "ValidateMessage",
        "POST",
        "/v1/projects/{P}/schemas:validateMessage",
        {"name": f"{SC}/state", "message": "eyJuYW1lIjogIngifQ==", "encoding": "JSON"},
        "schema",
        "validate_message",
        {"parent": "projects/{P}", "name": f"{SC}/state", "message": b'{"name": "x"}',
         "encoding": "JSON"},
    ),
    Twin(
        "ValidateMessage-bad",
        "POST",
        "/v1/projects/{P}/schemas:validateMessage",
        {"name": f"{SC}/state", "message": "eyJuYW1lIjogMX0=", "encoding": "JSON"},
        "schema",
        "validate_message",
        {"parent": "projects/{P}", "name": f"{SC}/state", "message": b'{"name": 1}',
         "encoding": "JSON"},
        ok=False,
    ),
    # Monitoring
    Twin(
        "ListTimeSeries",
        "GET",
        "/v3/projects/{P}/timeSeries",
        None,
        "monitoring",
        "list_time_series",
        TS_REQUEST,
        query=TS_QUERY,
    ),
    Twin(
        "ListTimeSeries-OR",
        "GET",
        "/v3/projects/{P}/timeSeries",
        None,
        "monitoring",
        "list_time_series",
        {**TS_REQUEST, "filter": FILTER + ' OR project = "x"'},
        query={**TS_QUERY, "filter": FILTER + ' OR project = "x"'},
        ok=False,
    ),
]

VOLATILE = {
    "messageId", "publishTime", "ackId", "startTime", "endTime", "revisionId",
    "revisionCreateTime", "expireTime", "etag",
}


def _normal(value: Any, project: str) -> Any:
    """The answer with the project named "{P}" and per-call values (IDs, times) left out."""
    if isinstance(value, str):
        return re.sub(r"revision: [0-9a-f]{8}\b", "revision: R", value.replace(project, "{P}"))
    if isinstance(value, dict):
        return {
            k: (len(v) if k == "messageIds" else _normal(v, project))
            for k, v in value.items()
            if k not in VOLATILE
        }
    if isinstance(value, list):
        return [_normal(v, project) for v in value]
    return value


@pytest.fixture
def clients(
    publisher_client: Any, subscriber_client: Any, monitoring_client: Any, schema_client: Any
) -> dict[str, Any]:
    return {
        "publisher": publisher_client,
        "subscriber": subscriber_client,
        "monitoring": monitoring_client,
        "schema": schema_client,
    }


def _set_up(clients: dict[str, Any], project: str) -> None:
    """The same world in each project: a topic in us-east1 with a subscription and one
    message published from us-east1, and an Avro schema."""
    pub, sub = clients["publisher"], clients["subscriber"]
    clients["schema"].create_schema(
        parent=f"projects/{project}", schema={"type_": "AVRO", "definition": AVSC},
        schema_id="state",
    )
    topic = f"projects/{project}/topics/orders"
    pub.create_topic(
        request={
            "name": topic,
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1", "europe-west1"]},
        }
    )
    sub.create_subscription(name=f"projects/{project}/subscriptions/orders-sub", topic=topic)
    pub.publish(
        topic=topic, messages=[{"data": b"first"}], metadata=[(CLIENT_REGION_KEY, "us-east1")]
    )


def _grpc(clients: dict[str, Any], twin: Twin) -> tuple[str, Any]:
    """(status code name, answer as proto JSON or error details) through the GAPIC
    client's own transport (no retries, no paging)."""
    method = getattr(clients[twin.client].transport, twin.method)
    try:
        response = method(_request_of(twin, _sub(twin.request, GRPC_P)))
    except grpc.RpcError as err:
        return err.code().name, err.details()
    pb = type(response).pb(response) if hasattr(type(response), "pb") else response  # Empty
    return "OK", json_format.MessageToDict(pb)


def _request_of(twin: Twin, request: dict[str, Any]) -> Any:
    from google.cloud.monitoring_v3.types import ListTimeSeriesRequest
    from google.iam.v1 import iam_policy_pb2
    from google.pubsub_v1 import types as ps
    from google.pubsub_v1.types import schema as sc

    iam = {
        "get_iam_policy": iam_policy_pb2.GetIamPolicyRequest,
        "set_iam_policy": iam_policy_pb2.SetIamPolicyRequest,
        "test_iam_permissions": iam_policy_pb2.TestIamPermissionsRequest,
    }
    if twin.method in iam:  # plain protobuf classes
        return json_format.ParseDict(request, iam[twin.method]())
    names = {
        "create_topic": ps.Topic,
        "get_topic": ps.GetTopicRequest,
        "update_topic": ps.UpdateTopicRequest,
        "list_topics": ps.ListTopicsRequest,
        "list_topic_subscriptions": ps.ListTopicSubscriptionsRequest,
        "list_topic_snapshots": ps.ListTopicSnapshotsRequest,
        "publish": ps.PublishRequest,
        "detach_subscription": ps.DetachSubscriptionRequest,
        "delete_topic": ps.DeleteTopicRequest,
        "create_subscription": ps.Subscription,
        "get_subscription": ps.GetSubscriptionRequest,
        "update_subscription": ps.UpdateSubscriptionRequest,
        "list_subscriptions": ps.ListSubscriptionsRequest,
        "pull": ps.PullRequest,
        "acknowledge": ps.AcknowledgeRequest,
        "modify_ack_deadline": ps.ModifyAckDeadlineRequest,
        "delete_subscription": ps.DeleteSubscriptionRequest,
        "seek": ps.SeekRequest,
        "modify_push_config": ps.ModifyPushConfigRequest,
        "create_snapshot": ps.CreateSnapshotRequest,
        "get_snapshot": ps.GetSnapshotRequest,
        "list_snapshots": ps.ListSnapshotsRequest,
        "update_snapshot": ps.UpdateSnapshotRequest,
        "delete_snapshot": ps.DeleteSnapshotRequest,
        "list_time_series": ListTimeSeriesRequest,
        "create_schema": sc.CreateSchemaRequest,
        "get_schema": sc.GetSchemaRequest,
        "list_schemas": sc.ListSchemasRequest,
        "list_schema_revisions": sc.ListSchemaRevisionsRequest,
        "commit_schema": sc.CommitSchemaRequest,
        "rollback_schema": sc.RollbackSchemaRequest,
        "delete_schema_revision": sc.DeleteSchemaRevisionRequest,
        "delete_schema": sc.DeleteSchemaRequest,
        "validate_schema": sc.ValidateSchemaRequest,
        "validate_message": sc.ValidateMessageRequest,
    }
    return names[twin.method](request)


def _rest(address: str, twin: Twin) -> tuple[str, Any, int]:
    from urllib.parse import urlencode

    path = _sub(twin.path, REST_P)
    if twin.query:
        path += "?" + urlencode(_sub(twin.query, REST_P))
    answer = rest(address, twin.verb, path, _sub(twin.body, REST_P))
    if answer.status == 200:
        return "OK", answer.body, 200
    error = answer.body["error"]
    assert set(error) == {"code", "message", "status"}
    assert error["code"] == answer.status
    return error["status"], error["message"], answer.status


@pytest.mark.parametrize("twin", TWINS, ids=[t.id for t in TWINS])
def test_a_rest_request_and_its_grpc_twin_agree(
    local_server: Any, clients: dict[str, Any], twin: Twin
) -> None:
    _set_up(clients, REST_P)
    _set_up(clients, GRPC_P)
    local_server.counters.reset()
    rest_code, rest_answer, http_status = _rest(local_server.address, twin)
    grpc_code, grpc_answer = _grpc(clients, twin)
    assert (rest_code == "OK") is twin.ok, rest_answer
    assert http_status == HTTP[rest_code]
    assert rest_code == grpc_code, (rest_answer, grpc_answer)
    assert _normal(rest_answer, REST_P) == _normal(grpc_answer, GRPC_P)
    # Both went through the one dispatcher: counted as the same RPC, once per project.
    method = twin.id.split("-", 1)[0]
    if method in local_server.method_names():
        assert local_server.counters.get(method) == 2


def test_every_supported_method_has_a_twin(local_server: Any) -> None:
    """Every REST route to a Pub/Sub or Monitoring method the server serves has a
    twin (Org Policy's and Resource Manager's routes are exercised through Google's
    own REST clients: tests/localserver/test_rest_clients.py), and every Pub/Sub and
    Monitoring route leads to a method it serves."""
    from reconciler.localserver.transport import rest_routes as r

    by_clients = {
        r.ORGPOLICY, r.PROJECTS, r.FOLDERS, r.ORGANIZATIONS, r.OPERATIONS, r.TAG_BINDINGS
    }
    routed = {method for _, _, service, method, _ in r.ROUTES if service not in by_clients}
    served = routed & set(local_server.method_names())
    # REST only, no gRPC twin (no public proto): tests/localserver/test_transform_rpcs.py
    rest_only = {"ValidateMessageTransform", "TestMessageTransforms"}
    assert {t.id.split("-", 1)[0] for t in TWINS} >= served - rest_only
    assert routed == served and len(served) >= 27


@pytest.mark.parametrize("code", [c for c in HTTP if c != "OK"])
def test_each_status_code_maps_to_its_http_status(
    local_server: Any, publisher_client: Any, code: str
) -> None:
    topic = f"projects/{REST_P}/topics/orders"
    local_server.faults.add("GetTopic", error=code, error_next=2, message=f"injected {code}")
    answer = rest(local_server.address, "GET", f"/v1/{topic}")
    assert answer.status == HTTP[code]
    assert answer.body == {
        "error": {"code": HTTP[code], "message": f"injected {code}", "status": code}
    }
    with pytest.raises(grpc.RpcError) as raised:
        publisher_client.transport.get_topic({"topic": topic})
    assert raised.value.code().name == code
    assert raised.value.details() == f"injected {code}"


def test_the_client_region_header_applies_to_rest(local_server: Any, publisher_client: Any) -> None:
    topic = f"projects/{REST_P}/topics/orders"
    publisher_client.create_topic(
        request={
            "name": topic,
            "message_storage_policy": {
                "allowed_persistence_regions": ["europe-west1"],
                "enforce_in_transit": True,
            },
        }
    )
    refused = rest(
        local_server.address,
        "POST",
        f"/v1/{topic}:publish",
        {"messages": [{"data": "eA=="}]},
        headers={CLIENT_REGION_KEY: "us-east1"},
    )
    assert refused.status == 400 and refused.body["error"]["status"] == "FAILED_PRECONDITION"
    assert "received in region us-east1" in refused.body["error"]["message"]
    ok = rest(
        local_server.address,
        "POST",
        f"/v1/{topic}:publish",
        {"messages": [{"data": "eA=="}]},
        headers={CLIENT_REGION_KEY: "europe-west1"},
    )
    assert ok.status == 200 and ok.body == {"messageIds": ["1"]}


def test_a_rest_publish_is_recorded_as_its_grpc_twin_is(
    local_server: Any, publisher_client: Any
) -> None:
    topic = f"projects/{REST_P}/topics/orders"
    publisher_client.create_topic(name=topic)
    answer = rest(
        local_server.address, "POST", f"/v1/{topic}:publish", {"messages": [{"data": "eA=="}]}
    )
    assert answer.status == 200
    [outcome] = local_server.outcomes.recent()
    assert (outcome.topic, outcome.code, outcome.messages) == (topic, "OK", 1)


def test_a_rest_publish_whose_client_left_is_recorded_cancelled(
    local_server: Any, publisher_client: Any
) -> None:
    import socket

    topic = f"projects/{REST_P}/topics/orders"
    publisher_client.create_topic(name=topic)
    hold = local_server.faults.hold("Publish")
    host, port = local_server.address.rsplit(":", 1)
    body = b'{"messages": [{"data": "eA=="}]}'
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST /v1/{topic}:publish HTTP/1.1\r\nHost: x\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        [held] = hold.wait_arrived(1)
    held.release()  # the client is gone by now
    end = time.monotonic() + 30
    while not local_server.outcomes.recent():
        assert time.monotonic() < end, "the publish was never recorded"
        time.sleep(0.01)
    assert [o.code for o in local_server.outcomes.recent()] == ["CANCELLED"]
