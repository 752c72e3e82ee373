"""Turn off the client library's own retry so that apply's retry is the only one.

The GAPIC defaults retry UNAVAILABLE (only) for up to 600 s per call, invisibly: a
20%-flaky service would look healthy, attempts would not be counted, Ctrl-C would wait
on hidden backoffs, and two retry layers would multiply. `retry=None` per call keeps
the per-attempt `timeout` the backend passes and leaves retrying to
`reconciler.apply.retry` (all five transient codes, bounded, never permanent ones).

A thin proxy over the backend's public `publisher`/`orgpolicy` clients, until the
backend takes a retry setting itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RPC_METHODS = frozenset(
    {
        "create_topic",
        "update_topic",
        "delete_topic",
        "get_topic",
        "list_topics",
        "get_effective_policy",
    }
)


class NoClientRetry:
    """Forwards everything; the topic/policy RPC methods get `retry=None` by default."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in RPC_METHODS or not callable(attr):
            return attr
        method: Callable[..., Any] = attr

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("retry", None)
            return method(*args, **kwargs)

        return call


def disable_client_retry(backend: Any) -> None:
    """Wrap the backend's clients in place (no-op for backends without them)."""
    for attr in ("publisher", "orgpolicy"):
        client = getattr(backend, attr, None)
        if client is not None and not isinstance(client, NoClientRetry):
            setattr(backend, attr, NoClientRetry(client))
