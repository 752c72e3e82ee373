"""The one address of the local server: gRPC and HTTP/1.1 told apart by their first
bytes, the HTTP/1.1 protocol as REST clients use it, and junk traffic (garbage,
TLS, half-open connections, a slowloris header, oversized requests), each refused
cleanly and within bounds while the server goes on serving both faces."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.api_core import exceptions
from rest_support import rest

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer
from reconciler.localserver.transport.front import Limits

TOPIC = "projects/proj-alpha/topics/orders"
SHORT = Limits(
    first_bytes_s=0.5,
    idle_s=0.5,
    header_s=0.5,
    body_s=0.5,
    max_header_bytes=4096,
    max_body_bytes=1024,
    max_connections=8,
)


def _connect(server: Any) -> socket.socket:
    host, port = server.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def _status_and_body(raw: bytes) -> tuple[int, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body.startswith(b"{") else body


def _still_serves(server: Any) -> None:
    client = publisher_client(server.address)
    try:
        assert client.get_topic(topic=TOPIC).name == TOPIC
    finally:
        client.transport.close()
    assert rest(server.address, "GET", f"/v1/{TOPIC}").body["name"] == TOPIC


@contextmanager
def short_server() -> Iterator[Any]:
    """A local server whose front waits at most half a second for anything."""
    with LocalServer(limits=SHORT) as server:
        server.seed_topics([TOPIC])
        yield server


# ------------------------------------------------------------------- HTTP/1.1 use


def test_one_address_serves_grpc_and_rest_and_binds_loopback(
    local_server: Any, publisher_client: Any
) -> None:
    assert local_server.address.startswith("127.0.0.1:")
    publisher_client.create_topic(name=TOPIC)
    assert rest(local_server.address, "GET", f"/v1/{TOPIC}").body == {"name": TOPIC}


def test_keep_alive_serves_pipelined_requests_on_one_connection(local_server: Any) -> None:
    local_server.seed_topics([TOPIC])
    get = f"GET /v1/{TOPIC} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    last = f"GET /v1/{TOPIC}?alt=json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    with _connect(local_server) as sock:
        sock.sendall(get + get + last)
        raw = _read_all(sock)
    assert raw.count(b"HTTP/1.1 200 OK") == 3
    assert raw.count(b'"name": "projects/proj-alpha/topics/orders"') == 3


def test_a_chunked_body_and_expect_100_continue(local_server: Any) -> None:
    body = json.dumps({"labels": {"team": "a"}}).encode()
    request = (
        f"PUT /v1/{TOPIC} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n"
    ).encode()
    with _connect(local_server) as sock:
        sock.sendall(request)
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        status, answer = _status_and_body(_read_all(sock))
    assert status == 200 and answer == {"name": TOPIC, "labels": {"team": "a"}}


def test_http_1_0_closes_after_the_answer(local_server: Any) -> None:
    with _connect(local_server) as sock:
        sock.sendall(b"GET /v1/projects/proj-alpha/topics HTTP/1.0\r\n\r\n")
        status, answer = _status_and_body(_read_all(sock))
    assert status == 200 and answer == {}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code", "words"),
    [
        ("GET", "/v1/nowhere", None, 404, "NOT_FOUND", "was not found on this server"),
        ("POST", f"/v1/{TOPIC}", None, 404, "NOT_FOUND", "(it takes DELETE, GET, PATCH, PUT)"),
        ("GET", "/v2/projects/proj-alpha/constraints", None, 501, "UNIMPLEMENTED", "Constraints"),
        ("POST", "/v1/projects/proj-alpha/schemas", {}, 400, "INVALID_ARGUMENT", "schemas/)"),
        ("PUT", f"/v1/{TOPIC}", "{not json", 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
        ("PUT", f"/v1/{TOPIC}", {"labelz": {}}, 400, "INVALID_ARGUMENT", "labelz"),
        ("GET", f"/v1/{TOPIC}?alt=proto", None, 400, "INVALID_ARGUMENT", "alt=proto"),
        (
            "GET",
            "/v1/projects/proj-alpha/topics?pageSize=many",
            None,
            400,
            "INVALID_ARGUMENT",
            "Invalid query parameter",
        ),
        ("DELETE", f"/v1/{TOPIC}", {"x": 1}, 400, "INVALID_ARGUMENT", "takes no request body"),
    ],
)
def test_rest_mistakes_get_a_rest_shaped_error(
    local_server: Any, method: str, path: str, body: Any, status: int, code: str, words: str
) -> None:
    payload = (
        body.encode()
        if isinstance(body, str)
        else None
        if body is None
        else json.dumps(body).encode()
    )
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if payload is not None:
        head += f"Content-Length: {len(payload)}\r\n"
    with _connect(local_server) as sock:
        sock.sendall(head.encode() + b"\r\n" + (payload or b""))
        got_status, answer = _status_and_body(_read_all(sock))
    assert got_status == status
    assert answer["error"]["code"] == status and answer["error"]["status"] == code
    assert words in answer["error"]["message"]


# ---------------------------------------------------------------------- junk traffic


def test_garbage_bytes_get_a_plain_refusal() -> None:
    with short_server() as server:
        with _connect(server) as sock:
            sock.sendall(b"\x00\x01\x02\x03garbage\xff" * 100)
            raw = _read_all(sock)
        assert raw.startswith(b"HTTP/1.1 400 Bad Request")
        assert b"speak gRPC (HTTP/2) or HTTP/1.1 JSON (REST)" in raw
        _still_serves(server)


def test_a_tls_hello_is_closed_without_an_answer() -> None:
    with short_server() as server:
        with _connect(server) as sock:
            sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64)
            assert _read_all(sock) == b""
        _still_serves(server)


def test_a_tls_client_is_told_in_the_server_log_to_connect_without_tls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A real TLS handshake (Python's ssl, as a client configured for TLS would make)
    fails on the client at once, and the server's log names the port and the fix,
    once however often the client retries."""
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with short_server() as server, caplog.at_level("WARNING"):
        for _ in range(3):
            with _connect(server) as sock, pytest.raises((ssl.SSLError, OSError)):
                context.wrap_socket(sock).do_handshake()
        _still_serves(server)
        lines = [r.getMessage() for r in caplog.records if "TLS" in r.getMessage()]
    port = server.address.rsplit(":", 1)[1]
    assert len(lines) == 1, lines
    assert f"TLS connection to port {port}" in lines[0]
    assert "speaks plaintext gRPC and HTTP/1.1 only" in lines[0]
    assert f"PUBSUB_EMULATOR_HOST={server.address}" in lines[0]


