"""Publish hedging: the profile, its topic labels and the hedged publisher.

`from reconciler.hedging import pubsub_v1` is the one-line swap for
`from google.cloud import pubsub_v1` (docs/hedging.md). `PublisherClient` (the
drop-in for google.cloud.pubsub_v1.PublisherClient), `HedgedPublisher` and the
`pubsub_v1` module are loaded lazily so that `reconciler.hedging.profile` (used by
`reconcile validate`) and the advisor never import google-cloud or gRPC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.hedging.errors import PublisherClosedError, PublishNotSent, PublishOutcomeUnknown
from reconciler.hedging.settings import HedgingSettings

if TYPE_CHECKING:
    from reconciler.hedging.client import PublisherClient
    from reconciler.hedging.publisher import HedgedPublisher
    from reconciler.hedging.stats import HedgingCounters

__all__ = [
    "HedgedPublisher",
    "HedgingCounters",
    "HedgingSettings",
    "PublishNotSent",
    "PublishOutcomeUnknown",
    "PublisherClient",
    "PublisherClosedError",
]
_LAZY = {
    "PublisherClient": "reconciler.hedging.client",
    "HedgedPublisher": "reconciler.hedging.publisher",
    "HedgingCounters": "reconciler.hedging.stats",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
