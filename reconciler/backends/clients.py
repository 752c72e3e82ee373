"""Real Google client libraries pointed at a plaintext address (the local server or an
emulator): the same classes the Google Cloud path uses, over an insecure channel, with
no credentials involved; and the Google Cloud clients themselves (TLS, credentials,
endpoint overridable). Google imports happen on call, not at module import."""

from __future__ import annotations

import contextlib
import os
from typing import Any

_CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
)


def close_client(client: Any) -> None:
    """Close a client's transport, if it has one; closing must not mask the outcome of
    what the client was used for."""
    transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
    closer = getattr(transport, "close", None)
    if callable(closer):
        with contextlib.suppress(Exception):
            closer()


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


def schema_client(address: str) -> Any:
    """A `google.pubsub_v1.SchemaServiceClient` talking to `address` without TLS or
    credentials."""
    from google.pubsub_v1 import SchemaServiceClient
    from google.pubsub_v1.services.schema_service.transports import SchemaServiceGrpcTransport

    transport = SchemaServiceGrpcTransport(channel=insecure_channel(address))
    return SchemaServiceClient(transport=transport)


def subscriber_client(address: str) -> Any:
    """A `google.pubsub_v1.SubscriberClient` (the GAPIC client: subscriptions, Pull)
    talking to `address` without TLS or credentials."""
    from google.pubsub_v1 import SubscriberClient
    from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

    transport = SubscriberGrpcTransport(channel=insecure_channel(address))
    return SubscriberClient(transport=transport)


def orgpolicy_client(address: str) -> Any:
    """A `google.cloud.orgpolicy_v2.OrgPolicyClient` talking to `address` in plaintext."""
    from google.cloud.orgpolicy_v2 import OrgPolicyClient
    from google.cloud.orgpolicy_v2.services.org_policy.transports import OrgPolicyGrpcTransport

    transport = OrgPolicyGrpcTransport(channel=insecure_channel(address))
    return OrgPolicyClient(transport=transport)


def resourcemanager_clients(address: str) -> tuple[Any, Any]:
    """Resource Manager v3's `ProjectsClient` and `FoldersClient` talking to `address`
    in plaintext, over one channel."""
    from google.cloud.resourcemanager_v3 import FoldersClient, ProjectsClient
    from google.cloud.resourcemanager_v3.services.folders.transports import (
        FoldersGrpcTransport,
    )
    from google.cloud.resourcemanager_v3.services.projects.transports import (
        ProjectsGrpcTransport,
    )

    channel = insecure_channel(address)
    return (
        ProjectsClient(transport=ProjectsGrpcTransport(channel=channel)),
        FoldersClient(transport=FoldersGrpcTransport(channel=channel)),
    )


def tagbindings_client(address: str) -> Any:
    """Resource Manager v3's `TagBindingsClient` talking to `address` (what a topic's
    tags are bound as: `Topic.tags` is input-only)."""
    from google.cloud.resourcemanager_v3 import TagBindingsClient
    from google.cloud.resourcemanager_v3.services.tag_bindings.transports import (
        TagBindingsGrpcTransport,
    )

    return TagBindingsClient(transport=TagBindingsGrpcTransport(channel=insecure_channel(address)))


def monitoring_client(address: str) -> Any:
    """A `google.cloud.monitoring_v3.MetricServiceClient` talking to `address` in
    plaintext (the local server serves `ListTimeSeries` on its one port)."""
    from google.cloud.monitoring_v3 import MetricServiceClient
    from google.cloud.monitoring_v3.services.metric_service.transports import (
        MetricServiceGrpcTransport,
    )

    transport = MetricServiceGrpcTransport(channel=insecure_channel(address))
    return MetricServiceClient(transport=transport)


# Google Cloud endpoints can be overridden (a locational or Private Service Connect
# endpoint, or a test's listener); the default is the library's own.
PUBSUB_ENDPOINT_ENV = "RECONCILE_PUBSUB_ENDPOINT"
ORGPOLICY_ENDPOINT_ENV = "RECONCILE_ORGPOLICY_ENDPOINT"
MONITORING_ENDPOINT_ENV = "RECONCILE_MONITORING_ENDPOINT"
RESOURCEMANAGER_ENDPOINT_ENV = "RECONCILE_RESOURCEMANAGER_ENDPOINT"


def _endpoint(override: str | None, default: str) -> str:
    """host:port as gRPC dials it (the libraries add :443 to a bare host)."""
    address = override or default
    return address if ":" in address else f"{address}:443"


def _cloud(client_class: Any, credentials: Any, endpoint_env: str) -> tuple[Any, str]:
    """A GAPIC client for Google Cloud (TLS, `credentials`, the endpoint `endpoint_env`
    may override), and the endpoint it dials."""
    override = os.environ.get(endpoint_env) or None
    options = {"api_endpoint": override} if override else None
    client = client_class(credentials=credentials, client_options=options)
    return client, _endpoint(override, client.api_endpoint)


def cloud_publisher_client(credentials: Any) -> tuple[Any, str]:
    """The GAPIC PublisherClient for Google Cloud, and its endpoint."""
    from google.pubsub_v1 import PublisherClient

    return _cloud(PublisherClient, credentials, PUBSUB_ENDPOINT_ENV)


def cloud_subscriber_client(credentials: Any) -> tuple[Any, str]:
    """The GAPIC SubscriberClient for Google Cloud (the Pub/Sub endpoint), and its endpoint."""
    from google.pubsub_v1 import SubscriberClient

    return _cloud(SubscriberClient, credentials, PUBSUB_ENDPOINT_ENV)


def cloud_orgpolicy_client(credentials: Any) -> tuple[Any, str]:
    """The OrgPolicyClient for Google Cloud, and its endpoint."""
    from google.cloud.orgpolicy_v2 import OrgPolicyClient

    return _cloud(OrgPolicyClient, credentials, ORGPOLICY_ENDPOINT_ENV)


def cloud_resourcemanager_clients(credentials: Any) -> tuple[tuple[Any, str], tuple[Any, str]]:
    """Resource Manager v3's ProjectsClient and FoldersClient for Google Cloud, each
    with its endpoint."""
    from google.cloud.resourcemanager_v3 import FoldersClient, ProjectsClient

    return (
        _cloud(ProjectsClient, credentials, RESOURCEMANAGER_ENDPOINT_ENV),
        _cloud(FoldersClient, credentials, RESOURCEMANAGER_ENDPOINT_ENV),
    )


def cloud_monitoring_client(credentials: Any) -> tuple[Any, str]:
    """The MetricServiceClient for Google Cloud, and its endpoint."""
    from google.cloud.monitoring_v3 import MetricServiceClient

    return _cloud(MetricServiceClient, credentials, MONITORING_ENDPOINT_ENV)


def cloud_tagbindings_client(credentials: Any) -> tuple[Any, str]:
    """Resource Manager v3's TagBindingsClient for Google Cloud, and its endpoint."""
    from google.cloud.resourcemanager_v3 import TagBindingsClient

    return _cloud(TagBindingsClient, credentials, RESOURCEMANAGER_ENDPOINT_ENV)
