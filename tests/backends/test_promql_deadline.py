"""--timeout bounds a PromQL read as a whole call (issue 39): requests' own timeout
bounds each socket read only, so an answer sent a byte at a time used to keep
`residency --timeout 3` waiting for 31 s. Here `reconcile residency` runs against a
loopback port of the test's own: gRPC (HTTP/2) connections are relayed to the local
server, and the PromQL GET (HTTP/1.1) is answered by the fixture a byte at a time,
headers and all or the body only. The read gives up with the timeout's message while
the answer is still dripping, and the topic whose gauges it could not read is
reported unchecked (exit 2 with --detailed-exitcode). No duration is asserted."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ANSWER_BODY = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
DRIP_SECONDS = 0.2  # between two bytes: the whole answer takes about 35 s
H2_PREFACE = b"PRI "


class DripFront:
    """Relays HTTP/2 connections to `upstream` byte for byte; answers an HTTP/1.1
    request itself, a byte every DRIP_SECONDS (`headers_too`: from the status line
    on; else the headers at once, then the body). `gets` counts the requests,
    `finished` those whose answer was sent whole."""

    def __init__(self, upstream: str, headers_too: bool) -> None:
        self.upstream = upstream
        self.headers_too = headers_too
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.gets = 0
        self.finished = 0
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="drip-accept").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.sockets.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        first = conn.recv(4, socket.MSG_PEEK)
        if first == H2_PREFACE:
            host, port = self.upstream.rsplit(":", 1)
            up = socket.create_connection((host, int(port)))
            self.sockets.append(up)
            threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()
            _pipe(conn, up)
            return
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(65536)
            if not chunk:
                return
            request += chunk
        self.gets += 1
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(ANSWER_BODY))
        try:
            if not self.headers_too:
                conn.sendall(head)
            for i in range(len(head + ANSWER_BODY) if self.headers_too else len(ANSWER_BODY)):
                if self.stop.wait(DRIP_SECONDS):
                    return
                conn.sendall(((head if self.headers_too else b"") + ANSWER_BODY)[i:i + 1])
        except OSError:
            return  # the client gave up and closed
        self.finished += 1

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for s in self.sockets:
            s.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.fixture(params=["headers-dripped", "body-dripped"])
def front(request: pytest.FixtureRequest, local_server: Any) -> Iterator[DripFront]:
    made = DripFront(local_server.address, headers_too=request.param == "headers-dripped")
    try:
        yield made
    finally:
        made.close()


def test_a_dripped_promql_answer_ends_at_the_timeout(
    front: DripFront, run_cli: Any, publisher_client: Any, subscriber_client: Any,
    spec_dir: Path, snapshot: Path,
) -> None:
    topic = "projects/proj-a/topics/orders"
    publisher_client.create_topic(request={"name": topic, "labels": {"team": "payments"}})
    subscriber_client.create_subscription(
        request={"name": "projects/proj-a/subscriptions/orders-pull", "topic": topic})
    result = run_cli("residency", str(spec_dir), "--emulator", front.address, "--org-policy",
                     str(snapshot), "--timeout", "1", "--detailed-exitcode")
    assert (front.gets, front.finished) == (1, 0)  # gave up while the answer was dripping
    assert result.exit_code == 2, result.stderr
    assert ("    unknown: stored messages: Cloud Monitoring did not answer in time for "
            f"project proj-a ({front.address}, --timeout 1s)\n") in result.stdout
    assert "1 could not be checked" in result.stdout
