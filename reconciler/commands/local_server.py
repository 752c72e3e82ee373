"""`reconcile local-server`: run the embedded Pub/Sub + Org Policy server in the
foreground until Ctrl-C or SIGTERM.

With `--local` it serves the state `--local` commands use (`.reconcile/local/` at the
repository root; a brand-new one is seeded from the spec tree's org-policy snapshot,
as `--local` does); with `--state DIR`, that directory. Either way it writes its
address into the state directory (reconciler/localstate.py) while it serves, so that
`plan --local` / `apply --local` talk to it instead of refusing the locked state."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from reconciler.commands import output
from reconciler.errors import InputError, UsageError
from reconciler.localserver import (
    DEFAULT_KEEP_MESSAGES,
    DEFAULT_MAX_BACKLOG,
    check_destination_key,
)
from reconciler.localstate import (
    DEFAULT_SPECS,
    SERVER_FILE,
    local_state_dir,
    prepare_state_dir,
    publish_server,
    shown,
    withdraw_server,
)
from reconciler.orgpolicy.publishing import declared_region_problem
from reconciler.perf import gc_resumed, skip_teardown
from reconciler.spec.discover import find_snapshot

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _local_state(org_policy: Path | None) -> tuple[Path, Path | None]:
    """--local: the repository's local state, and the snapshot to seed a brand-new one
    with (--org-policy, else the one the default spec tree finds)."""
    state_dir = Path(shown(str(local_state_dir())))
    try:
        prepare_state_dir(state_dir)
        fresh = not any(p.name != SERVER_FILE for p in state_dir.iterdir())
    except OSError as exc:
        raise UsageError(
            f"cannot use the local state directory {state_dir}: {exc.strerror}"
        ) from None
    if org_policy is None and fresh and DEFAULT_SPECS.is_dir():
        org_policy = find_snapshot(DEFAULT_SPECS)
        if org_policy is not None:
            output.stderr().line(f"Seeding the new local state's org policy from {org_policy}.")
    return state_dir, org_policy


@click.command("local-server")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    default=8085,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind (0 picks a free one).",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep topics and policies in this directory (crash-safe); in memory when omitted.",
)
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Serve the state --local uses (.reconcile/local/ at the repository root), so "
    "that `plan --local` and `apply --local` use this server.",
)
@click.option(
    "--org-policy",
    "org_policy",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Seed the Org Policy service from this snapshot file: adds only the policies "
    "the state lacks; one the state holds with other content is refused.",
)
@click.option(
    "--reset-org-policy",
    is_flag=True,
    help="With --org-policy: replace stored policies that differ from the file's.",
)
@click.option(
    "--recover",
    is_flag=True,
    help="Open a damaged --state: keep every intact record, report what is dropped, "
    "keep the damaged files aside and write a fresh snapshot.",
)
@click.option(
    "--keep-messages",
    default=DEFAULT_KEEP_MESSAGES,
    show_default=True,
    type=click.IntRange(0, 10_000_000),
    metavar="N",
    help="Published messages kept per topic (the last N; all are counted).",
)
@click.option(
    "--max-backlog",
    default=DEFAULT_MAX_BACKLOG,
    show_default=True,
    type=click.IntRange(1, 100_000_000),
    metavar="N",
    help="Unacknowledged messages kept per subscription (the oldest beyond N are dropped).",
)
@click.option(
    "--destination-location",
    "destinations",
    multiple=True,
    metavar="KEY=LOCATION",
    help="Where an export or push destination is, e.g. bigquery:PROJECT.DATASET=EU, "
    "storage:BUCKET=us-east1, push:HOST=europe-west1 (docs/local-server.md). Repeatable.",
)
@click.option(
    "--client-region",
    default=None,
    help="Region a request that names none is received in (default us-central1): where "
    "its messages are stored and whether enforceInTransit refuses it; per request: "
    "metadata x-reconcile-client-region.",
)
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="SPEC",
    help="Inject latency/errors, e.g. 'Publish:delay=5ms,tail_fraction=0.02,"
    "tail_delay=2s' or 'UpdateTopic:error=UNAVAILABLE,error_fraction=0.2'. "
    "Repeatable.",
)
@click.option(
    "--no-fsync",
    is_flag=True,
    hidden=True,
    help="Skip fsync (faster, not crash-safe; benchmarks only).",
)
@gc_resumed()  # a server runs until it is stopped: the collector on (reconciler/perf.py)
def command(
    host: str,
    port: int,
    state_dir: Path | None,
    local: bool,
    org_policy: Path | None,
    reset_org_policy: bool,
    recover: bool,
    keep_messages: int,
    max_backlog: int,
    destinations: tuple[str, ...],
    client_region: str | None,
    faults: tuple[str, ...],
    no_fsync: bool,
) -> None:
    """Run a local Google Pub/Sub + Org Policy server for `--emulator` / PUBSUB_EMULATOR_HOST."""
    from reconciler.localserver import method_names, parse_fault_spec

    if local and state_dir is not None:
        raise UsageError("--local and --state are alternatives; pass one of them")
    if local:
        state_dir, org_policy = _local_state(org_policy)
    if reset_org_policy and org_policy is None:
        raise UsageError("--reset-org-policy needs --org-policy FILE")
    if recover and state_dir is None:
        raise UsageError("--recover needs --state DIR (an in-memory server has nothing to recover)")
    if client_region is not None:
        problem = declared_region_problem(client_region)
        if problem is not None:
            raise UsageError(f"--client-region: {problem}")
    methods = method_names()
    fault_kwargs = []
    for spec in faults:
        try:
            fault_kwargs.append(parse_fault_spec(spec, methods))
        except ValueError as exc:
            raise UsageError(f"--fault: {exc}") from None

    locations = {}
    for item in destinations:
        key, sep, where = item.partition("=")
        try:
            if not sep or not where:
                raise ValueError(f"{item!r} is not KEY=LOCATION")
            locations[check_destination_key(key)] = where
        except ValueError as exc:
            raise UsageError(f"--destination-location: {exc}") from None

    store = None
    if org_policy is not None:
        if not org_policy.exists():  # the reader names anything else
            raise UsageError(f"{org_policy}: org-policy file not found")
        from reconciler.orgpolicy.snapshot import load_snapshot

        store = load_snapshot(org_policy)

    from reconciler.localserver import LocalServer, SeedConflict

    try:
        server = LocalServer(
            state_dir=state_dir,
            host=host,
            port=port,
            client_region=client_region,
            policy_store=store,
            fsync=not no_fsync,
            recover=recover,
            keep_messages=keep_messages,
            reset_org_policy=reset_org_policy,
            max_backlog=max_backlog,
            destination_locations=locations,
        )
    except SeedConflict as exc:
        raise UsageError(f"--org-policy {org_policy}: {exc.message}", hint=exc.hint) from None
    except OSError as exc:
        raise InputError(f"cannot use state directory {state_dir}: {exc}") from None
    loaded = server.state.loaded  # its notes (torn tail, migration) are logged as warnings
    if loaded is not None:
        for line in loaded.report():
            output.stderr().line(line)
    try:
        for kwargs in fault_kwargs:
            server.faults.add(**kwargs)  # type: ignore[arg-type]
    except ValueError as exc:
        server.stop()
        raise UsageError(f"--fault: {exc}") from None
    try:
        server.start()
    except OSError as exc:
        server.stop()
        raise UsageError(
            str(exc), hint="pick another --port, or stop what is listening there"
        ) from None

    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    # Both signals only set the event (installed before the address is printed), so
    # the server always stops through the same clean path, journal compacted.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    if host not in LOOPBACK:
        output.stderr().line(
            f"warning: listening on {host}, not only on loopback; there is no authentication"
        )
    where = f"state in {state_dir}" if state_dir else "in memory"
    if state_dir is not None:
        publish_server(state_dir, server.address)
    served = "Local Pub/Sub (gRPC and REST), Org Policy and Monitoring server"
    output.stderr().line(f"{served} on {server.address} ({where}).")
    if local:
        output.stderr().line("`--local` commands of this repository use this server.")
    output.stdout().line(f"export PUBSUB_EMULATOR_HOST={server.address}")
    output.stderr().line("Press Ctrl-C to stop.")
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if state_dir is not None:
            withdraw_server(state_dir)
        server.stop()
        output.stderr().line("Local server stopped.")
    # Stopped cleanly, state closed: nothing is left for the interpreter's teardown but
    # the gRPC and protobuf modules, which are slow to tear down (reconciler/perf.py).
    skip_teardown()
