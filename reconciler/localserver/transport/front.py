"""The public listener of the local server: one address for every client, as Google's
emulator has.

Each accepted connection's first bytes decide its face: the HTTP/2 connection
preface ("PRI * HTTP/2.0...", what every gRPC client sends first) is relayed to the
gRPC server listening on an internal socket (a Unix socket in a private directory,
or a loopback port where there are none); an HTTP/1.x request line goes to the
REST face on the connection's own thread; a TLS handshake is closed and logged
(the server speaks plaintext only; the client's TLS library cannot show why);
anything else gets a plain-text refusal and is closed.

Bounded: a connection that sends nothing decidable within `Limits.first_bytes_s`
is closed, at most `Limits.max_connections` are open at once (more are closed at
accept), and the HTTP/1.1 reader has its own limits (`http1`).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.localserver.transport.relay import relay

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TLS_LOG_EVERY_S = 60.0
PEEK = 4  # enough to tell "PRI " from an HTTP/1.x method and a TLS record
HTTP1_METHODS = (b"GET ", b"PUT ", b"POST", b"PATC", b"DELE", b"HEAD", b"OPTI", b"TRAC", b"CONN")


@dataclass(frozen=True)
class Limits:
    """How long and how much the front and its HTTP/1.1 reader wait for and accept."""

    first_bytes_s: float = 10.0  # a new connection must tell what it speaks by then
    idle_s: float = 60.0  # an idle keep-alive HTTP/1.1 connection is closed after this
    header_s: float = 10.0  # an HTTP/1.1 request's header must be complete by then
    body_s: float = 60.0  # and its body by then (from the end of the header)
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = 32 * 1024 * 1024  # the gRPC face's message limit too
    max_connections: int = 512


def classify(head: bytes) -> str:
    """ "grpc", "http1", "tls" or "junk" for a connection's first bytes."""
    if head and (H2_PREFACE.startswith(head) or head.startswith(H2_PREFACE)):
        return "grpc"
    if head.startswith(HTTP1_METHODS):
        return "http1"
    if head[:1] == b"\x16":
        return "tls"
    return "junk"


HttpFace = Callable[[socket.socket, bytes], None]


