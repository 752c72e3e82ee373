"""The REST face: Pub/Sub v1 with its IAM mixin, Org Policy v2, Monitoring v3
`timeSeries.list` (and Monitoring v1's PromQL instant query: `promql_face`) over
HTTP/1.1 JSON, as Google's REST client libraries, gcloud and Terraform's google
provider speak it.

One implementation behind both faces: a REST call is turned into the very request
message its gRPC twin sends (path variables, the JSON body through the proto3 JSON
mapping of `google.protobuf.json_format`, query parameters bound to fields) and
goes through `Dispatcher.call` with the same handler, checks, counters and faults.
Google's system parameters (`$alt`, `$prettyPrint`, `$fields`, ...) say how the
answer is written (`system_parameters`). Errors come back in the REST shape,
`{"error": {"code", "message", "status"}}`, with the HTTP status that google.rpc
maps each code to.

The routes are the methods' `google.api.http` bindings (`rest_routes`); those of
methods this server does not serve answer 501 UNIMPLEMENTED, as their gRPC twins do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

import grpc
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

from reconciler.localserver.api.protos import is_repeated
from reconciler.localserver.api.rpc import CallInfo, Rpc, unserved
from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.api.telemetry import TELEMETRY_HEADER
from reconciler.localserver.api.telemetry import parse as parse_telemetry
from reconciler.localserver.identity import CLIENT_REGION_KEY
from reconciler.localserver.transport import system_parameters
from reconciler.localserver.transport.dispatch import Dispatcher
from reconciler.localserver.transport.http1 import Request, Response, error_body
from reconciler.localserver.transport.jsonbody import FIELD_MASK, camel_mask, parse_body
from reconciler.localserver.transport.promql_face import PATH as PROMQL_PATH
from reconciler.localserver.transport.promql_face import PromQLFace
from reconciler.localserver.transport.rest_routes import Route, find, routes

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
        try:
            query_path = PROMQL_PATH.match(request.path)
            if query_path is not None:  # Monitoring's PromQL API
                return self.promql.handle(request, query_path)
            method, query, body = _method_query_body(request)
            rendering, params = system_parameters.split(query, request.headers)
            route, values = find(self.routes, method, request.path)
            rpc = self.rpcs.get(route.full_name)
            if rpc is None:
                raise unserved(route.full_name)
            rendering = rendering.for_response(rpc.response_type().DESCRIPTOR)
            message = _message(rpc, route, values, body, params)
            region = request.headers.get(CLIENT_REGION_KEY) or self.client_region()
            raw = message.SerializeToString() if rpc.raw else b""
            gone = request.gone
            telemetry = request.headers.get(TELEMETRY_HEADER)
            call = CallInfo(
                region,
                raw,
                gone=lambda: "CANCELLED" if gone() else None,
                payload=len(body),
                attempt=parse_telemetry(telemetry) if telemetry else None,
            )
            response = self.dispatcher.call(rpc, message, call)
            return Response(200, rendering.render(response))
        except ServiceError as err:
            status = HTTP_STATUS.get(err.code, 500)
            details = json_format.MessageToDict(err.status())["details"] if err.details else None
            return Response(status, error_body(status, err.code.name, err.message, details))
        except Exception as exc:  # never a dropped connection for a bug
            log.exception("local server: REST %s %s failed", request.method, request.path)
            return Response(500, error_body(500, "INTERNAL", f"local server bug: {exc!r}"))


METHOD_OVERRIDE_HEADER = "x-http-method-override"
_FORM = "application/x-www-form-urlencoded"


def _method_query_body(request: Request) -> tuple[str, list[tuple[str, str]], bytes]:
    """The request's method, query parameters and JSON body. A POST may carry the
    method it stands for in `X-HTTP-Method-Override` (Google's system parameter, for
    clients and proxies that send only GET and POST); a GET or DELETE sent so may
    carry its query parameters as a form body (Google's discovery-based clients do
    this when the URL grows too long)."""
    override = request.headers.get(METHOD_OVERRIDE_HEADER, "").strip().upper()
    query = list(request.query)
    if not override:
        return request.method, query, request.body
    if request.method != "POST":
        raise invalid(f"X-HTTP-Method-Override is honoured on POST only, not {request.method}.")
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if override in ("GET", "DELETE") and content_type == _FORM:
        query += parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        return override, query, b""
    return override, query, request.body


def _message(
    rpc: Rpc, route: Route, values: tuple[str, ...], body: bytes, params: list[tuple[str, str]]
) -> Any:
    """The request message: the body (all of it, or the one field the route binds it
    to), the query parameters, then the path variables."""
    message = rpc.request_type()
    body = body.strip()
    taken = set(route.fields)
    if route.body and body:
        target = message if route.body == "*" else getattr(message, route.body)
        parse_body(body, target)
        if route.body != "*":
            taken.add(route.body)
    elif body and not route.body and route.http_method in ("GET", "DELETE"):
        raise invalid(f"{route.http_method} {route.full_name} takes no request body.")
    bind_query(message, params, taken)
    for field, value in zip(route.fields, values, strict=True):
        _set_path(message, field, value)
    return message


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
    "interval.endTime=...", a repeated field once per value, an enum by name or
    number), as Google's REST transcoding does; INVALID_ARGUMENT for a name that is
    no field (the system parameters are taken out before: `system_parameters`)."""
    taken = set(bound)
    tree: dict[str, Any] = {}
    for name, value in params:
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
                or (not last and (not nested or is_repeated(field)))
            ):
                raise invalid(
                    f'Invalid JSON payload received. Unknown name "{name}": Cannot bind query '
                    "parameter."
                )
            if last:
                scalar = _scalar(field, name, value)
                if nested and field.message_type.full_name == FIELD_MASK:
                    scalar = camel_mask(scalar)
                if is_repeated(field):
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


def _scalar(field: FieldDescriptor, name: str, value: str) -> Any:
    if field.type == FieldDescriptor.TYPE_BOOL:
        if value not in ("true", "false"):
            raise invalid(f"Invalid value for {name}: {value!r} (true or false)")
        return value == "true"
    # `$alt=json;enum-encoding=int` clients send enums as numbers (ASCII digits only:
    # "²" is a digit to isdigit() and no number to int())
    if field.type == FieldDescriptor.TYPE_ENUM and value.isascii() and value.lstrip("-").isdigit():
        return int(value)
    return value
