"""Loopback gRPC Pub/Sub + Org Policy + Resource Manager + Monitoring server: the
product's embedded backend and the test bed. See `LocalServer`.

The names below are the package's entry points: code outside it (the `local-server`
command, the backends, benchmarks) imports them from here, never from the rooms
inside (docs/architecture.md lists the rooms and the contracts between them).
Importing the package loads no grpc: each name is imported from its room when it
is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.localserver.identity import CAPABILITIES_METHOD, CLIENT_REGION_KEY, SERVER_NAME

if TYPE_CHECKING:
    from reconciler.localserver.faults.faultspec import parse_fault_spec
    from reconciler.localserver.persistence.journal import StateInUse
    from reconciler.localserver.pubsub.exports import check_key as check_destination_key
    from reconciler.localserver.pubsub.messages import DEFAULT_KEEP_MESSAGES, DEFAULT_MAX_BACKLOG
    from reconciler.localserver.server import MAX_WORKERS, LocalServer, SeedConflict, method_names
    from reconciler.localserver.transport.front import Limits

__all__ = [
    "CAPABILITIES_METHOD",
    "CLIENT_REGION_KEY",
    "DEFAULT_KEEP_MESSAGES",
    "DEFAULT_MAX_BACKLOG",
    "MAX_WORKERS",
    "SERVER_NAME",
    "Limits",
    "LocalServer",
    "SeedConflict",
    "StateInUse",
    "check_destination_key",
    "method_names",
    "parse_fault_spec",
]


def __getattr__(name: str) -> Any:
    # Lazy: the command reads its option defaults and checks its options before any
    # server (and grpc) is loaded.
    module: Any
    if name in ("LocalServer", "SeedConflict", "method_names", "MAX_WORKERS"):
        from reconciler.localserver import server as module
    elif name == "Limits":
        from reconciler.localserver.transport import front as module
    elif name == "StateInUse":
        from reconciler.localserver.persistence import journal as module
    elif name == "parse_fault_spec":
        from reconciler.localserver.faults import faultspec as module
    elif name in ("DEFAULT_KEEP_MESSAGES", "DEFAULT_MAX_BACKLOG"):
        from reconciler.localserver.pubsub import messages as module
    elif name == "check_destination_key":
        from reconciler.localserver.pubsub import exports

        return exports.check_key
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