@pytest.mark.parametrize(
    ("sent", "answer"),
    [
        (b"", b""),
        (b"GE", b""),
        # gRPC's own refusal: its SETTINGS, then GOAWAY "Handshake timeout"
        (b"PRI * HTTP/2.0\r\n", b"andshake timeout"),
    ],
    ids=["nothing", "two bytes", "part of the preface"],
)
def test_a_half_open_connection_is_closed_in_time(sent: bytes, answer: bytes) -> None:
    with short_server() as server:
        with _connect(server) as sock:
            sock.sendall(sent)
            got = _read_all(sock)  # until the server closes (the socket's 30 s timeout never fires)
        assert answer in got if answer else got == b""
        _still_serves(server)


def test_a_slowloris_header_gets_408() -> None:
    header = b"GET /v1/projects/proj-alpha/topics HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 4000
    with short_server() as server:
        with _connect(server) as sock:
            sent = 0
            answer = b""
            sock.settimeout(0.1)  # one byte per tenth of a second, until the server answers
            while sent < len(header) and not answer:
                sock.sendall(header[sent : sent + 1])
                sent += 1
                try:
                    answer = sock.recv(65536)
                except TimeoutError:
                    continue
            sock.settimeout(30)
            answer += _read_all(sock)
        assert sent < len(header)  # cut off before the header was complete
        status, body = _status_and_body(answer)
        assert status == 408 and body["error"]["status"] == "DEADLINE_EXCEEDED"
        assert "header took too long" in body["error"]["message"]
        _still_serves(server)


