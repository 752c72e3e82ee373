"""Suite-wide fixtures: a real loopback Pub/Sub + Org Policy server and real Google
clients talking to it over gRPC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def local_server() -> Iterator[Any]:
    """An in-memory `LocalServer` on a free loopback port, stopped after the test."""
    from reconciler.localserver import LocalServer

    server = LocalServer(fault_seed=1234)
    server.start()
    try:
        yield server
    finally:
        server.stop(grace=None)


@pytest.fixture
def publisher_client(local_server: Any) -> Iterator[Any]:
    """A real `google.pubsub_v1.PublisherClient` pointed at `local_server`."""
    from reconciler.backends.clients import publisher_client

    client = publisher_client(local_server.address)
    yield client
    client.transport.close()


@pytest.fixture
def orgpolicy_client(local_server: Any) -> Iterator[Any]:
    """A real `google.cloud.orgpolicy_v2.OrgPolicyClient` pointed at `local_server`."""
    from reconciler.backends.clients import orgpolicy_client

    client = orgpolicy_client(local_server.address)
    yield client
    client.transport.close()
