"""The raw protobuf classes behind the proto-plus wrappers of the client libraries.

No grpcio-tools here: the generated `_pb2` modules are not shipped, but every proto-plus
type exposes its protobuf class through `.pb()`, which is all a server needs.
"""

from __future__ import annotations

import importlib
from typing import Any

from google.cloud.orgpolicy_v2.types import orgpolicy as _op
from google.iam.v1 import iam_policy_pb2, policy_pb2
from google.longrunning import operations_pb2
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    empty_pb2,
    message_factory,
    timestamp_pb2,
)
from google.pubsub_v1.types import pubsub as _ps
from google.pubsub_v1.types import schema as _sc
from google.rpc import error_details_pb2, status_pb2

# Typed as Any: the classes are built at run time from descriptors (no stubs).
Topic: Any = _ps.Topic.pb()
MessageStoragePolicy: Any = _ps.MessageStoragePolicy.pb()
PubsubMessage: Any = _ps.PubsubMessage.pb()
GetTopicRequest: Any = _ps.GetTopicRequest.pb()
UpdateTopicRequest: Any = _ps.UpdateTopicRequest.pb()
ListTopicsRequest: Any = _ps.ListTopicsRequest.pb()
ListTopicsResponse: Any = _ps.ListTopicsResponse.pb()
DeleteTopicRequest: Any = _ps.DeleteTopicRequest.pb()
PublishRequest: Any = _ps.PublishRequest.pb()
PublishResponse: Any = _ps.PublishResponse.pb()
PubsubClientTelemetry: Any = _ps.PubsubClientTelemetry.pb()
ListTopicSubscriptionsRequest: Any = _ps.ListTopicSubscriptionsRequest.pb()
ListTopicSubscriptionsResponse: Any = _ps.ListTopicSubscriptionsResponse.pb()
DetachSubscriptionRequest: Any = _ps.DetachSubscriptionRequest.pb()
DetachSubscriptionResponse: Any = _ps.DetachSubscriptionResponse.pb()
ListTopicSnapshotsRequest: Any = _ps.ListTopicSnapshotsRequest.pb()
ListTopicSnapshotsResponse: Any = _ps.ListTopicSnapshotsResponse.pb()

Subscription: Any = _ps.Subscription.pb()
BigQueryConfig: Any = _ps.BigQueryConfig.pb()
CloudStorageConfig: Any = _ps.CloudStorageConfig.pb()
GetSubscriptionRequest: Any = _ps.GetSubscriptionRequest.pb()
UpdateSubscriptionRequest: Any = _ps.UpdateSubscriptionRequest.pb()
ListSubscriptionsRequest: Any = _ps.ListSubscriptionsRequest.pb()
ListSubscriptionsResponse: Any = _ps.ListSubscriptionsResponse.pb()
DeleteSubscriptionRequest: Any = _ps.DeleteSubscriptionRequest.pb()
PullRequest: Any = _ps.PullRequest.pb()
PullResponse: Any = _ps.PullResponse.pb()
ReceivedMessage: Any = _ps.ReceivedMessage.pb()
AcknowledgeRequest: Any = _ps.AcknowledgeRequest.pb()
ModifyAckDeadlineRequest: Any = _ps.ModifyAckDeadlineRequest.pb()
ModifyPushConfigRequest: Any = _ps.ModifyPushConfigRequest.pb()
PushConfig: Any = _ps.PushConfig.pb()
StreamingPullRequest: Any = _ps.StreamingPullRequest.pb()
StreamingPullResponse: Any = _ps.StreamingPullResponse.pb()
Snapshot: Any = _ps.Snapshot.pb()
CreateSnapshotRequest: Any = _ps.CreateSnapshotRequest.pb()
GetSnapshotRequest: Any = _ps.GetSnapshotRequest.pb()
UpdateSnapshotRequest: Any = _ps.UpdateSnapshotRequest.pb()
ListSnapshotsRequest: Any = _ps.ListSnapshotsRequest.pb()
ListSnapshotsResponse: Any = _ps.ListSnapshotsResponse.pb()
DeleteSnapshotRequest: Any = _ps.DeleteSnapshotRequest.pb()
SeekRequest: Any = _ps.SeekRequest.pb()
SeekResponse: Any = _ps.SeekResponse.pb()

Schema: Any = _sc.Schema.pb()
CreateSchemaRequest: Any = _sc.CreateSchemaRequest.pb()
GetSchemaRequest: Any = _sc.GetSchemaRequest.pb()
ListSchemasRequest: Any = _sc.ListSchemasRequest.pb()
ListSchemasResponse: Any = _sc.ListSchemasResponse.pb()
ListSchemaRevisionsRequest: Any = _sc.ListSchemaRevisionsRequest.pb()
ListSchemaRevisionsResponse: Any = _sc.ListSchemaRevisionsResponse.pb()
CommitSchemaRequest: Any = _sc.CommitSchemaRequest.pb()
RollbackSchemaRequest: Any = _sc.RollbackSchemaRequest.pb()
DeleteSchemaRevisionRequest: Any = _sc.DeleteSchemaRevisionRequest.pb()
DeleteSchemaRequest: Any = _sc.DeleteSchemaRequest.pb()
ValidateSchemaRequest: Any = _sc.ValidateSchemaRequest.pb()
ValidateSchemaResponse: Any = _sc.ValidateSchemaResponse.pb()
ValidateMessageRequest: Any = _sc.ValidateMessageRequest.pb()
ValidateMessageResponse: Any = _sc.ValidateMessageResponse.pb()

