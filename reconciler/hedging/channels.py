"""The clients `PublisherClient` publishes through: the official one, or one per
declared locational endpoint on the same credentials (TLS, as the library builds it).

What the user chose is read once, when the client is built, as the official client
reads it: `PUBSUB_EMULATOR_HOST`, `client_options.api_endpoint`, a `transport`. A
declared endpoint that such a choice overrides is logged once per topic.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from reconciler.hedging.endpoint import EndpointChoice, resolve_endpoint, with_port
from reconciler.hedging.labels import ENDPOINT

log = logging.getLogger("reconciler.hedging")


def _pinned(kwargs: Mapping[str, Any], official: Any) -> tuple[str | None, str]:
    """The endpoint the user pinned, and how they pinned it."""
    if kwargs.get("transport") is not None:
        return with_port(official._target), "the transport passed to PublisherClient"
    options = kwargs.get("client_options")
    endpoint = (
        options.get("api_endpoint") if isinstance(options, Mapping)
        else getattr(options, "api_endpoint", None)
    )
    return (str(endpoint) if endpoint else None), "client_options.api_endpoint"


class Endpoints:
    """Chooses each topic's endpoint and owns the clients of locational endpoints."""

    def __init__(self, official: Any, kwargs: Mapping[str, Any]) -> None:
        self._official = official
        self._target = with_port(official._target)  # what the official client dials
        self._emulator = os.environ.get("PUBSUB_EMULATOR_HOST") or None
        self._pinned, self._pinned_by = _pinned(kwargs, official)
        self._client_info = kwargs.get("client_info")
        self._clients: dict[str, Any] = {}
        self._logged: set[str] = set()
        self._lock = threading.Lock()

    def choose(self, topic: str, labels: Mapping[str, str]) -> EndpointChoice:
        """The topic's endpoint (EndpointLabelError for a bad label)."""
        choice = resolve_endpoint(
            topic,
            labels,
            pinned=self._pinned,
            pinned_by=self._pinned_by,
            emulator=self._emulator,
            default=self._target,
        )
        if choice.overridden is not None:
            with self._lock:
                first = topic not in self._logged
                self._logged.add(topic)
            if first:
                log.log(
                    logging.INFO if self._emulator else logging.WARNING,
                    "topic %s declares the locational endpoint %s (label %s); not used "
                    "because %s: publishing to %s",
                    topic, choice.declared, ENDPOINT, choice.overridden, choice.endpoint,
                )
        return choice

    def client_for(self, endpoint: str) -> Any:
        """A client whose transport dials `endpoint` (the official one for its own)."""
        if endpoint == self._target:
            return self._official
        with self._lock:
            client = self._clients.get(endpoint)
            if client is None:
                client = self._clients[endpoint] = self._locational(endpoint)
            return client

    def _locational(self, endpoint: str) -> Any:
        from google.pubsub_v1 import PublisherClient as GapicPublisherClient

        # The official client's credentials object, so one token serves both channels.
        credentials = getattr(self._official._transport, "_credentials", None)
        extra = {"client_info": self._client_info} if self._client_info else {}
        return GapicPublisherClient(
            credentials=credentials, client_options={"api_endpoint": endpoint}, **extra
        )

    def close(self) -> None:
        """Close the locational clients' channels (not the official one's)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.transport.close()
