"""Issue 39 item 4: no thread traceback for any bytes a client can send. The HTTP/1.1
reader answers every request line, header and body it cannot take with a 4xx in the
REST error shape (or closes the connection), logs no error and lets no exception out
of a connection's thread; a gRPC request that is no protobuf of its type is
INVALID_ARGUMENT (grpcio answered INTERNAL and logged a traceback); a REST Publish
whose `data` is not base64 is refused as Google's REST API refuses it. Real bytes over
a socket to an in-process server, so that its log and its threads are watched."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_support import rest

P = "projects/proj-alpha"
TOPIC = f"{P}/topics/hostile"
SUB = f"{P}/subscriptions/hostile-sub"
PUBLISH = f"/v1/{TOPIC}:publish"


@pytest.fixture
def watched(
    local_server: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """The server, with every exception that leaves a thread and every error logged
    collected; the test fails if there is any."""
    escaped: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    caplog.set_level(logging.ERROR)  # every logger: grpcio's own included
    local_server.seed_topics([TOPIC])
    yield local_server
    assert not escaped, [f"{e.exc_type.__name__}: {e.exc_value}" for e in escaped]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def _exchange(server: Any, data: bytes) -> bytes:
    """Send `data`, then read until the server closes (or has answered and waits)."""
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server refused and closed while we were sending
            pass
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except OSError:
            pass
    return out


def _status(raw: bytes) -> int | None:
    if not raw.startswith(b"HTTP/1.1 "):
        return None
    return int(raw.split(b" ", 2)[1])


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("Content-Length: ²", 400),  # the trial: isdigit() is True, int() refuses
        ("Content-Length: ¹", 400),
        ("Content-Length: +5", 400),
        ("Content-Length: 1_0", 400),
        ("Content-Length: " + "9" * 5000, 413),
        ("Content-Length: 99999999999999999999999", 413),
        ("Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked\r\n\r\n-1\r\n", 400),
        ("Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked\r\n\r\n1_0\r\n", 400),
        ("Transfer-Encoding: chunked\r\n\r\n" + "f" * 40 + "\r\n", 413),
    ],
)
def test_odd_lengths_are_refused_cleanly(watched: Any, head: str, status: int) -> None:
    tail = "" if "\r\n\r\n" in head else "\r\n\r\n{}"
    # Latin-1: a header's bytes as the reader decodes them ("²" is the byte 0xB2).
    raw = _exchange(watched, f"PUT /v1/{TOPIC} HTTP/1.1\r\n{head}{tail}".encode("latin-1"))
    assert _status(raw) == status, raw[:300]
    body = json.loads(raw.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == status


def test_a_body_that_is_no_utf8_json_is_the_clients_error(watched: Any) -> None:
    for body in (b'{"labels": {"a": "\xff"}}', b"[" * 100_000, b'{"name": 1, "name": 2}'):
        data = (
            f"PATCH /v1/{TOPIC} HTTP/1.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        raw = _exchange(watched, data)
        assert _status(raw) == 400, raw[:300]
        assert b"Invalid JSON payload received" in raw


_TOKENS = st.sampled_from(
    ["GET", "PUT", "POST", "PATCH", "DELETE", "HEAD", "OPTIONS", "get", "P\u00dcT", "", "G ET"]
)
_TARGETS = st.one_of(
    st.sampled_from(
        [
            f"/v1/{TOPIC}",
            f"/v1/{TOPIC}:publish",
            "/v1/projects/proj-alpha/location/global/prometheus/api/v1/query?query=%7B",
            "/v3/projects/proj-alpha/timeSeries?filter=%22",
            f"/v1/{SUB}:seek",
            f"/v1/{P}/snapshots/s?$fields=name&$alt=json;enum-encoding=int",
            "/v1/projects/proj-alpha/schemas?schemaId=x",
            f"/v1/{TOPIC}:setIamPolicy",
            "/v2/projects/proj-alpha/policies?pageToken=%C2%B2",
            "http://h/v1/x?a=%zz&b",
            "*",
        ]
    ),
    st.text(min_size=0, max_size=30),
)
_HEADER_NAMES = st.sampled_from(
    ["Content-Length", "Transfer-Encoding", "Connection", "Expect", "x-reconcile-client-region",
     "Host", "X", "Bad Name", "\u00e9", "", "X-HTTP-Method-Override", "Content-Type"]
)
_VALUES = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["chunked", "100-continue", "close", "1.5", "-1", "0", "5, 5", "\u00b2", "\u00b9"]
    ),
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=_TOKENS,
    target=_TARGETS,
    version=st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 x", "http/1.1", ""]),
    headers=st.lists(st.tuples(_HEADER_NAMES, _VALUES), max_size=5),
    body=st.binary(max_size=40),
    encoding=st.sampled_from(["utf-8", "latin-1"]),
)
def test_no_request_line_or_header_makes_a_thread_fail(
    watched: Any,
    method: str,
    target: str,
    version: str,
    headers: list[tuple[str, str]],
    body: bytes,
    encoding: str,
) -> None:
    """Whatever arrives, the answer is an HTTP response that is not a server error,
    or a closed connection; no error is logged and no thread dies (the fixture)."""
    lines = [f"{method} {target} {version}".rstrip(), *(f"{n}: {v}" for n, v in headers)]
    text = "\r\n".join(lines) + "\r\n\r\n"
    data = text.encode(encoding, "surrogatepass" if encoding == "utf-8" else "replace") + body
    raw = _exchange(watched, data)
    status = _status(raw)
    assert status is None or status < 500 or status in (501, 505), raw[:300]


def test_rest_publish_refuses_data_that_is_not_base64(watched: Any) -> None:
    from reconciler.backends.clients import subscriber_client

    subscriber_client(watched.address).create_subscription(
        request={"name": SUB, "topic": TOPIC}
    )
    for data in ("!!!", "a", "aGV sbG8=", "aGVsbG8*"):
        answer = rest(watched.address, "POST", PUBLISH, {"messages": [{"data": data}]})
        assert answer.status == 400, answer.body
        assert answer.body["error"] == {
            "code": 400,
            "message": (
                f"Invalid value at 'messages[0].data' (TYPE_BYTES), Base64 decoding failed "
                f'for "{data}"'
            ),
            "status": "INVALID_ARGUMENT",
        }
    assert watched.message_count(TOPIC) == 0
    for data, decoded in (("aGVsbG8=", b"hello"), ("aGVsbG8", b"hello"), ("aGk_", b"hi?")):
        answer = rest(watched.address, "POST", PUBLISH, {"messages": [{"data": data}]})
        assert answer.status == 200, answer.body
        assert watched.messages(TOPIC)[-1].data == decoded


@pytest.mark.parametrize(
    "raw",
    [b"\x0a\xff\xff\xff\xff\x0f", b"\x0a\x02\xff\xfe", b"\xff"],
    ids=["corrupt", "not utf-8", "no field"],
)
def test_grpc_bytes_that_are_no_request_are_the_clients_error(watched: Any, raw: bytes) -> None:
    import grpc

    with grpc.insecure_channel(watched.address) as channel:
        for method in ("GetTopic", "Publish"):
            method = f"/google.pubsub.v1.Publisher/{method}"
            with pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary(method)(raw, timeout=30)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert refused.value.details() == "Invalid request"
        pull = channel.stream_stream("/google.pubsub.v1.Subscriber/StreamingPull")
        with pytest.raises(grpc.RpcError) as refused:
            for _ in pull(iter([raw]), timeout=30):
                pass
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


SNAP = f"{P}/snapshots/hostile-snap"
_SCHEMAS = "/v1/projects/proj-alpha/schemas"
_DEEP_AVRO = '{"type": "AVRO", "definition": "' + "[" * 5000 + '"}'
_BAD_AVRO = '{"message": "eA==", "schema": {"type": "AVRO", "definition": "{"}}'
_LONG_PERMISSION = '{"permissions": ["' + "p" * 70_000 + '"]}'
_POLICY_TIME = '{"name": "x", "spec": {"updateTime": "1e400"}}'


@pytest.mark.parametrize(
    ("method", "target", "headers", "body"),
    [
        ("POST", f"/v1/{SUB}:seek", "", '{"time": "1e400"}'),
        ("POST", f"/v1/{SUB}:seek", "", '{"time": "99999-12-31T00:00:00Z"}'),
        ("POST", f"/v1/{SUB}:seek", "", '{"time": {"seconds": 1}}'),
        ("POST", f"/v1/{SUB}:seek", "", '{"snapshot": 5}'),
        ("POST", f"/v1/{SUB}:seek", "", '{"time": "2020-01-01T00:00:00Z", "snapshot": "x"}'),
        (
            "PATCH",
            f"/v1/{SNAP}",
            "",
            '{"snapshot": {"expireTime": "0000-01-01T00:00:00Z"}, "updateMask": "expireTime"}',
        ),
        ("PATCH", f"/v1/{SNAP}", "", '{"snapshot": {"labels": {"\\u0000": "x"}}, "updateMask": 7}'),
        ("PUT", f"/v1/{SNAP}", "", '{"subscription": "\\u0000\\ud800"}'),
        ("PUT", f"/v1/{SNAP}", "", '{"subscription": "' + "s" * 100_000 + '"}'),
        ("POST", f"{_SCHEMAS}?schemaId=hostile", "", _DEEP_AVRO),
        ("POST", f"{_SCHEMAS}?schemaId=hostile", "", '{"type": 99, "definition": "x"}'),
        ("POST", f"{_SCHEMAS}?schemaId=%00%ff", "", '{"type": "AVRO", "definition": "\\"int\\""}'),
        ("POST", f"{_SCHEMAS}:validateMessage", "", '{"message": "!!!", "name": "x"}'),
        ("POST", f"{_SCHEMAS}:validateMessage", "", _BAD_AVRO),
        ("GET", f"{_SCHEMAS}?pageSize=1e400&view=%C2%B2", "", ""),
        ("POST", f"/v1/{TOPIC}:setIamPolicy", "", '{"policy": {"etag": "!!!"}}'),
        ("POST", f"/v1/{TOPIC}:setIamPolicy", "", '{"policy": {"bindings": [{"role": 5}]}}'),
        ("POST", f"/v1/{TOPIC}:setIamPolicy", "", '{"policy": {"version": 1e400}}'),
        ("POST", f"/v1/{TOPIC}:testIamPermissions", "", _LONG_PERMISSION),
        ("GET", f"/v1/{TOPIC}:getIamPolicy?options.requestedPolicyVersion=%C2%B2", "", ""),
        ("GET", f"/v1/{TOPIC}?$fields=(((((", "", ""),
        ("GET", f"/v1/{TOPIC}?$alt=json;enum-encoding=%C2%B2", "", ""),
        ("GET", f"/v1/{TOPIC}?prettyPrint=maybe&$callback=%3Cscript%3E", "", ""),
        ("POST", f"/v1/{TOPIC}", "X-HTTP-Method-Override: \u00b2\r\n", "{}"),
        (
            "POST",
            f"/v1/{P}/snapshots",
            "X-HTTP-Method-Override: GET\r\nContent-Type: application/x-www-form-urlencoded\r\n",
            "pageSize=%ff%fe&pageToken=%00",
        ),
        ("GET", f"/v1/{P}/snapshots?pageSize=-1&pageToken=%ff", "", ""),
        ("GET", "/v2/projects/proj-alpha/policies?pageToken=%C2%B2", "", ""),
        ("GET", "/v2/projects/proj-alpha/policies?pageToken=" + "9" * 5000, "", ""),
        ("GET", "/v2/organizations/123/customConstraints?pageToken=%C2%B2", "", ""),
        ("GET", "/v3/projects/proj-alpha/timeSeries?filter=x&pageToken=c2VyaWVzOsKy", "", ""),
        ("GET", f"/v1/{TOPIC}/snapshots?pageToken=" + "A" * 5000, "", ""),
        ("POST", "/v2/projects/proj-alpha/policies", "", _POLICY_TIME),
    ],
)
def test_the_newer_rest_routes_answer_hostile_requests_as_the_clients_error(
    watched: Any, method: str, target: str, headers: str, body: str
) -> None:
    """Snapshots, Seek, the schema service, IAM policies, Org Policy, the system
    parameters and the method override, each sent what a JSON reader or the handler
    cannot take: a 4xx in the REST error shape, nothing logged, no thread failing."""
    from reconciler.backends.clients import subscriber_client

    subscriber_client(watched.address).create_subscription(request={"name": SUB, "topic": TOPIC})
    data = body.encode("utf-8", "surrogatepass")
    head = f"{method} {target} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {len(data)}\r\n"
    raw = _exchange(watched, head.encode("latin-1") + b"Connection: close\r\n\r\n" + data)
    status = _status(raw)
    assert status is not None and 400 <= status < 500, raw[:400]
    error = json.loads(raw.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == status and error["message"], error
    assert watched.message_count(TOPIC) == 0
