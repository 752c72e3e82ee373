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
models; an existing local state is never overwritten. While `reconcile local-server`
serves the local state, `--local` talks to it (reconciler/localstate.py). Google's
emulator serves no Org Policy API: there the spec tree's snapshot answers, unless
--org-policy names one (`BackendInfo.snapshot_fallback` says so). Credentials
and tokens are never printed; a credentials problem becomes a BackendError with
google-auth's reason (backends/credentials.py).

Deadlines (backends/deadline.py): an emulator is connected to when opened (within
CONNECT_TIMEOUT, or `timeout` if shorter), a Google Cloud service before its first
call (within `timeout`), so that an unreachable or silent endpoint fails naming its
address; every call after that ends within `timeout`, the library's retries included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from reconciler.backends.base import BackendInfo, TargetOptions
from reconciler.backends.client_backend import ClientBackend, is_google_emulator
from reconciler.backends.clients import (
    close_client,
    cloud_monitoring_client,
    cloud_orgpolicy_client,
    cloud_publisher_client,
    cloud_resourcemanager_clients,
    cloud_subscriber_client,
    cloud_tagbindings_client,
    monitoring_client,
    orgpolicy_client,
    publisher_client,
    resourcemanager_clients,
    subscriber_client,
    tagbindings_client,
)
from reconciler.backends.credentials import default_credentials
from reconciler.backends.deadline import ConnectFirst, seconds_text, wait_ready
from reconciler.backends.promql import cloud_promql, local_promql
from reconciler.backends.target import emulator_address, snapshot_sha256, target_info
from reconciler.errors import BackendError, UsageError
from reconciler.localstate import (
    SERVER_FILE,
    prepare_state_dir,
    running_server,
    shown,
)
from reconciler.orgpolicy.snapshot import load_snapshot
from reconciler.orgpolicy.store import PolicyStore


def open_backend(
    options: TargetOptions,
    policy_store: PolicyStore | None = None,
    local_seed: PolicyStore | None = None,
    client_retry: bool = True,
    tree_snapshot: tuple[Path, PolicyStore] | None = None,
) -> ClientBackend:
    """Build the backend for the chosen target (the caller closes it); every call it
    makes ends within `options.timeout` seconds. `policy_store`: the --org-policy
    snapshot when the caller has loaded it already; `tree_snapshot`: the spec tree's
    own snapshot (path, store), used where --emulator serves no Org Policy API."""
    if options.local and options.emulator:
        raise UsageError("--local and --emulator are alternatives; pass one of them")
    store = policy_store
    snapshot = options.org_policy
    if snapshot is not None and store is None:
        if not snapshot.exists():  # the reader names anything else
            raise UsageError(f"{snapshot}: org-policy file not found")
        store = load_snapshot(snapshot)
    info = target_info(options)
    settings: dict[str, Any] = {
        "policy_store": store,
        "client_retry": client_retry,
        "timeout": options.timeout,
    }
    if info.kind == "local":
        return _local(settings, info, local_seed, Path(info.address))
    if info.kind == "emulator":
        return _emulator(info.address, settings, info, None if store else tree_snapshot)
    return _google_cloud(settings, info)


def _clients(address: str, with_orgpolicy: bool) -> tuple[Any, Any]:
    orgpolicy = orgpolicy_client(address) if with_orgpolicy else None
    return publisher_client(address), orgpolicy


def open_tag_bindings(options: TargetOptions) -> ClientBackend:
    """A backend that only reads tag bindings (`tag_bindings`), for a plan whose live
    state the read-ahead process read (not for --local: the read-ahead never serves
    it)."""
    address = emulator_address(options.emulator)
    if address is not None:
        return ClientBackend(
            None, None, BackendInfo(kind="emulator", address=address),
            tagbindings=lambda: tagbindings_client(address), timeout=options.timeout,
        )
    credentials = default_credentials()
    return ClientBackend(
        None, None, BackendInfo(),
        tagbindings=lambda: ConnectFirst(*cloud_tagbindings_client(credentials),
                                         options.timeout),
        timeout=options.timeout,
    )


