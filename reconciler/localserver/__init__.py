"""Loopback gRPC Pub/Sub + Org Policy server: the product's embedded backend and the
test bed. See `LocalServer`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.localserver.identity import CAPABILITIES_METHOD, CLIENT_REGION_KEY, SERVER_NAME

if TYPE_CHECKING:
    from reconciler.localserver.server import LocalServer

__all__ = ["CAPABILITIES_METHOD", "CLIENT_REGION_KEY", "SERVER_NAME", "LocalServer"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (e.g. for CLIENT_REGION_KEY) must not load grpc.
    if name == "LocalServer":
        from reconciler.localserver.server import LocalServer

        return LocalServer
    raise AttributeError(name)