ErrorInfo: Any = error_details_pb2.ErrorInfo
Status: Any = status_pb2.Status

Policy: Any = _op.Policy.pb()
GetPolicyRequest: Any = _op.GetPolicyRequest.pb()
GetEffectivePolicyRequest: Any = _op.GetEffectivePolicyRequest.pb()
ListPoliciesRequest: Any = _op.ListPoliciesRequest.pb()
ListPoliciesResponse: Any = _op.ListPoliciesResponse.pb()
CreatePolicyRequest: Any = _op.CreatePolicyRequest.pb()
UpdatePolicyRequest: Any = _op.UpdatePolicyRequest.pb()
DeletePolicyRequest: Any = _op.DeletePolicyRequest.pb()

# google.iam.v1 (the IAM mixin of the Pub/Sub services): plain protobuf classes.
IamPolicy: Any = policy_pb2.Policy
GetIamPolicyRequest: Any = iam_policy_pb2.GetIamPolicyRequest
SetIamPolicyRequest: Any = iam_policy_pb2.SetIamPolicyRequest
TestIamPermissionsRequest: Any = iam_policy_pb2.TestIamPermissionsRequest
TestIamPermissionsResponse: Any = iam_policy_pb2.TestIamPermissionsResponse

Empty: Any = empty_pb2.Empty
Timestamp: Any = timestamp_pb2.Timestamp


def is_repeated(field: Any) -> bool:
    """Whether a field descriptor is repeated (maps included), whatever the protobuf
    version."""
    if hasattr(field, "is_repeated"):  # protobuf >= 5.28; `label` went in 7
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _wire_publish_request() -> Any:
    """PublishRequest as it travels, its messages left serialized (`repeated bytes`
    has the wire format of `repeated PubsubMessage`): the Publish hot path parses a
    request once, into this, checks the messages from their bytes (`pubsub.limits`) and
    stores them as they came (`pubsub.backlog.Batch`), parsing them only when read."""
    file = descriptor_pb2.FileDescriptorProto(
        name="reconcile_wire_publish.proto", package="reconcile.wire", syntax="proto3"
    )
    request = file.message_type.add(name="PublishRequest")
    request.field.add(name="topic", number=1, type=9, label=1)  # string
    request.field.add(name="messages", number=2, type=12, label=3)  # repeated bytes
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("reconcile.wire.PublishRequest")
    )


WirePublishRequest: Any = _wire_publish_request()