def _local(
    options: dict[str, Any], info: BackendInfo, seed: PolicyStore | None, state_dir: Path
) -> ClientBackend:
    """The local state, served by the `reconcile local-server` that holds it when one
    runs (so that both see the same topics), else by a server embedded in this
    process for the command's duration."""
    from reconciler.localserver import LocalServer, StateInUse

    try:
        prepare_state_dir(state_dir)
        fresh = not any(p.name != SERVER_FILE for p in state_dir.iterdir())
    except OSError as exc:
        raise UsageError(
            f"cannot use the local state directory {state_dir}: {exc.strerror}",
            hint="--local keeps its state in .reconcile/local/ at the specs' repository "
            "root: make it writable, or run the local server elsewhere and use --emulator",
        ) from None
    # Its messages (e.g. the --recover command) name the dir as the user would type it.
    try:
        server = LocalServer(state_dir=Path(shown(str(state_dir))), host="127.0.0.1", port=0)
    except StateInUse as exc:
        return _running_local(options, info, state_dir, exc)
    server.start()
    if fresh and seed is not None:
        server.seed_policies(seed)
    try:
        publisher, orgpolicy = _clients(server.address, options["policy_store"] is None)
    except BaseException:
        server.stop()
        raise
    address = server.address
    return ClientBackend(
        publisher,
        orgpolicy,
        info,
        on_close=server.stop,
        metrics_client=lambda: (monitoring_client(address), address),
        promql_client=lambda timeout: local_promql(address, timeout),
        subscriber=subscriber_client(address),
        resourcemanager=_resourcemanager(address, options),
        tagbindings=lambda: tagbindings_client(address),
        **options,
    )


def _resourcemanager(
    address: str, options: dict[str, Any]
) -> Callable[[], tuple[Any, Any]] | None:
    """Resource Manager's clients for our local server, made when first needed (none
    with a snapshot, whose `ancestry:` answers instead)."""
    if options["policy_store"] is not None:
        return None
    return lambda: resourcemanager_clients(address)


def open_metrics(options: TargetOptions) -> ClientBackend:
    """A backend that only reads metrics (`stored`), for a plan whose live state the
    read-ahead process read: a Monitoring client only, no Pub/Sub or Org Policy client
    (not for --local: the read-ahead never serves it)."""
    address = emulator_address(options.emulator)
    if address is not None:
        return ClientBackend(
            None, None, BackendInfo(kind="emulator", address=address),
            metrics_client=lambda: (monitoring_client(address), address),
            promql_client=lambda timeout: local_promql(address, timeout),
            timeout=options.timeout,
        )
    credentials = default_credentials()
    return ClientBackend(
        None, None, BackendInfo(),
        metrics_client=lambda: cloud_monitoring_client(credentials),
        promql_client=lambda timeout: cloud_promql(credentials, timeout),
        timeout=options.timeout,
    )


def _running_local(
    options: dict[str, Any], info: BackendInfo, state_dir: Path, in_use: UsageError
) -> ClientBackend:
    """The `reconcile local-server` serving `state_dir` (it holds the lock and wrote
    its address there), checked to answer as ours; else the state is held by another
    command's embedded server and `in_use` says so."""
    address = running_server(state_dir)
    if address is None:
        raise UsageError(
            f"the local state {shown(str(state_dir))} is in use by another reconcile "
            "process (a command running with --local)",
            hint="wait for it to finish; to share one state between commands, serve it "
            "with `reconcile local-server --local`: --local then uses that server",
        ) from in_use
    clients = _connected(address, options, f"the local server serving {shown(str(state_dir))}")
    if is_google_emulator(clients[0]):
        for client in clients:
            close_client(client)
        raise UsageError(
            f"{state_dir / SERVER_FILE} names {address}, which is not a reconcile local "
            "server",
            hint="stop what holds the state and remove that file",
        )
    return _over(address, clients, replace(info, served_by=address), options)


