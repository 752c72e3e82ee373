"""`projects.validateMessageTransform` and `projects.testMessageTransforms`, the calls
behind `gcloud pubsub message-transforms validate|test` (REST only: googleapis'
pubsub.proto has no such RPC, so the gRPC face does not serve them).

Validate: the transform's rules (`reconciler.transformrules`, INVALID_ARGUMENT naming
the field), then, for a JavaScript UDF, that the code compiles and defines the
function (only with the optional engine: without it FAILED_PRECONDITION says the
server does not run UDFs). Test: the given transforms, or the topic's or the
subscription's (NOT_FOUND if it does not exist), run on the message
(`transform_run`); a UDF without the engine refuses the call as Validate does,
rather than report a failure the service would not have.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_project, parse_topic
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import (
    ServiceError,
    grpc_status_from_name,
    invalid,
    not_found,
)
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.pubsub.subscriber_service import parse_subscription
from reconciler.localserver.pubsub.transform_run import (
    NO_ENGINE,
    TransformFailed,
    check_udf,
    engine,
    run_transforms,
)
from reconciler.transformrules import one_transform_problems, transform_problems


class TransformService:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def validate_message_transform(self, request: Any, call: CallInfo) -> Any:
        parse_project(request.project)
        transform = request.message_transform
        problems = one_transform_problems(json_format.MessageToDict(transform))
        if problems:
            raise invalid(problems[0])
        if transform.WhichOneof("transform") == "javascript_udf":
            try:
                check_udf(transform.javascript_udf)
            except TransformFailed as failed:
                raise ServiceError(grpc_status_from_name(failed.code), str(failed)) from None
        return protos.ValidateMessageTransformResponse()

    def test_message_transforms(self, request: Any, call: CallInfo) -> Any:
        parse_project(request.project)
        transforms = self._transforms(request)
        if engine() is None and any(
            t.WhichOneof("transform") == "javascript_udf" and not t.disabled for t in transforms
        ):
            raise ServiceError(grpc_status_from_name("FAILED_PRECONDITION"), NO_ENGINE)
        response = protos.TestMessageTransformsResponse()
        for step in run_transforms(transforms, request.message):
            out = response.transformed_messages.add()
            if step.error is not None:
                out.failed_message.error.code = grpc_status_from_name(step.error.code).value[0]
                out.failed_message.error.message = str(step.error)
            elif step.filtered:
                out.filtered_message.SetInParent()
            else:
                out.transformed_message.CopyFrom(step.message)
        return response

    def _transforms(self, request: Any) -> Any:
        """The transforms the request names: given, or the topic's or the
        subscription's."""
        if request.topic:
            parse_topic(request.topic)
            topic = self.state.get_topic(request.topic)
            if topic is None:
                raise not_found("Topic not found")
            return topic.message_transforms
        if request.subscription:
            parse_subscription(request.subscription)
            sub = self.state.subs.get(request.subscription)
            if sub is None:
                raise not_found("Subscription does not exist")
            return sub.message_transforms
        given = request.message_transforms.message_transforms
        problems = transform_problems([json_format.MessageToDict(t) for t in given])
        if problems:
            raise invalid(problems[0])
        return given

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("ValidateMessageTransform", self.validate_message_transform,
                p.ValidateMessageTransformRequest, p.ValidateMessageTransformResponse,
                lambda r: r.project, rest_only=True),
            Rpc("TestMessageTransforms", self.test_message_transforms,
                p.TestMessageTransformsRequest, p.TestMessageTransformsResponse,
                lambda r: r.topic or r.subscription or r.project, rest_only=True),
        ]
