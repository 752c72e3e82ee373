"""Names a client needs to talk to the local server, importable without grpc."""

# Request metadata naming the region a request "comes from" (for enforceInTransit).
CLIENT_REGION_KEY = "x-reconcile-client-region"
# An RPC only this server answers (bytes in, JSON out: {"server": SERVER_NAME, ...}),
# so that a client can tell it from Google's emulator by asking, not by guessing.
CAPABILITIES_METHOD = "/reconcile.localserver.v1.LocalServer/GetCapabilities"
SERVER_NAME = "reconcile-local-server"
