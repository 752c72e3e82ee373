"""Real Google client libraries pointed at a plaintext address (the local server or an
emulator): the same classes the Google Cloud path uses, over an insecure channel, with
no credentials involved. Google imports happen on call, not at module import."""

from __future__ import annotations

from typing import Any

_CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
)


def insecure_channel(address: str) -> Any:
    """A plaintext gRPC channel to host:port."""
    import grpc

    return grpc.insecure_channel(address, options=list(_CHANNEL_OPTIONS))


def publisher_client(address: str) -> Any:
    """A `google.pubsub_v1.PublisherClient` (the GAPIC client: create/get/update/list/
    delete topics, raw Publish) talking to `address` without TLS or credentials."""
    from google.pubsub_v1 import PublisherClient
    from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport

    transport = PublisherGrpcTransport(channel=insecure_channel(address))
    return PublisherClient(transport=transport)


def batching_publisher_client(address: str) -> Any:
    """A `google.cloud.pubsub_v1.PublisherClient` (batching `publish(topic, data)`)
    talking to `address`, the way PUBSUB_EMULATOR_HOST would set it up."""
    from google.cloud.pubsub_v1 import PublisherClient
    from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport

    transport = PublisherGrpcTransport(channel=insecure_channel(address))
    return PublisherClient(transport=transport)


def orgpolicy_client(address: str) -> Any:
    """A `google.cloud.orgpolicy_v2.OrgPolicyClient` talking to `address` in plaintext."""
    from google.cloud.orgpolicy_v2 import OrgPolicyClient
    from google.cloud.orgpolicy_v2.services.org_policy.transports import OrgPolicyGrpcTransport

    transport = OrgPolicyGrpcTransport(channel=insecure_channel(address))
    return OrgPolicyClient(transport=transport)