# An emulator is local or nearby: a handshake slower than this is a wrong address.
CONNECT_TIMEOUT = 5.0


def _connected(address: str, options: dict[str, Any], what: str) -> tuple[Any, Any, Any]:
    """The publisher, Org Policy (None with a snapshot) and subscriber clients of the
    server at `address`, once it answers (within CONNECT_TIMEOUT, or the timeout if
    shorter)."""
    publisher, orgpolicy = _clients(address, options["policy_store"] is None)
    clients = (publisher, orgpolicy, subscriber_client(address))
    budget = min(CONNECT_TIMEOUT, options["timeout"])
    if wait_ready({address: publisher.transport.grpc_channel}, budget):
        for client in clients:
            close_client(client)
        raise BackendError(
            f"cannot connect to {what} at {address} (no answer within "
            f"{seconds_text(budget)})",
            hint="start it (e.g. `reconcile local-server --port PORT`), or fix --emulator "
            "/ PUBSUB_EMULATOR_HOST",
        )
    return clients


def _over(
    address: str, clients: tuple[Any, Any, Any], info: BackendInfo, options: dict[str, Any]
) -> ClientBackend:
    """The backend over the server at `address` (ours, or Google's emulator, which
    serves no Resource Manager API: `ancestry` then says so)."""
    publisher, orgpolicy, subscriber = clients
    served = None if info.google_emulator else _resourcemanager(address, options)
    return ClientBackend(
        publisher,
        orgpolicy,
        info,
        metrics_client=lambda: (monitoring_client(address), address),
        promql_client=lambda timeout: local_promql(address, timeout),
        subscriber=subscriber,
        resourcemanager=served,
        tagbindings=None if info.google_emulator else lambda: tagbindings_client(address),
        **options,
    )


def _emulator(
    address: str,
    options: dict[str, Any],
    info: BackendInfo,
    fallback: tuple[Path, PolicyStore] | None,
) -> ClientBackend:
    """The server at --emulator: ours, or Google's emulator (found out by one probe),
    which serves no Org Policy API: without --org-policy, the spec tree's own snapshot
    (`fallback`) answers for it, and `info` says so (`snapshot_fallback`)."""
    clients = _connected(address, options, "the emulator")
    google = is_google_emulator(clients[0])
    info = replace(info, google_emulator=google)
    if google and fallback is not None:
        path, store = fallback
        options = {**options, "policy_store": store}
        info = replace(info, org_policy="snapshot", snapshot=str(path),
                       snapshot_sha256=snapshot_sha256(path), snapshot_fallback=True)
    return _over(address, clients, info, options)


def _google_cloud(options: dict[str, Any], info: BackendInfo) -> ClientBackend:
    credentials = default_credentials()
    timeout = options["timeout"]
    publisher = ConnectFirst(*cloud_publisher_client(credentials), timeout)
    orgpolicy = None
    resourcemanager: Callable[[], tuple[Any, Any]] | None = None
    if options["policy_store"] is None:
        orgpolicy = ConnectFirst(*cloud_orgpolicy_client(credentials), timeout)
        resourcemanager = _cloud_resourcemanager(credentials, timeout)
    return ClientBackend(
        publisher,
        orgpolicy,
        info,
        metrics_client=lambda: cloud_monitoring_client(credentials),
        promql_client=lambda timeout: cloud_promql(credentials, timeout),
        subscriber=ConnectFirst(*cloud_subscriber_client(credentials), timeout),
        resourcemanager=resourcemanager,
        tagbindings=lambda: ConnectFirst(*cloud_tagbindings_client(credentials), timeout),
        **options,
    )


def _cloud_resourcemanager(credentials: Any, timeout: float) -> Callable[[], tuple[Any, Any]]:
    """Google Cloud's Resource Manager clients, made when first needed."""

    def made() -> tuple[Any, Any]:
        projects, folders = cloud_resourcemanager_clients(credentials)
        return ConnectFirst(*projects, timeout), ConnectFirst(*folders, timeout)

    return made
