"""The HTTP side of Cloud Monitoring's PromQL API on the REST face:

    GET /v1/projects/P/location/global/prometheus/api/v1/query?query=Q[&time=T]

The face parses the path and the query parameters, sends the query through the
dispatcher as one call of the query's `Rpc` (`monitoring.promql.query_rpc`:
counted, faultable), and answers in Prometheus' shapes: `{"status": "success",
"data": {"resultType": "vector", "result": [...]}}`, or `{"status": "error",
"errorType": ..., "error": ...}` with the HTTP status Prometheus uses for that kind.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from urllib.parse import unquote

import grpc

from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.transport.dispatch import Dispatcher
from reconciler.localserver.transport.http1 import Request, Response

PATH = re.compile(r"^/v1/projects/([^/]+)/location/([^/]+)/prometheus/api/v1/query$")
MAX_QUERY_CHARS = 64 * 1024

# google.rpc code -> HTTP status and Prometheus errorType, for what the dispatcher
# raises (a fault rule, a bug); a bad query is bad_data 400.
_ERRORS = {
    grpc.StatusCode.INVALID_ARGUMENT: (400, "bad_data"),
    grpc.StatusCode.PERMISSION_DENIED: (403, "forbidden"),
    grpc.StatusCode.UNAUTHENTICATED: (401, "unauthorized"),
    grpc.StatusCode.NOT_FOUND: (404, "not_found"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "unavailable"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "timeout"),
    grpc.StatusCode.UNAVAILABLE: (503, "unavailable"),
}


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise invalid(f"invalid parameter \"time\": cannot parse {text!r} to a valid "
                      "timestamp") from None


def _error(status: int, kind: str, message: str) -> Response:
    body = {"status": "error", "errorType": kind, "error": message}
    return Response(status, json.dumps(body).encode())


class PromQLFace:
    """The query path of the REST face, one call of `rpc` a request. `rpc`'s request
    type is built from (project, query, time in seconds or None)."""

    def __init__(self, dispatcher: Dispatcher, rpc: Rpc) -> None:
        self.dispatcher = dispatcher
        self.rpc = rpc

    def handle(self, request: Request, match: re.Match[str]) -> Response:
        if request.method != "GET":
            return _error(405, "bad_data", f"{request.method} is not a method of {request.path} "
                          "(it takes GET)")
        project, location = unquote(match.group(1)), unquote(match.group(2))
        if location != "global":
            return _error(400, "bad_data", f"location {location!r}: has to be \"global\"")
        params = dict(request.query)
        query = params.get("query", "")
        try:
            if len(query) > MAX_QUERY_CHARS:
                raise invalid(f"the query is longer than {MAX_QUERY_CHARS} characters")
            at = _time(params["time"]) if params.get("time") else None
            result = self.dispatcher.call(
                self.rpc, self.rpc.request_type(project, query, at), CallInfo(None)
            )
        except ServiceError as err:
            status, kind = _ERRORS.get(err.code, (500, "internal"))
            if err.code is grpc.StatusCode.UNIMPLEMENTED:
                status, kind = 501, "unavailable"
            return _error(status, kind, err.message)
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return Response(200, json.dumps(body).encode())
