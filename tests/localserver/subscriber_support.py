"""The Subscriber client the local-server tests use (a module of its own: test
modules import it, and `conftest` names more than one module in the whole suite)."""

from __future__ import annotations

from typing import Any


def make_subscriber(address: str) -> Any:
    """The GAPIC `google.pubsub_v1.SubscriberClient` on a plaintext channel, as
    PUBSUB_EMULATOR_HOST would set it up."""
    from reconciler.backends.clients import subscriber_client

    return subscriber_client(address)