def _transform_rpc_messages() -> dict[str, Any]:
    """The requests and responses of `projects.validateMessageTransform` and
    `projects.testMessageTransforms`: public only as REST (gcloud's generated client
    of Pub/Sub v1: `ValidateMessageTransformRequest {messageTransform}`,
    `TestMessageTransformsRequest {message, messageTransforms {messageTransforms},
    topic, subscription}`, `TestMessageTransformsResponse {transformedMessages}`,
    `TransformedMessage {transformedMessage | filteredMessage | failedMessage
    {error}}`); googleapis' pubsub.proto has no such RPC, so no gRPC client can call
    them and their field numbers here are this server's own (JSON uses the names)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="reconcile/pubsub_transform_rpcs.proto",
        package="reconcile.transforms",
        syntax="proto3",
        dependency=[_ps.Topic.pb().DESCRIPTOR.file.name, status_pb2.DESCRIPTOR.name],
    )
    message, string, repeated, optional = 11, 9, 3, 1

    def add(name: str, *fields: tuple[str, int, str, int]) -> None:
        out = file.message_type.add(name=name)
        for number, (field, kind, type_name, label) in enumerate(fields, start=1):
            added = out.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name

    pubsub = ".google.pubsub.v1."
    own = ".reconcile.transforms."
    add("ValidateMessageTransformRequest",
        ("project", string, "", optional),
        ("message_transform", message, pubsub + "MessageTransform", optional))
    add("ValidateMessageTransformResponse")
    add("MessageTransforms",
        ("message_transforms", message, pubsub + "MessageTransform", repeated))
    add("TestMessageTransformsRequest",
        ("project", string, "", optional),
        ("message", message, pubsub + "PubsubMessage", optional),
        ("message_transforms", message, own + "MessageTransforms", optional),
        ("topic", string, "", optional),
        ("subscription", string, "", optional))
    add("FailedMessage", ("error", message, ".google.rpc.Status", optional))
    add("FilteredMessage")
    add("TransformedMessage",
        ("failed_message", message, own + "FailedMessage", optional),
        ("filtered_message", message, own + "FilteredMessage", optional),
        ("transformed_message", message, pubsub + "PubsubMessage", optional))
    add("TestMessageTransformsResponse",
        ("transformed_messages", message, own + "TransformedMessage", repeated))
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)
    return {
        m.name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"reconcile.transforms.{m.name}")
        )
        for m in file.message_type
    }


_TRANSFORM_RPCS = _transform_rpc_messages()
MessageTransform: Any = _ps.MessageTransform.pb()
ValidateMessageTransformRequest: Any = _TRANSFORM_RPCS["ValidateMessageTransformRequest"]
ValidateMessageTransformResponse: Any = _TRANSFORM_RPCS["ValidateMessageTransformResponse"]
TestMessageTransformsRequest: Any = _TRANSFORM_RPCS["TestMessageTransformsRequest"]
TestMessageTransformsResponse: Any = _TRANSFORM_RPCS["TestMessageTransformsResponse"]
TransformedMessage: Any = _TRANSFORM_RPCS["TransformedMessage"]


class LazyMessage:
    """A protobuf message class imported on first use: the Monitoring types are slow
    to import, which a server never asked for metrics (every `--local` run) should
    not pay. Stands in for the class where `Rpc` needs one."""

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name
        self._cls: Any = None

    def resolve(self) -> Any:
        if self._cls is None:
            self._cls = getattr(importlib.import_module(self._module), self._name).pb()
        return self._cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def FromString(self, data: bytes) -> Any:
        return self.resolve().FromString(data)

    @staticmethod
    def SerializeToString(message: Any) -> bytes:
        return bytes(message.SerializeToString())


_MONITORING = "google.cloud.monitoring_v3.types.metric_service"
ListTimeSeriesRequest = LazyMessage(_MONITORING, "ListTimeSeriesRequest")
ListTimeSeriesResponse = LazyMessage(_MONITORING, "ListTimeSeriesResponse")

# Resource Manager v3: loaded when a hierarchy call arrives or a stored project or
# folder is read back (the client library's import costs every server start otherwise).
_PROJECTS = "google.cloud.resourcemanager_v3.types.projects"
_FOLDERS = "google.cloud.resourcemanager_v3.types.folders"
_ORGANIZATIONS = "google.cloud.resourcemanager_v3.types.organizations"
Project = LazyMessage(_PROJECTS, "Project")
GetProjectRequest = LazyMessage(_PROJECTS, "GetProjectRequest")
ListProjectsRequest = LazyMessage(_PROJECTS, "ListProjectsRequest")
ListProjectsResponse = LazyMessage(_PROJECTS, "ListProjectsResponse")
SearchProjectsRequest = LazyMessage(_PROJECTS, "SearchProjectsRequest")
SearchProjectsResponse = LazyMessage(_PROJECTS, "SearchProjectsResponse")
CreateProjectRequest = LazyMessage(_PROJECTS, "CreateProjectRequest")
CreateProjectMetadata = LazyMessage(_PROJECTS, "CreateProjectMetadata")
MoveProjectRequest = LazyMessage(_PROJECTS, "MoveProjectRequest")
MoveProjectMetadata = LazyMessage(_PROJECTS, "MoveProjectMetadata")
Folder = LazyMessage(_FOLDERS, "Folder")
GetFolderRequest = LazyMessage(_FOLDERS, "GetFolderRequest")
ListFoldersRequest = LazyMessage(_FOLDERS, "ListFoldersRequest")
ListFoldersResponse = LazyMessage(_FOLDERS, "ListFoldersResponse")
SearchFoldersRequest = LazyMessage(_FOLDERS, "SearchFoldersRequest")
SearchFoldersResponse = LazyMessage(_FOLDERS, "SearchFoldersResponse")
CreateFolderRequest = LazyMessage(_FOLDERS, "CreateFolderRequest")
CreateFolderMetadata = LazyMessage(_FOLDERS, "CreateFolderMetadata")
Organization = LazyMessage(_ORGANIZATIONS, "Organization")
GetOrganizationRequest = LazyMessage(_ORGANIZATIONS, "GetOrganizationRequest")
SearchOrganizationsRequest = LazyMessage(_ORGANIZATIONS, "SearchOrganizationsRequest")
SearchOrganizationsResponse = LazyMessage(_ORGANIZATIONS, "SearchOrganizationsResponse")

_TAG_BINDINGS = "google.cloud.resourcemanager_v3.types.tag_bindings"
TagBinding = LazyMessage(_TAG_BINDINGS, "TagBinding")
ListTagBindingsRequest = LazyMessage(_TAG_BINDINGS, "ListTagBindingsRequest")
ListTagBindingsResponse = LazyMessage(_TAG_BINDINGS, "ListTagBindingsResponse")

# google.longrunning (CreateProject, CreateFolder and MoveProject answer Operations).
Operation: Any = operations_pb2.Operation
GetOperationRequest: Any = operations_pb2.GetOperationRequest
