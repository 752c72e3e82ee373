"""The REST face: Pub/Sub v1 (and Monitoring v3 `timeSeries.list`, and Monitoring v1's
PromQL instant query: `promql_face`) over HTTP/1.1 JSON, as gcloud and
Terraform's google provider speak it.

One implementation behind both faces: a REST call is turned into the very request
message its gRPC twin sends (path variables, the JSON body through the proto3 JSON
mapping of `google.protobuf.json_format`, query parameters bound to fields) and
goes through `Dispatcher.call` with the same handler, checks, counters and faults.
Errors come back in the REST shape, `{"error": {"code", "message", "status"}}`,
with the HTTP status that google.rpc maps each code to.

The routes are the `google.api.http` bindings of google/pubsub/v1/pubsub.proto;
those of methods this server does not serve answer 501 UNIMPLEMENTED, as their
gRPC twins do.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import grpc
from google.protobuf import any_pb2, json_format
from google.protobuf.descriptor import FieldDescriptor

from reconciler.localserver.api.rpc import CallInfo, Rpc, unserved
from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.identity import CLIENT_REGION_KEY
from reconciler.localserver.transport.dispatch import Dispatcher
from reconciler.localserver.transport.http1 import Request, Response, error_body
from reconciler.localserver.transport.promql_face import PATH as PROMQL_PATH
from reconciler.localserver.transport.promql_face import PromQLFace

log = logging.getLogger(__name__)

# google.rpc.Code -> HTTP status (google/rpc/code.proto).
HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}

# Standard query parameters of Google APIs, accepted and ignored (`alt` must be json).
SYSTEM_PARAMETERS = frozenset(
    {
        "alt",
        "prettyPrint",
        "fields",
        "key",
        "$.xgafv",
        "quotaUser",
        "callback",
        "upload_protocol",
        "uploadType",
        "access_token",
        "oauth_token",
        "userIp",
    }
)

_P = "google.pubsub.v1.Publisher"
_S = "google.pubsub.v1.Subscriber"
_M = "google.monitoring.v3.MetricService"
_SC = "google.pubsub.v1.SchemaService"
_TOPIC = "projects/*/topics/*"
_SUB = "projects/*/subscriptions/*"
_SNAP = "projects/*/snapshots/*"
_SCHEMA = "projects/*/schemas/*"

# (HTTP method, path template, service, RPC method, body: "*" (the whole request),
# a field's name (the body is that field) or "" (none))
ROUTES: tuple[tuple[str, str, str, str, str], ...] = (
    ("PUT", f"/v1/{{name={_TOPIC}}}", _P, "CreateTopic", "*"),
    ("PATCH", f"/v1/{{topic.name={_TOPIC}}}", _P, "UpdateTopic", "*"),
    ("POST", f"/v1/{{topic={_TOPIC}}}:publish", _P, "Publish", "*"),
    ("GET", f"/v1/{{topic={_TOPIC}}}", _P, "GetTopic", ""),
    ("GET", "/v1/{project=projects/*}/topics", _P, "ListTopics", ""),
    ("GET", f"/v1/{{topic={_TOPIC}}}/subscriptions", _P, "ListTopicSubscriptions", ""),
    ("GET", f"/v1/{{topic={_TOPIC}}}/snapshots", _P, "ListTopicSnapshots", ""),
    ("DELETE", f"/v1/{{topic={_TOPIC}}}", _P, "DeleteTopic", ""),
    ("POST", f"/v1/{{subscription={_SUB}}}:detach", _P, "DetachSubscription", ""),
    ("PUT", f"/v1/{{name={_SUB}}}", _S, "CreateSubscription", "*"),
    ("GET", f"/v1/{{subscription={_SUB}}}", _S, "GetSubscription", ""),
    ("PATCH", f"/v1/{{subscription.name={_SUB}}}", _S, "UpdateSubscription", "*"),
    ("GET", "/v1/{project=projects/*}/subscriptions", _S, "ListSubscriptions", ""),
    ("DELETE", f"/v1/{{subscription={_SUB}}}", _S, "DeleteSubscription", ""),
    ("POST", f"/v1/{{subscription={_SUB}}}:modifyAckDeadline", _S, "ModifyAckDeadline", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:acknowledge", _S, "Acknowledge", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:pull", _S, "Pull", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:modifyPushConfig", _S, "ModifyPushConfig", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:seek", _S, "Seek", "*"),
    ("GET", f"/v1/{{snapshot={_SNAP}}}", _S, "GetSnapshot", ""),
    ("GET", "/v1/{project=projects/*}/snapshots", _S, "ListSnapshots", ""),
    ("PUT", f"/v1/{{name={_SNAP}}}", _S, "CreateSnapshot", "*"),
    ("PATCH", f"/v1/{{snapshot.name={_SNAP}}}", _S, "UpdateSnapshot", "*"),
    ("DELETE", f"/v1/{{snapshot={_SNAP}}}", _S, "DeleteSnapshot", ""),
    ("POST", "/v1/{parent=projects/*}/schemas", _SC, "CreateSchema", "schema"),
    ("GET", f"/v1/{{name={_SCHEMA}}}", _SC, "GetSchema", ""),
    ("GET", "/v1/{parent=projects/*}/schemas", _SC, "ListSchemas", ""),
    ("GET", f"/v1/{{name={_SCHEMA}}}:listRevisions", _SC, "ListSchemaRevisions", ""),
    ("POST", f"/v1/{{name={_SCHEMA}}}:commit", _SC, "CommitSchema", "*"),
    ("POST", f"/v1/{{name={_SCHEMA}}}:rollback", _SC, "RollbackSchema", "*"),
    ("DELETE", f"/v1/{{name={_SCHEMA}}}:deleteRevision", _SC, "DeleteSchemaRevision", ""),
    ("DELETE", f"/v1/{{name={_SCHEMA}}}", _SC, "DeleteSchema", ""),
    ("POST", "/v1/{parent=projects/*}/schemas:validate", _SC, "ValidateSchema", "*"),
    ("POST", "/v1/{parent=projects/*}/schemas:validateMessage", _SC, "ValidateMessage", "*"),
    ("GET", "/v3/{name=projects/*}/timeSeries", _M, "ListTimeSeries", ""),
)
# Also part of the REST surface, not served: IAM on topics, subscriptions, snapshots
# and schemas.
_UNSERVED_PATTERNS = (
    (
        re.compile(
            r"^/v1/projects/[^/]+/(topics|subscriptions|snapshots|schemas)/[^/:]+:"
            r"(getIamPolicy|setIamPolicy|testIamPermissions)$"
        ),
        "google.iam.v1.IAMPolicy",
    ),
)

_VARIABLE = re.compile(r"\{([a-z_.]+)=([^}]+)\}")


@dataclass(frozen=True)
class Route:
    http_method: str
    pattern: re.Pattern[str]
    fields: tuple[str, ...]  # the request field each path variable binds to
    service: str
    method: str
    body: str

    @property
    def full_name(self) -> str:
        return f"{self.service}.{self.method}"


def _compile(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    fields = []
    out = "^"
    last = 0
    for match in _VARIABLE.finditer(template):
        out += re.escape(template[last : match.start()])
        fields.append(match.group(1))
        segments = match.group(2).split("/")
        out += "(" + "/".join(r"[^/:]+" if s == "*" else re.escape(s) for s in segments) + ")"
        last = match.end()
    out += re.escape(template[last:]) + "$"
    return re.compile(out), tuple(fields)


def routes() -> list[Route]:
    out = []
    for verb, template, service, method, body in ROUTES:
        pattern, fields = _compile(template)
        out.append(Route(verb, pattern, fields, service, method, body))
    return out


class RestFace:
    """Turns HTTP/1.1 requests into `Dispatcher.call`s of the gRPC face's RPCs.
    `rpcs` maps "google.pubsub.v1.Publisher.CreateTopic" to its `Rpc`;
    `client_region` gives the region of a request that declares none; `promql` is
    the PromQL query's `Rpc` (served on its own path by `promql_face`)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        rpcs: dict[str, Rpc],
        client_region: Callable[[], str | None],
        promql: Rpc,
    ) -> None:
        self.dispatcher = dispatcher
        self.rpcs = rpcs
        self.client_region = client_region
        self.routes = routes()
        self.promql = PromQLFace(dispatcher, promql)

    def handle(self, request: Request) -> Response:
        query_path = PROMQL_PATH.match(request.path)
        if query_path is not None:  # Monitoring's PromQL API
            return self.promql.handle(request, query_path)
        try:
            route, values = self._route(request.method, request.path)
            rpc = self.rpcs.get(route.full_name)
            if rpc is None:
                raise unserved(route.full_name)
            message = self._message(rpc, route, values, request)
            region = request.headers.get(CLIENT_REGION_KEY) or self.client_region()
            raw = message.SerializeToString() if rpc.raw else b""
            gone = request.gone
            call = CallInfo(region, raw, gone=lambda: "CANCELLED" if gone() else None)
            response = self.dispatcher.call(rpc, message, call)
            body = json_format.MessageToJson(response, indent=2).encode("utf-8")
            return Response(200, body)
        except ServiceError as err:
            status = HTTP_STATUS.get(err.code, 500)
            details = [_detail_json(d) for d in err.details]
            return Response(status, error_body(status, err.code.name, err.message, details))
        except Exception as exc:  # never a dropped connection for a bug
            log.exception("local server: REST %s %s failed", request.method, request.path)
            return Response(500, error_body(500, "INTERNAL", f"local server bug: {exc!r}"))

    def _route(self, method: str, path: str) -> tuple[Route, tuple[str, ...]]:
        allowed = []
        for route in self.routes:
            match = route.pattern.match(path)
            if match is None:
                continue
            if route.http_method == method:
                return route, tuple(unquote(v) for v in match.groups())
            allowed.append(route.http_method)
        for pattern, service in _UNSERVED_PATTERNS:
            if pattern.match(path):
                raise ServiceError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f"{service} is not served by the local server ({method} {path}).",
                )
        if allowed:
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND,
                f"{method} is not a method of {path} (it takes {', '.join(sorted(allowed))}).",
            )
        raise ServiceError(
            grpc.StatusCode.NOT_FOUND,
            f"The requested URL {path} was not found on this server (REST paths: "
            "/v1/projects/P/topics..., /v1/projects/P/subscriptions..., "
            "/v1/projects/P/schemas..., "
            "/v3/projects/P/timeSeries).",
        )

    @staticmethod
    def _message(rpc: Rpc, route: Route, values: tuple[str, ...], request: Request) -> Any:
        message = rpc.request_type()
        if route.body and request.body.strip():
            target = message if route.body == "*" else getattr(message, route.body)
            try:
                json_format.Parse(request.body, target)
            except json_format.ParseError as exc:
                raise invalid(f"Invalid JSON payload received. {exc}") from None
        elif request.body.strip() and request.method in ("GET", "DELETE"):
            raise invalid(f"{request.method} {request.path} takes no request body.")
        body_fields = () if route.body in ("*", "") else (route.body,)
        bind_query(message, request.query, route.fields + body_fields)
        for field, value in zip(route.fields, values, strict=True):
            _set_path(message, field, value)
        return message


