"""What one RPC method is, independent of gRPC wiring (see `server.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Request metadata naming the region a request "comes from" (for enforceInTransit).
CLIENT_REGION_KEY = "x-reconcile-client-region"
# An RPC only this server answers (bytes in, JSON out: {"server": SERVER_NAME, ...}),
# so that a client can tell it from Google's emulator by asking, not by guessing.
CAPABILITIES_METHOD = "/reconcile.localserver.v1.LocalServer/GetCapabilities"
SERVER_NAME = "reconcile-local-server"


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Per-call facts a handler may need: the region the request 'comes from', and
    for a `raw` RPC the request's own bytes (its size is a limit; journaling them
    costs no second serialization)."""

    client_region: str | None
    raw: bytes = b""
    notes: dict[str, Any] = field(default_factory=dict)  # what a handler tells the dispatcher


@dataclass(frozen=True)
class Rpc:
    name: str  # short method name: "UpdateTopic"
    handler: Callable[[Any, CallInfo], Any]
    request_type: Any
    response_type: Any
    resource: Callable[[Any], str]  # the resource a fault rule may target
    raw: bool = False  # the handler also gets the request bytes (CallInfo.raw)
    stream: bool = False  # bidirectional streaming: the handler opens a stream object
