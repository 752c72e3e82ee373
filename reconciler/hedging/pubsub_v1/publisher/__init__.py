"""`google.cloud.pubsub_v1.publisher` with the hedged `Client`; its `futures`,
`exceptions` and `flow_controller` are the official modules."""

from __future__ import annotations

from google.cloud.pubsub_v1.publisher import exceptions, flow_controller, futures

from reconciler.hedging.client import PublisherClient as Client

__all__ = ("Client", "exceptions", "flow_controller", "futures")
