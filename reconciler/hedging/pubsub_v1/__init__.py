"""`google.cloud.pubsub_v1` with the hedged `PublisherClient`: the one-line swap.

    from reconciler.hedging import pubsub_v1   # was: from google.cloud import pubsub_v1

Everything else publisher code reaches through `pubsub_v1.` is the official object
itself (`types`, `publisher.futures`, `publisher.exceptions`, `SubscriberClient`,
...), so code written against the official API runs unchanged; `from
google.cloud.pubsub_v1.types import ...` lines can stay as they are (the same
classes). `HedgingSettings` is added beside the official names.
"""

from __future__ import annotations

from google.cloud.pubsub_v1 import (
    SchemaServiceClient,
    SubscriberClient,
    exceptions,
    futures,
    subscriber,
)

from reconciler.hedging.client import PublisherClient
from reconciler.hedging.pubsub_v1 import publisher, types
from reconciler.hedging.settings import HedgingSettings

__all__ = (
    "HedgingSettings",
    "PublisherClient",
    "SchemaServiceClient",
    "SubscriberClient",
    "exceptions",
    "futures",
    "publisher",
    "subscriber",
    "types",
)