def _detail_json(detail: Any) -> dict[str, Any]:
    """A status detail as the REST error's "details" hold it ({"@type": ..., ...})."""
    packed = any_pb2.Any()
    packed.Pack(detail)
    return dict(json_format.MessageToDict(packed))


def _set_path(message: Any, path: str, value: str) -> None:
    *parents, leaf = path.split(".")
    for name in parents:
        message = getattr(message, name)
    setattr(message, leaf, value)


# Well-known types whose JSON form is a string (a query parameter can carry them).
_STRING_MESSAGES = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
    }
)


def bind_query(message: Any, params: Iterable[tuple[str, str]], bound: Iterable[str]) -> None:
    """Set request fields from query parameters ("pageSize=10",
    "interval.endTime=...", a repeated field once per value), as Google's REST
    transcoding does; INVALID_ARGUMENT for a name that is no field."""
    taken = set(bound)
    tree: dict[str, Any] = {}
    for name, value in params:
        if name in SYSTEM_PARAMETERS:
            if name == "alt" and value not in ("json", ""):
                raise invalid(f"alt={value} is not supported here: the local server answers JSON.")
            continue
        descriptor = message.DESCRIPTOR
        node = tree
        parts = name.split(".")
        for i, part in enumerate(parts):
            field = descriptor.fields_by_camelcase_name.get(part) or descriptor.fields_by_name.get(
                part
            )
            last = i == len(parts) - 1
            nested = field is not None and field.message_type is not None
            leaf_ok = field is not None and (
                not nested or field.message_type.full_name in _STRING_MESSAGES
            )
            if (
                field is None
                or ".".join(parts[: i + 1]) in taken
                or (last and not leaf_ok)
                or (not last and (not nested or _repeated(field)))
            ):
                raise invalid(
                    f'Invalid JSON payload received. Unknown name "{name}": Cannot bind query '
                    "parameter."
                )
            if last:
                scalar = _scalar(field, name, value)
                if _repeated(field):
                    node.setdefault(field.json_name, []).append(scalar)
                else:
                    node[field.json_name] = scalar
            else:
                node = node.setdefault(field.json_name, {})
                descriptor = field.message_type
    if tree:
        try:
            json_format.ParseDict(tree, message)
        except json_format.ParseError as exc:
            raise invalid(f"Invalid query parameter: {exc}") from None


def _repeated(field: FieldDescriptor) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf >= 5.28; `label` went in 7
        return bool(field.is_repeated)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _scalar(field: FieldDescriptor, name: str, value: str) -> Any:
    if field.type == FieldDescriptor.TYPE_BOOL:
        if value not in ("true", "false"):
            raise invalid(f"Invalid value for {name}: {value!r} (true or false)")
        return value == "true"
    return value
