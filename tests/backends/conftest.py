"""Fixtures for deadline and credential tests: a blackholed endpoint (a real TCP
listener that accepts and never answers), a syntactically valid fake service-account
key, a spec tree, and `reconcile` run as a subprocess under a generous guard timeout
(so that a regression hangs one test for a minute, not the suite forever)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import cli_support
from tests.cli_support import CliResult

# Only a guard against a hang: the tests assert exit codes and messages, not durations.
GUARD_SECONDS = 90


class Blackhole:
    """A listener that accepts every connection and never sends a byte, so neither a
    TLS nor an HTTP/2 handshake ever completes."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.05)  # so the accepting thread sees `stop` promptly
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, name="blackhole", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.listener.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def blackholes() -> Iterator[Callable[[], str]]:
    """Make blackholed endpoints (host:port), closed after the test."""
    made: list[Blackhole] = []

    def make() -> str:
        made.append(Blackhole())
        return made[-1].address

    try:
        yield make
    finally:
        for hole in made:
            hole.close()


@pytest.fixture
def blackhole(blackholes: Callable[[], str]) -> str:
    """One blackholed endpoint, host:port."""
    return blackholes()


@pytest.fixture
def fake_key(tmp_path: Path, blackhole: str) -> Path:
    """A service-account key file google-auth accepts (a fresh RSA key), whose token
    endpoint is the blackhole too, so that nothing can reach Google."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "proj-a",
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": "reconcile-test@proj-a.iam.gserviceaccount.com",
        "client_id": "100000000000000000000",
        "token_uri": f"http://{blackhole}/token",
    }
    path = tmp_path / "fake-key.json"
    path.write_text(json.dumps(info))
    return path


TOPIC_DOC = """apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: proj-a, name: orders}
spec:
  labels: {team: payments}
"""


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text(TOPIC_DOC)
    return root


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    """An empty org-policy snapshot (no policy: the constraints' defaults)."""
    path = tmp_path / "org-policy.yaml"
    path.write_text("[]\n")
    return path


@pytest.fixture
def reconcile_process(tmp_path: Path) -> Callable[..., CliResult]:
    """`reconcile ARGS...` as its own process (cwd: tmp_path) in a clean environment
    (no emulator, no credentials, no endpoint overrides leaking in) plus `env`, under
    the guard timeout: the suite's process runner (tests/cli_support.py)."""

    def run(*args: str, env: dict[str, str] | None = None) -> CliResult:
        return cli_support.reconcile_process(*args, cwd=tmp_path, env=env, timeout=GUARD_SECONDS)

    return run


@pytest.fixture
def silent_tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real gRPC server over TLS (a self-signed certificate for 127.0.0.1) that
    completes every handshake and never answers a call: (host:port, CA file for
    GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)."""
    from concurrent import futures

    import grpc

    from tests.tls_support import self_signed

    cert_pem, key_pem = self_signed()
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(cert_pem)
    release = threading.Event()

    def never_answer(request: bytes, context: grpc.ServicerContext) -> bytes:
        release.wait(GUARD_SECONDS)
        context.abort(grpc.StatusCode.UNAVAILABLE, "test server stopping")
        return b""

    class Silent(grpc.GenericRpcHandler):
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(never_answer)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((Silent(),))
    creds = grpc.ssl_server_credentials([(key_pem, cert_pem)])
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        yield f"127.0.0.1:{port}", ca_file
    finally:
        release.set()
        server.stop(grace=None)
