"""A small, bounded HTTP/1.1 server loop for one connection: what the REST face needs
(requests with Content-Length or chunked bodies, keep-alive, `Expect: 100-continue`)
and nothing else.

Every wait is bounded by the front's `Limits`: the header of a request must be
complete `header_s` after its first byte (a slowloris header gets 408), the body
`body_s` after the header; a header over `max_header_bytes` gets 431 and a body over
`max_body_bytes` 413 before any of it is read. Each refusal is a JSON error in the
REST shape, followed by closing the connection.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from reconciler.localserver.transport.front import Limits, linger

MAX_HEADERS = 100
_TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/(\d)\.(\d)$")
_CHUNK_LINE_MAX = 1024


@dataclass
class Request:
    method: str
    path: str  # as sent (percent-encoded), without the query
    query: list[tuple[str, str]]
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes = b""
    # Whether the client has gone away (closed its end) while the request ran.
    gone: Callable[[], bool] = field(default=lambda: False)


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json; charset=UTF-8"


class HttpError(Exception):
    """A request refused before it reaches a handler; the connection is closed after."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> bytes:
    """The REST error shape: {"error": {"code": HTTP status, "message", "status"}},
    with "details" (each a google.rpc message in JSON, its "@type" first) when given."""
    error: dict[str, Any] = {"code": status, "message": message, "status": code}
    if details:
        error["details"] = details
    return json.dumps({"error": error}).encode()


class _Reader:
    def __init__(self, conn: socket.socket, initial: bytes) -> None:
        self.conn = conn
        self.buf = bytearray(initial)

    def fill(self, deadline: float, what: str) -> None:
        """Read more bytes; HttpError 408 at the deadline, EOFError when the peer closed."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise HttpError(408, "DEADLINE_EXCEEDED", f"the request's {what} took too long")
        self.conn.settimeout(left)
        try:
            chunk = self.conn.recv(256 * 1024)
        except TimeoutError:
            raise HttpError(
                408, "DEADLINE_EXCEEDED", f"the request's {what} took too long"
            ) from None
        if not chunk:
            raise EOFError
        self.buf += chunk

    def take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


def serve(
    conn: socket.socket,
    initial: bytes,
    handle: Callable[[Request], Response],
    limits: Limits,
    stopping: Callable[[], bool],
    in_flight: contextlib.AbstractContextManager[Any],
) -> None:
    """Answer requests on `conn` until the client closes, asks to close, idles past
    `limits.idle_s`, sends something refused, or the server stops. `in_flight` is
    held from a request's handling to the end of its answer's sending (a stop's grace
    waits for it; an idle keep-alive connection does not hold it)."""
    reader = _Reader(conn, initial)
    while True:
        try:
            request = _read_request(reader, limits)
        except HttpError as exc:
            body = error_body(exc.status, exc.code, exc.message)
            _send(conn, Response(exc.status, body), keep_alive=False, limits=limits)
            linger(conn, limits.header_s)
            return
        except (EOFError, OSError):
            return
        if request is None:
            return
        keep = _keep_alive(request)
        request.gone = lambda: _peer_closed(conn)
        with in_flight:
            response = handle(request)
            if stopping():
                keep = False
            _send(conn, response, keep_alive=keep, limits=limits, head=request.method == "HEAD")
        if not keep:
            return


def _keep_alive(request: Request) -> bool:
    tokens = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
    if request.headers.get(":version") == "1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def _peer_closed(conn: socket.socket) -> bool:
    """True when the client closed its end (a read would see end of file). Polled
    without waiting: a socket with a timeout would wait that long in `recv` even
    with MSG_DONTWAIT."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(conn, select.POLLIN | select.POLLHUP | select.POLLERR)
    if not poller.poll(0):
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _send(
    conn: socket.socket,
    response: Response,
    *,
    keep_alive: bool,
    limits: Limits,
    head: bool = False,
) -> None:
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:  # 499, google.rpc's CANCELLED
        reason = "Client Closed Request"
    lines = [
        f"HTTP/1.1 {response.status} {reason}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
    ]
    if not keep_alive:
        lines.append("Connection: close")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if not head:
        data += response.body
    with contextlib.suppress(OSError):
        conn.settimeout(limits.body_s)  # a client that never reads does not hold us
        conn.sendall(data)


