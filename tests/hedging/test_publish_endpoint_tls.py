"""A locational endpoint's channel is TLS with the official client's credentials: a
real gRPC server on loopback with a self-signed certificate answers Publish and sees
the TLS handshake and the bearer token.

`REGION-pubsub.googleapis.com` cannot be made to resolve to loopback without touching
the machine, so this drives the channel factory (`Endpoints.client_for`) with the
server's address; which endpoint a topic gets is tested in test_publish_endpoint.py. The
client runs in a subprocess because gRPC reads GRPC_DEFAULT_SSL_ROOTS_FILE_PATH once
per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.pubsub_v1.types import PublishRequest, PublishResponse

from tests.tls_support import self_signed

GUARD_SECONDS = 90  # only against a hang; nothing asserts a duration
TOPIC = "projects/tls/topics/orders"

CLIENT = """
import sys
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials
from reconciler.hedging.channels import Endpoints
from reconciler.hedging.publisher import HedgedPublisher

official = pubsub_v1.PublisherClient(credentials=Credentials(token="test-token"))
endpoints = Endpoints(official, {})
client = endpoints.client_for(sys.argv[1])
assert client is not official and client is endpoints.client_for(sys.argv[1])
with HedgedPublisher(client, sys.argv[2]) as publisher:
    print(publisher.publish(b"over-tls").result(timeout=30))
endpoints.close()
"""


@dataclass
class Seen:
    security: list[bytes] = field(default_factory=list)
    authorization: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def tls_publish_server(tmp_path: Path) -> Iterator[tuple[str, Path, Seen]]:
    """A TLS gRPC server on loopback answering Publish: (host:port, CA file, what it saw)."""
    cert_pem, key_pem = self_signed()
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(cert_pem)
    seen = Seen()

    def publish(raw: bytes, context: grpc.ServicerContext) -> bytes:
        request = PublishRequest.deserialize(raw)
        with seen.lock:
            seen.security.extend(context.auth_context().get("transport_security_type", []))
            seen.authorization.extend(
                str(v) for k, v in context.invocation_metadata() if k == "authorization"
            )
            seen.topics.append(request.topic)
        ids = [f"tls-{i}" for i in range(len(request.messages))]
        return PublishResponse.serialize(PublishResponse(message_ids=ids))

    class Handler(grpc.GenericRpcHandler):
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            if details.method == "/google.pubsub.v1.Publisher/Publish":  # type: ignore[attr-defined]
                return grpc.unary_unary_rpc_method_handler(publish)
            return None

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_secure_port(
        "127.0.0.1:0", grpc.ssl_server_credentials([(key_pem, cert_pem)])
    )
    server.start()
    try:
        yield f"127.0.0.1:{port}", ca_file, seen
    finally:
        server.stop(grace=None)


def test_a_locational_channel_is_tls_with_the_official_clients_credentials(
    tls_publish_server: tuple[str, Path, Seen],
) -> None:
    address, ca_file, seen = tls_publish_server
    env = {
        k: v for k, v in os.environ.items()
        if k != "PUBSUB_EMULATOR_HOST" and k != "GOOGLE_APPLICATION_CREDENTIALS"
    }
    env["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(ca_file)
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, address, TOPIC],
        capture_output=True, text=True, env=env, timeout=GUARD_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tls-0"
    assert seen.topics == [TOPIC]
    assert seen.security == [b"ssl"]
    assert seen.authorization == ["Bearer test-token"]
