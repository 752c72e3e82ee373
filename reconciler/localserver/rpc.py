"""What one RPC method is, independent of gRPC wiring (see `server.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Request metadata naming the region a request "comes from" (for enforceInTransit).
CLIENT_REGION_KEY = "x-reconcile-client-region"


@dataclass(frozen=True)
class CallInfo:
    """Per-call facts a handler may need: the region the request 'comes from'."""

    client_region: str | None


@dataclass(frozen=True)
class Rpc:
    name: str  # short method name: "UpdateTopic"
    handler: Callable[[Any, CallInfo], Any]
    request_type: Any
    response_type: Any
    resource: Callable[[Any], str]  # the resource a fault rule may target
