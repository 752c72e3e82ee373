"""The Subscriber client the local-server tests use (a module of its own: test
modules import it, and `conftest` names more than one module in the whole suite)."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any


def make_subscriber(address: str) -> Any:
    """The GAPIC `google.pubsub_v1.SubscriberClient` on a plaintext channel, as
    PUBSUB_EMULATOR_HOST would set it up."""
    from reconciler.backends.clients import subscriber_client

    return subscriber_client(address)


def queued_requests(q: queue.Queue[Any]) -> Iterator[Any]:
    """A StreamingPull request stream that stays open until None is queued: an
    iterator that ends half-closes the stream, and the server may end it before
    delivering anything."""
    while True:
        item = q.get()
        if item is None:
            return
        yield item
