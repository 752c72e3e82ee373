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
import math
import re
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import unquote

import grpc

from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import ServiceError, invalid, shown
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


# What Prometheus' parameters accept (its API's parseTime and parseDuration): a
# decimal number of seconds, or an RFC 3339 time; a duration like 1m30s. ASCII only:
# Python's float() would also take "NaN", "1e400" (inf), "1_0" and other scripts'
# digits, which no Prometheus client sends and no timestamp can hold.
_SECONDS = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
_DURATION = re.compile(r"(?:[0-9]+(?:ms|[smhdwy]))+")
# No timestamp beyond year 9999, none before year 1 (what a time can be read as).
_MAX_ABS_S = 253_402_300_799


def _time(text: str) -> float:
    """A `time` parameter in seconds; bad_data for anything else."""
    seconds: float | None = None
    if _SECONDS.fullmatch(text):
        seconds = float(text)
    elif found := _RFC3339.fullmatch(text):
        year, month, day, hour, minute, second, frac, zulu, sign, oh, om = found.groups()
        try:
            zone = UTC if zulu else timezone(
                (1 if sign == "+" else -1) * timedelta(hours=int(oh), minutes=int(om))
            )
            moment = datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second),
                tzinfo=zone,
            )
            seconds = moment.timestamp() + (float(f"0.{frac}") if frac else 0.0)
        except (ValueError, OverflowError):
            seconds = None
    if seconds is None or not math.isfinite(seconds) or abs(seconds) > _MAX_ABS_S:
        raise invalid(
            f"invalid parameter \"time\": cannot parse {shown(text)} to a valid timestamp"
        )
    return seconds


def _timeout(text: str) -> None:
    """A `timeout` parameter is checked (bad_data), though a query here never waits."""
    if _SECONDS.fullmatch(text) and math.isfinite(float(text)):
        return
    if _DURATION.fullmatch(text):
        return
    raise invalid(f"invalid parameter \"timeout\": cannot parse {shown(text)} to a valid duration")


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
            if params.get("timeout"):
                _timeout(params["timeout"])
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