def _read_request(reader: _Reader, limits: Limits) -> Request | None:
    buf = reader.buf
    # Between requests: wait up to idle_s for a first byte (empty lines are skipped).
    idle_until = time.monotonic() + limits.idle_s
    while True:
        while buf[:2] == b"\r\n":
            del buf[:2]
        if buf:
            break
        try:
            reader.fill(idle_until, "start")
        except (HttpError, EOFError):
            return None
    header_until = time.monotonic() + limits.header_s
    scanned = 0
    while (end := buf.find(b"\r\n\r\n", scanned)) < 0:
        if len(buf) > limits.max_header_bytes:
            raise _too_large_header(limits)
        scanned = max(0, len(buf) - 3)
        reader.fill(header_until, "header")
    if end + 4 > limits.max_header_bytes:
        raise _too_large_header(limits)
    head = reader.take(end + 4)[:end]
    request_line, *header_lines = head.split(b"\r\n")
    match = _REQUEST_LINE.match(request_line)
    if match is None:
        raise HttpError(400, "INVALID_ARGUMENT", "malformed HTTP request line")
    method, target, major, minor = match.groups()
    if (major, minor) not in ((b"1", b"1"), (b"1", b"0")):
        raise HttpError(505, "UNIMPLEMENTED", "only HTTP/1.1 and HTTP/1.0 are spoken here")
    if len(header_lines) > MAX_HEADERS:
        raise HttpError(431, "INVALID_ARGUMENT", f"more than {MAX_HEADERS} header fields")
    headers: dict[str, str] = {":version": f"{int(major)}.{int(minor)}"}
    for line in header_lines:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.match(name):
            raise HttpError(400, "INVALID_ARGUMENT", "malformed HTTP header field")
        key = name.decode("ascii").lower()
        text = value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    body = _read_body(reader, headers, limits)
    path, _, query = _origin_form(target.decode("latin-1")).partition("?")
    return Request(
        method=method.decode("ascii"),
        path=path,
        query=parse_qsl(query, keep_blank_values=True),
        headers=headers,
        body=body,
    )


def _too_large_header(limits: Limits) -> HttpError:
    return HttpError(
        431, "INVALID_ARGUMENT", f"the request header exceeds {limits.max_header_bytes} bytes"
    )


def _origin_form(target: str) -> str:
    """The path and query of a request target ("http://host/p?q" -> "/p?q")."""
    if target.startswith(("http://", "https://")):
        rest = target.split("://", 1)[1]
        slash = rest.find("/")
        return rest[slash:] if slash >= 0 else "/"
    return target


def _read_body(reader: _Reader, headers: dict[str, str], limits: Limits) -> bytes:
    encoding = headers.get("transfer-encoding")
    length_text = headers.get("content-length")
    if encoding is not None:
        if length_text is not None:
            raise HttpError(400, "INVALID_ARGUMENT", "both Transfer-Encoding and Content-Length")
        if encoding.strip().lower() != "chunked":
            raise HttpError(
                501, "UNIMPLEMENTED", f"Transfer-Encoding {encoding!r} (only chunked is read)"
            )
        _continue(reader, headers)
        return _read_chunked(reader, limits, time.monotonic() + limits.body_s)
    if length_text is None:
        return b""
    values = {v.strip() for v in length_text.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise HttpError(400, "INVALID_ARGUMENT", f"invalid Content-Length {length_text!r}")
    length = int(next(iter(values)))
    if length > limits.max_body_bytes:
        raise _too_large_body(length, limits)
    if length:
        _continue(reader, headers)
    until = time.monotonic() + limits.body_s
    while len(reader.buf) < length:
        try:
            reader.fill(until, "body")
        except EOFError:
            raise HttpError(400, "INVALID_ARGUMENT", "the request body ended early") from None
    return reader.take(length)


def _too_large_body(length: int, limits: Limits) -> HttpError:
    return HttpError(
        413,
        "INVALID_ARGUMENT",
        f"the request body ({length} bytes) exceeds the local server's limit of "
        f"{limits.max_body_bytes} bytes",
    )


def _continue(reader: _Reader, headers: dict[str, str]) -> None:
    if headers.get("expect", "").lower() == "100-continue" and not reader.buf:
        reader.conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")


def _read_chunked(reader: _Reader, limits: Limits, until: float) -> bytes:
    body = bytearray()
    buf = reader.buf
    while True:
        while (eol := buf.find(b"\r\n")) < 0:
            if len(buf) > _CHUNK_LINE_MAX:
                raise HttpError(400, "INVALID_ARGUMENT", "malformed chunked body")
            _fill_body(reader, until)
        size_text = bytes(buf[:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HttpError(400, "INVALID_ARGUMENT", "malformed chunked body") from None
        del buf[: eol + 2]
        if size == 0:
            break
        if len(body) + size > limits.max_body_bytes:
            raise _too_large_body(len(body) + size, limits)
        while len(buf) < size + 2:
            _fill_body(reader, until)
        body += buf[:size]
        del buf[: size + 2]
    while True:  # trailer fields, up to the empty line
        while (eol := buf.find(b"\r\n")) < 0:
            if len(buf) > limits.max_header_bytes:
                raise HttpError(400, "INVALID_ARGUMENT", "malformed chunked body")
            _fill_body(reader, until)
        line = bytes(buf[:eol])
        del buf[: eol + 2]
        if not line:
            return bytes(body)


def _fill_body(reader: _Reader, until: float) -> None:
    try:
        reader.fill(until, "body")
    except EOFError:
        raise HttpError(400, "INVALID_ARGUMENT", "the request body ended early") from None
