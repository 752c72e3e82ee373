"""The Subscriber client the local-server tests use (a module of its own: test
modules import it, and `conftest` names more than one module in the whole suite)."""

from __future__ import annotations

from typing import Any


def make_subscriber(address: str) -> Any:
    """The GAPIC `google.pubsub_v1.SubscriberClient` on a plaintext channel, as
    PUBSUB_EMULATOR_HOST would set it up."""
    from google.pubsub_v1 import SubscriberClient
    from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

    from reconciler.backends.clients import insecure_channel

    return SubscriberClient(transport=SubscriberGrpcTransport(channel=insecure_channel(address)))