class InFlight:
    """Counts calls being handled (`with in_flight:`), so that a stop can give them
    a grace period to finish, as gRPC's does."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._count = 0

    def __enter__(self) -> None:
        with self._cond:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._count == 0, timeout)


class Front:
    """Listens on (host, port) and routes each connection (see the module docstring).
    `upstream` is where the gRPC server listens: a Unix socket path, or host:port."""

    def __init__(
        self,
        host: str,
        port: int,
        upstream: str,
        http: HttpFace,
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.upstream = upstream
        self.http = http
        self._listeners = _listen(host, port)
        self.port = int(self._listeners[0].getsockname()[1])
        self.address = _address((host, self.port))
        self._tls_logged: float | None = None  # when a TLS refusal was last logged
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._relays: set[threading.Event] = set()  # see `stop`
        self._wake_r, self._wake_w = socket.socketpair()
        self._closing = False
        self._thread = threading.Thread(target=self._accept_loop, name="localserver-front")

    def start(self) -> None:
        self._thread.start()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._live)

    # ------------------------------------------------------------------- accepting

    def _accept_loop(self) -> None:
        selector = selectors.DefaultSelector()
        for listener in self._listeners:
            listener.setblocking(False)
            selector.register(listener, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._closing:
                for key, _ in selector.select():
                    if key.fileobj is self._wake_r:
                        return
                    self._accept(key.fileobj)  # type: ignore[arg-type]
        finally:
            selector.close()
            for listener in self._listeners:
                listener.close()

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:  # out of descriptors: refuse this one, keep serving
            log.warning("local server: cannot accept a connection: %s", exc)
            return
        with self._lock:
            if self._closing or len(self._live) >= self.limits.max_connections:
                conn.close()
                return
            self._live.add(conn)
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(
            target=self._serve, args=(conn,), name="localserver-conn", daemon=True
        ).start()

    # ------------------------------------------------------------------ one connection

    def _serve(self, conn: socket.socket) -> None:
        try:
            head = _read_at_least(conn, PEEK, self.limits.first_bytes_s)
            kind = classify(head)
            if kind == "grpc":
                self._to_grpc(conn, head)
            elif kind == "http1":
                self.http(conn, head)
            else:
                if kind == "junk" and head:
                    conn.sendall(_REFUSAL)
                elif kind == "tls":
                    self._tls_refused(conn)
                linger(conn, self.limits.first_bytes_s)
        except OSError:  # timeouts, resets: the connection just ends
            pass
        finally:
            with self._lock:
                self._live.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def _tls_refused(self, conn: socket.socket) -> None:
        """Say on the server's side why a TLS client gets nothing: its TLS library can
        only report a closed connection. Once a minute at most (a client retrying in
        a loop would fill the log); the connection is closed either way."""
        now = time.monotonic()
        with self._lock:
            if self._tls_logged is not None and now - self._tls_logged < TLS_LOG_EVERY_S:
                return
            self._tls_logged = now
        try:
            peer = _address(conn.getpeername())
        except OSError:
            peer = "a client"
        log.warning(
            "local server: %s opened a TLS connection to port %d; this server speaks "
            "plaintext gRPC and HTTP/1.1 only, so the connection was closed. Connect "
            "without TLS: PUBSUB_EMULATOR_HOST=%s for the Google client libraries, an "
            "insecure gRPC channel, or http:// for REST.",
            peer,
            self.port,
            self.address,
        )

    def _to_grpc(self, conn: socket.socket, head: bytes) -> None:
        upstream = _connect(self.upstream)
        delivered = threading.Event()
        with self._lock:
            self._relays.add(delivered)
        try:
            upstream.sendall(head)
            relay(conn, upstream, delivered)
        finally:
            delivered.set()
            with self._lock:
                self._relays.discard(delivered)
            upstream.close()

    # -------------------------------------------------------------------- stopping

    def close_listeners(self) -> None:
        """Accept no more connections (those open go on)."""
        with self._lock:
            self._closing = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join()
        else:
            for listener in self._listeners:
                listener.close()

    def stop(self, grace: float = 0.0) -> None:
        """Close the listeners and end every open connection; first wait up to `grace`
        seconds for each gRPC connection's relay to hand the client every byte the
        (stopped) gRPC server sent it. Without that wait, a call answered during gRPC's
        own shutdown grace lost its answer when its connection was shut down here, and
        its client saw only the shutdown GOAWAY."""
        self.close_listeners()
        deadline = time.monotonic() + grace
        with self._lock:
            relays = list(self._relays)
        for delivered in relays:
            if not delivered.wait(max(0.0, deadline - time.monotonic())):
                break
        with self._lock:
            live = list(self._live)
        for conn in live:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._wake_r.close()
        self._wake_w.close()


_REFUSAL = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 71\r\n\r\n"
    b"This is a Pub/Sub server: speak gRPC (HTTP/2) or HTTP/1.1 JSON (REST).\n"
)


LINGER_BYTES = 256 * 1024


def linger(conn: socket.socket, within: float) -> None:
    """Close politely after a refusal: stop sending, then read and drop what the client
    still sends (up to LINGER_BYTES, for at most `within` seconds, at most 1 s), so
    that the kernel does not answer unread bytes with a reset that could destroy the
    refusal before the client reads it."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + min(within, 1.0)
        dropped = 0
        while dropped < LINGER_BYTES and (left := deadline - time.monotonic()) > 0:
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                return
            dropped += len(chunk)


def _address(sockname: Any) -> str:
    """host:port of a socket address ([host]:port for IPv6)."""
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _read_at_least(conn: socket.socket, n: int, within: float) -> bytes:
    """The first `n` bytes (fewer when the peer closes first); TimeoutError unless
    they all arrive `within` seconds (however they trickle in)."""
    deadline = time.monotonic() + within
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.settimeout(left)
        chunk = conn.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _connect(upstream: str) -> socket.socket:
    if upstream.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(upstream[len("unix:") :])
        except OSError:
            sock.close()
            raise
        return sock
    host, _, port = upstream.rpartition(":")
    sock = socket.create_connection((host.strip("[]"), int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address `host` resolves to, all on one port."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listeners: list[socket.socket] = []
    seen = set()
    for family, kind, proto, _, address in infos:
        if address[0] in seen:
            continue
        seen.add(address[0])
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            bound = listeners[0].getsockname()[1] if listeners else port
            sock.bind((address[0], bound, *address[2:]))
            sock.listen(1024)
        except OSError as exc:
            sock.close()
            if not listeners:
                where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                raise OSError(f"cannot listen on {where}: {exc.strerror or exc}") from None
            log.warning("local server: not listening on %s too: %s", address[0], exc)
            continue
        listeners.append(sock)
    if not listeners:
        raise OSError(f"cannot listen on {host}:{port}: no address")
    return listeners
