"""Loopback gRPC Pub/Sub + Org Policy server: the product's embedded backend and the
test bed. See `LocalServer`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.localserver.server import LocalServer

__all__ = ["CAPABILITIES_METHOD", "CLIENT_REGION_KEY", "SERVER_NAME", "LocalServer"]

CLIENT_REGION_KEY = "x-reconcile-client-region"
# An RPC only this server answers (bytes in, JSON out: {"server": SERVER_NAME, ...}),
# so that a client can tell it from Google's emulator by asking, not by guessing.
CAPABILITIES_METHOD = "/reconcile.localserver.v1.LocalServer/GetCapabilities"
SERVER_NAME = "reconcile-local-server"


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (e.g. for CLIENT_REGION_KEY) must not load grpc.
    if name == "LocalServer":
        from reconciler.localserver.server import LocalServer

        return LocalServer
    raise AttributeError(name)