@pytest.mark.parametrize(
    ("request_head", "status", "words"),
    [
        (
            f"PUT /v1/{TOPIC} HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n",
            413,
            "(1000000000 bytes) exceeds the local server's limit of 1024 bytes",
        ),
        (
            f"PUT /v1/{TOPIC} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n",
            413,
            "exceeds the local server's limit",
        ),
        (f"GET /v1/{TOPIC} HTTP/1.1\r\nX-Big: {'b' * 5000}\r\n\r\n", 431, "exceeds 4096 bytes"),
        (
            f"GET /v1/{TOPIC} HTTP/1.1\r\n" + "X-A: b\r\n" * 101 + "\r\n",
            431,
            "more than 100 header",
        ),
        (
            f"PUT /v1/{TOPIC} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            400,
            "malformed chunked",
        ),
        (f"PUT /v1/{TOPIC} HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "only chunked"),
        (
            f"PUT /v1/{TOPIC} HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n",
            400,
            "invalid Content-Length",
        ),
        ("GET /v1/x HTTP/2.0\r\n\r\n", 505, "only HTTP/1.1"),
        ("GET /v1/x\r\n\r\n", 400, "malformed HTTP request line"),
        (f"PUT /v1/{TOPIC} HTTP/1.1\r\nContent-Length: 100\r\n\r\n{{", 408, "body took too long"),
    ],
    ids=[
        "huge body",
        "huge chunk",
        "huge header",
        "many headers",
        "bad chunk",
        "gzip",
        "two lengths",
        "HTTP/2 line",
        "no version",
        "short body",
    ],
)
def test_oversized_or_malformed_requests_are_refused_before_reading_on(
    request_head: str, status: int, words: str
) -> None:
    with short_server() as server:
        with _connect(server) as sock:
            sock.sendall(request_head.encode())
            got, body = _status_and_body(_read_all(sock))
        assert got == status, body
        assert body["error"]["code"] == status and words in body["error"]["message"]
        _still_serves(server)


def test_connections_beyond_the_limit_are_closed_at_once() -> None:
    with LocalServer(limits=Limits(max_connections=4)) as server:
        server.seed_topics([TOPIC])
        held = [_connect(server) for _ in range(4)]
        try:
            for sock in held:  # each is served: it counts until it is closed
                sock.sendall(b"GET /v1/projects/proj-alpha/topics HTTP/1.1\r\nHost: x\r\n\r\n")
                assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK")
            with _connect(server) as extra:
                assert _read_all(extra) == b""
        finally:
            for sock in held:
                sock.close()
        end = time.monotonic() + 30  # a safety net: the server sees the closes on its own
        while server.open_connections:
            assert time.monotonic() < end, f"{server.open_connections} connections still held"
            time.sleep(0.01)
        with _connect(server) as later:  # the slots freed, a new one is served
            later.sendall(
                b"GET /v1/projects/proj-alpha/topics HTTP/1.1\r\nConnection: close\r\n\r\n"
            )
            assert _read_all(later).startswith(b"HTTP/1.1 200 OK")


def test_stop_answers_a_waiting_rest_pull_and_closes_relayed_grpc(local_server: Any) -> None:
    """A stop is prompt whatever the front holds: a REST Pull waiting for messages is
    answered (empty), an open gRPC connection is closed, stop() returns."""
    import threading

    from subscriber_support import make_subscriber

    local_server.seed_topics([TOPIC])
    subscriber = make_subscriber(local_server.address)
    sub = "projects/proj-alpha/subscriptions/orders-sub"
    subscriber.create_subscription(name=sub, topic=TOPIC)
    body = b'{"maxMessages": 1}'
    with _connect(local_server) as sock:
        sock.sendall(
            f"POST /v1/{sub}:pull HTTP/1.1\r\nHost: x\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        end = time.monotonic() + 30  # a safety net: the Pull is counted when it starts waiting
        while local_server.counters.get("Pull") == 0:
            assert time.monotonic() < end
            time.sleep(0.01)
        stopper = threading.Thread(target=local_server.stop)
        stopper.start()
        answer = _read_all(sock)
        stopper.join(60)
    assert not stopper.is_alive()
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"{}"), answer
    with pytest.raises(exceptions.ServiceUnavailable):  # nothing listens any more
        subscriber.get_subscription(subscription=sub, retry=None, timeout=10)
    subscriber.transport.close()
