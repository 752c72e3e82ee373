"""Which service a command talks to: `--local`, `--emulator HOST:PORT` (or
PUBSUB_EMULATOR_HOST), or Google Cloud with Application Default Credentials.

    TargetOptions(local, emulator, org_policy, timeout, state_dir)   the command line's
    open_backend(options, policy_store=None, local_seed=None, client_retry=True)

The opened backend states what it is (`BackendInfo`: kind, address, whether it is
Google's emulator, where its org policy comes from). `org_policy` (the --org-policy
FILE) always wins over the Org Policy API: the source of the org policy (snapshot or
API) is decided here, once, and the backend's `effective_policy(project)` answers
from it. `client_retry=False` (apply) turns off the client library's own retry, so
that apply's bounded, counted retry is the only one. `local_seed` (the spec tree's
org-policy snapshot) gives a brand-new embedded server the same org policy the specs
were validated against, so a first `--local` run behaves like the organisation it
models; an existing local state is never overwritten. Credentials
and tokens are never printed; a credentials problem becomes a BackendError with
google-auth's reason (backends/credentials.py).

Deadlines (backends/deadline.py): an emulator is connected to when opened (within
CONNECT_TIMEOUT, or `timeout` if shorter), a Google Cloud service before its first
call (within `timeout`), so that an unreachable or silent endpoint fails naming its
address; every call after that ends within `timeout`, the library's retries included.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from reconciler.backends.base import BackendInfo, TargetOptions
from reconciler.backends.clients import (
    cloud_monitoring_client,
    cloud_orgpolicy_client,
    cloud_publisher_client,
    monitoring_client,
    orgpolicy_client,
    publisher_client,
)
from reconciler.backends.credentials import default_credentials
from reconciler.backends.deadline import ConnectFirst, seconds_text, wait_ready
from reconciler.backends.gcp import GcpBackend
from reconciler.errors import BackendError, UsageError
from reconciler.localstate import local_state_dir, shown
from reconciler.orgpolicy.snapshot import load_snapshot
from reconciler.orgpolicy.store import PolicyStore

EMULATOR_ENV = "PUBSUB_EMULATOR_HOST"


def emulator_address(emulator: str | None) -> str | None:
    """--emulator, else PUBSUB_EMULATOR_HOST, else None (real Google Cloud)."""
    address = emulator or os.environ.get(EMULATOR_ENV) or None
    if address is not None and (":" not in address or not address.rsplit(":", 1)[1].isdigit()):
        source = "--emulator" if emulator else EMULATOR_ENV
        raise UsageError(f"{source} must be HOST:PORT, got {address!r}")
    return address


def open_backend(
    options: TargetOptions,
    policy_store: PolicyStore | None = None,
    local_seed: PolicyStore | None = None,
    client_retry: bool = True,
) -> GcpBackend:
    """Build the backend for the chosen target (the caller closes it); every call it
    makes ends within `options.timeout` seconds. `policy_store`: the --org-policy
    snapshot when the caller has loaded it already."""
    if options.local and options.emulator:
        raise UsageError("--local and --emulator are alternatives; pass one of them")
    store = policy_store
    snapshot = options.org_policy
    if snapshot is not None and store is None:
        if not snapshot.exists():  # the reader names anything else
            raise UsageError(f"{snapshot}: org-policy file not found")
        store = load_snapshot(snapshot)
    source = BackendInfo()
    if snapshot is not None:
        source = BackendInfo(org_policy="snapshot", snapshot=str(snapshot))
    settings: dict[str, Any] = {
        "policy_store": store,
        "client_retry": client_retry,
        "timeout": options.timeout,
    }
    if options.local:
        state_dir = options.state_dir or local_state_dir()
        return _local(settings, source, local_seed, state_dir)
    address = emulator_address(options.emulator)
    if address is not None:
        return _emulator(address, settings, source)
    return _google_cloud(settings, source)


def _clients(address: str, with_orgpolicy: bool) -> tuple[Any, Any]:
    orgpolicy = orgpolicy_client(address) if with_orgpolicy else None
    return publisher_client(address), orgpolicy


def _local(
    options: dict[str, Any], source: BackendInfo, seed: PolicyStore | None, state_dir: Path
) -> GcpBackend:
    from reconciler.localserver import LocalServer

    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fresh = not any(state_dir.iterdir())
    except OSError as exc:
        raise UsageError(
            f"cannot use the local state directory {state_dir}: {exc.strerror}",
            hint="--local keeps its state in .reconcile/local/ at the specs' repository "
            "root: make it writable, or run the local server elsewhere and use --emulator",
        ) from None
    # Its messages (e.g. the --recover command) name the dir as the user would type it.
    server = LocalServer(state_dir=Path(shown(str(state_dir))), host="127.0.0.1", port=0)
    server.start()
    if fresh and seed is not None:
        server.seed_policies(seed)
    try:
        publisher, orgpolicy = _clients(server.address, options["policy_store"] is None)
    except BaseException:
        server.stop()
        raise
    info = replace(source, kind="local", address=str(state_dir))
    address = server.address
    return GcpBackend(
        publisher,
        orgpolicy,
        info,
        on_close=server.stop,
        metrics_client=lambda: (monitoring_client(address), address),
        **options,
    )


# An emulator is local or nearby: a handshake slower than this is a wrong address.
CONNECT_TIMEOUT = 5.0


def _emulator(address: str, options: dict[str, Any], source: BackendInfo) -> GcpBackend:
    publisher, orgpolicy = _clients(address, options["policy_store"] is None)
    info = replace(source, kind="emulator", address=address)
    backend = GcpBackend(
        publisher,
        orgpolicy,
        info,
        metrics_client=lambda: (monitoring_client(address), address),
        **options,
    )
    budget = min(CONNECT_TIMEOUT, options["timeout"])
    if wait_ready({address: publisher.transport.grpc_channel}, budget):
        backend.close()
        raise BackendError(
            f"cannot connect to the emulator at {address} (no answer within "
            f"{seconds_text(budget)})",
            hint="start it (e.g. `reconcile local-server --port PORT`), or fix --emulator "
            "/ PUBSUB_EMULATOR_HOST",
        )
    backend.detect_google_emulator()
    return backend


def _google_cloud(options: dict[str, Any], source: BackendInfo) -> GcpBackend:
    credentials = default_credentials()
    timeout = options["timeout"]
    publisher = ConnectFirst(*cloud_publisher_client(credentials), timeout)
    orgpolicy = None
    if options["policy_store"] is None:
        orgpolicy = ConnectFirst(*cloud_orgpolicy_client(credentials), timeout)
    return GcpBackend(
        publisher,
        orgpolicy,
        source,
        metrics_client=lambda: cloud_monitoring_client(credentials),
        **options,
    )
