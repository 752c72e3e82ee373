"""`LocalServer`: the assembly. It builds the state, the Publisher, Subscriber,
SchemaService, OrgPolicy, Resource Manager (Projects, Folders, Organizations, and the
Operations their creations name) and Monitoring (`ListTimeSeries`) services, the
dispatcher that runs their
handlers (`transport.dispatch.Dispatcher`: counts, injects faults), and the faces over
that dispatcher: gRPC (`transport.grpc_face`) and REST (`transport.rest`), both on
one address (`transport.front`). The faces know the services only by the table of
`Rpc`s handed to them here. One RPC only this server answers,
`reconcile.localserver.v1.LocalServer/GetCapabilities`, lets a client tell it from
Google's emulator (`CAPABILITIES_METHOD`)."""

from __future__ import annotations

import errno
import json
import logging
import shutil
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from reconciler import __version__
from reconciler.errors import UsageError
from reconciler.localserver.api import protos
from reconciler.localserver.api.counters import RpcCounters
from reconciler.localserver.api.names import parse_topic
from reconciler.localserver.api.outcomes import PublishOutcomes
from reconciler.localserver.api.rpc import SERVER_NAME, Rpc
from reconciler.localserver.faults.injection import Faults
from reconciler.localserver.monitoring.promql import METHOD as PROMQL_METHOD
from reconciler.localserver.monitoring.promql import query_rpc
from reconciler.localserver.monitoring.service import MonitoringService
from reconciler.localserver.orgpolicy.custom_constraints import CustomConstraintService
from reconciler.localserver.orgpolicy.service import OrgPolicyService, stamp
from reconciler.localserver.pubsub.backlog import BacklogStats
from reconciler.localserver.pubsub.iam_service import IamService
from reconciler.localserver.pubsub.messages import DEFAULT_KEEP_MESSAGES, DEFAULT_MAX_BACKLOG
from reconciler.localserver.pubsub.publisher_service import PublisherService
from reconciler.localserver.pubsub.schema_service import SchemaService
from reconciler.localserver.pubsub.snapshot_service import SnapshotService
from reconciler.localserver.pubsub.state import ServerState, policy_to_proto
from reconciler.localserver.pubsub.subscriber_service import SubscriberService
from reconciler.localserver.pubsub.transform_service import TransformService
from reconciler.localserver.resourcemanager.service import (
    FOLDERS_SERVICE,
    OPERATIONS_SERVICE,
    ORGANIZATIONS_SERVICE,
    PROJECTS_SERVICE,
    FoldersService,
    Operations,
    OrganizationsService,
    ProjectsService,
)
from reconciler.localserver.resourcemanager.tagbindings import (
    TAG_BINDINGS_SERVICE,
    TagBindingsService,
)
from reconciler.localserver.transport.dispatch import Dispatcher
from reconciler.localserver.transport.front import Front, InFlight, Limits
from reconciler.localserver.transport.grpc_face import GrpcFace, add_port
from reconciler.localserver.transport.grpc_face import new_server as new_grpc_server
from reconciler.localserver.transport.http1 import serve as serve_http1
from reconciler.localserver.transport.rest import RestFace
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.publishing import declared_region_problem
from reconciler.orgpolicy.store import PolicyStore

log = logging.getLogger(__name__)

PUBLISHER_SERVICE = "google.pubsub.v1.Publisher"
SUBSCRIBER_SERVICE = "google.pubsub.v1.Subscriber"
SCHEMA_SERVICE = "google.pubsub.v1.SchemaService"
ORGPOLICY_SERVICE = "google.cloud.orgpolicy.v2.OrgPolicy"
MONITORING_SERVICE = "google.monitoring.v3.MetricService"
IAM_SERVICE = "google.iam.v1.IAMPolicy"  # the Pub/Sub services' IAM mixin
CAPABILITIES = (
    "storage-policy-validation",
    "update-labels",
    "update-storage-policy",
    "org-policy",
    "subscriber",
    "in-transit-enforcement",
    "rest",
    "monitoring",
    "schemas",
    "subscription-filters",
    "snapshots-seek",
    "resource-manager",
)
MAX_WORKERS = 64  # for unary calls
MAX_STREAMS = 1000  # open StreamingPulls, each holding a worker of its own


def _method_names(*services: Any) -> list[str]:
    """The services' gRPC methods, and the REST face's PromQL query (not gRPC, but
    dispatched, counted and faultable as one)."""
    return [rpc.name for service in services for rpc in service.rpcs()] + [PROMQL_METHOD]


def method_names() -> list[str]:
    """Every RPC method a local server answers, without opening any state (for
    checking `--fault` specs before the server starts)."""
    state = ServerState()
    operations = Operations()
    return _method_names(
        PublisherService(state),
        SubscriberService(state),
        SchemaService(state),
        SnapshotService(state),
        TransformService(state),
        IamService(state),
        OrgPolicyService(state),
        CustomConstraintService(state),
        MonitoringService(state, PublishOutcomes()),
        ProjectsService(state, operations),
        FoldersService(state, operations),
        OrganizationsService(state),
        TagBindingsService(state),
        operations,
    )


def capabilities_answer() -> bytes:
    """What GetCapabilities answers (JSON; the request is ignored)."""

    return json.dumps(
        {"server": SERVER_NAME, "version": __version__, "capabilities": list(CAPABILITIES)}
    ).encode()


class SeedConflict(UsageError):
    """An org-policy seed names a policy the state already holds with other content."""

    def __init__(self, conflicts: list[str]) -> None:
        super().__init__(
            "the org-policy seed differs from what the state already holds for "
            + "; ".join(conflicts)
            + ": refusing to overwrite acknowledged policies",
            hint="seeding only adds what the state lacks: drop those from the file, or "
            "pass --reset-org-policy to replace them with the file's",
        )
        self.conflicts = conflicts


class LocalServer:
    """A loopback Pub/Sub + Org Policy server that the real client libraries talk to.

    In memory when `state_dir` is None, otherwise persisted crash-safely there.
    `client_region` is the region a request that names none is received in (None:
    us-central1, `reconciler.orgpolicy.publishing.DEFAULT_RECEIVING_REGION`); a request
    names its own with the `x-reconcile-client-region` metadata key. `max_workers`
    threads serve unary calls; open StreamingPulls have `max_streams` threads of
    their own (one beyond answers RESOURCE_EXHAUSTED), so they never starve the rest.
    """

    def __init__(
        self,
        state_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        client_region: str | None = None,
        policy_store: PolicyStore | None = None,
        *,
        max_workers: int = MAX_WORKERS,
        max_streams: int = MAX_STREAMS,
        fsync: bool = True,
        fault_seed: int | None = None,
        compact_after_bytes: int = 4 * 1024 * 1024,
        recover: bool = False,
        keep_messages: int = DEFAULT_KEEP_MESSAGES,
        reset_org_policy: bool = False,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        destination_locations: dict[str, str] | None = None,
        front: bool = True,
        limits: Limits | None = None,
    ) -> None:
        if client_region is not None and (problem := declared_region_problem(client_region)):
            raise ValueError(f"client_region {problem}")
        self.host = host
        self.port = port
        # With the front (the default) one address serves gRPC and REST; without it
        # gRPC alone listens there (benchmarks measure the front's cost this way).
        self.front = front
        self.limits = limits or Limits()
        self.client_region = client_region
        self.max_workers = max(max_workers, 1)
        self.max_streams = max(max_streams, 1)
        self.counters = RpcCounters()
        self.outcomes = PublishOutcomes()
        self.state = ServerState(
            Path(state_dir) if state_dir is not None else None,
            fsync=fsync,
            compact_after_bytes=compact_after_bytes,
            recover=recover,
            keep_messages=keep_messages,
            max_backlog=max_backlog,
            destination_locations=destination_locations,
        )
        self.publisher = PublisherService(self.state)
        self.subscriber = SubscriberService(self.state)
        self.schema_service = SchemaService(self.state)
        self.snapshots = SnapshotService(self.state)
        self.transforms = TransformService(self.state)
        self.iam = IamService(self.state)
        self.orgpolicy = OrgPolicyService(self.state)
        self.custom_constraints = CustomConstraintService(self.state)
        self.monitoring = MonitoringService(self.state, self.outcomes)
        self.operations = Operations()
        self.projects = ProjectsService(self.state, self.operations)
        self.folders = FoldersService(self.state, self.operations)
        self.organizations = OrganizationsService(self.state)
        self.tag_bindings = TagBindingsService(self.state)
        self.faults = Faults(seed=fault_seed, methods=self.method_names())
        self.dispatcher = Dispatcher(self.counters, self.faults, self.outcomes)
        self._server: grpc.Server | None = None
        self._front: Front | None = None
        self._socket_dir: str | None = None
        self._rest_calls = InFlight()
        if policy_store is not None:
            try:
                self.seed_org_policy(policy_store, reset=reset_org_policy)
            except BaseException:
                self.state.close(compact=False)
                raise

    def method_names(self) -> list[str]:
        """Every RPC method this server answers (what a fault rule may name)."""
        return _method_names(
            self.publisher, self.subscriber, self.schema_service, self.snapshots,
            self.transforms, self.iam, self.orgpolicy, self.custom_constraints,
            self.monitoring, self.projects, self.folders, self.organizations,
            self.tag_bindings, self.operations,
        )

    # ----------------------------------------------------------------------- lifecycle

    @property
    def address(self) -> str:
        """host:port to give a client (the real port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def start(self) -> LocalServer:
        if self._server is not None:
            return self
        server = new_grpc_server(self.max_workers + self.max_streams, self.limits.first_bytes_s)
        face = GrpcFace(
            self.dispatcher, self.counters, lambda: self.client_region, self.max_streams
        )
        server.add_generic_rpc_handlers(face.handlers(self._services(), capabilities_answer))
        if not self.front:
            self.port = add_port(server, self.address, self.address)
            server.start()
            self._server = server
            return self
        rest = RestFace(
            self.dispatcher, self._rpcs_by_name(), lambda: self.client_region,
            query_rpc(self.monitoring),
        )

        def http(conn: socket.socket, head: bytes) -> None:
            serve_http1(
                conn, head, rest.handle, self.limits, self.state.subs.stopping.is_set,
                self._rest_calls,
            )

        upstream = self._grpc_upstream(server)
        try:
            front = Front(self.host, self.port, upstream, http, self.limits)
        except BaseException:
            server.stop(None)
            self._remove_socket_dir()
            raise
        self.port = front.port
        server.start()
        front.start()
        self._server, self._front = server, front
        return self

    def _grpc_upstream(self, server: grpc.Server) -> str:
        """Bind the gRPC server where only the front reaches it: a Unix socket in a
        directory only this user can enter, or a loopback port without Unix sockets."""
        if hasattr(socket, "AF_UNIX"):
            self._socket_dir = tempfile.mkdtemp(prefix="reconcile-ls-")
            upstream = f"unix:{self._socket_dir}/grpc.sock"
            add_port(server, upstream, self.address)
            return upstream
        port = add_port(server, "127.0.0.1:0", self.address)
        return f"127.0.0.1:{port}"

    def _services(self) -> dict[str, list[Rpc]]:
        """The dispatch table the gRPC face serves: service name -> its `Rpc`s."""
        return {
            PUBLISHER_SERVICE: self.publisher.rpcs()
            + self.snapshots.publisher_rpcs()
            + self.transforms.rpcs(),
            SUBSCRIBER_SERVICE: self.subscriber.rpcs() + self.snapshots.subscriber_rpcs(),
            SCHEMA_SERVICE: self.schema_service.rpcs(),
            IAM_SERVICE: self.iam.rpcs(),
            ORGPOLICY_SERVICE: self.orgpolicy.rpcs() + self.custom_constraints.rpcs(),
            MONITORING_SERVICE: self.monitoring.rpcs(),
            PROJECTS_SERVICE: self.projects.rpcs(),
            FOLDERS_SERVICE: self.folders.rpcs(),
            ORGANIZATIONS_SERVICE: self.organizations.rpcs(),
            TAG_BINDINGS_SERVICE: self.tag_bindings.rpcs(),
            OPERATIONS_SERVICE: self.operations.rpcs(),
        }

    def _rpcs_by_name(self) -> dict[str, Rpc]:
        """The REST face's table: "google.pubsub.v1.Publisher.CreateTopic" -> its `Rpc`."""
        return {
            f"{name}.{rpc.name}": rpc for name, rpcs in self._services().items() for rpc in rpcs
        }

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving, then close the state (compacting the journal). Calls parked
        by a fault hold or delay are answered UNAVAILABLE first: none is left waiting,
        and no handler runs against the closing state."""
        self.faults.stop()
        self.state.subs.stop()  # waiting pulls and streams end now
        if grace:  # the woken calls answer before gRPC's shutdown GOAWAY goes out
            self.faults.wait_woken(grace)
        self._stop_serving(grace)
        self.state.close()

    def _stop_serving(self, grace: float | None) -> None:
        if self._front is not None:
            self._front.close_listeners()  # open connections carry gRPC's goodbyes
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        if self._front is not None:
            if grace:  # as gRPC's grace: REST calls in flight may finish (None: abort)
                self._rest_calls.wait_idle(grace)
            self._front.stop(grace or 0.0)
            self._front = None
        self._remove_socket_dir()

    def _remove_socket_dir(self) -> None:
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def compact(self) -> None:
        """Fold the journal into the snapshot now (it also happens as it grows)."""
        self.state.compact()

    def fail_state_writes(
        self, code: int = errno.ENOSPC, *, count: int = 1, at: str = "write"
    ) -> None:
        """Fault hook: the next `count` journal writes (`at="write"`) or fsyncs
        (`at="fsync"`) fail with OSError(`code`), as a full or failing disk would.
        Needs a state directory."""
        self.state.inject_write_failure(code, count=count, at=at)

    def crash(self) -> None:
        """Stop at once without the clean-shutdown compaction, leaving the state
        directory as a kill -9 would (for crash-recovery tests)."""
        self.faults.stop()
        self.state.subs.stop()
        self._stop_serving(None)
        self.state.close(compact=False)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server terminates (True) or `timeout` passes (False)."""
        if self._server is None:
            return True
        return bool(self._server.wait_for_termination(timeout))

    def __enter__(self) -> LocalServer:
        try:
            return self.start()
        except BaseException:
            self.state.close()  # release the state directory: __exit__ will not run
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --------------------------------------------------------------- test helpers

    def messages(self, topic: str) -> list[Any]:
        """The last `keep_messages` published `PubsubMessage` protos of a topic, in
        publish order."""
        return self.state.messages(topic)

    # ----------------------------------------------------------------- read API
    # (what a Monitoring face serves: the by-region gauges and publish metrics)

    def subscription_stats(self, subscription: str) -> BacklogStats | None:
        """Per region the messages are persisted in: count, bytes and oldest publish
        time of the subscription's unacked and retained acked messages."""
        return self.state.subs.subscription_stats(subscription)

    def topic_stats(self, topic: str) -> BacklogStats:
        """The same across every subscription attached to the topic."""
        return self.state.subs.topic_stats(topic)

    @property
    def open_connections(self) -> int:
        """Client connections the front holds now (each counts against
        `Limits.max_connections` until the server has seen it close)."""
        return self._front.open_connections if self._front is not None else 0

    def set_destination_location(self, key: str, location: str | None) -> None:
        """Declare where an export or push destination is (see `pubsub.exports`): e.g.
        "bigquery:my-project.my_dataset" -> "EU"; None forgets it."""
        self.state.subs.set_location(key, location)

    def set_ingestion_state(self, topic: str, state: str | None) -> None:
        """Test hook: make `topic`'s ingestion source read `state` (e.g.
        "CONFLICTING_REGION_CONSTRAINTS", a Regional Access Boundary conflict the
        server cannot see) on every read until None forgets it; never reachable from a
        client (the API drops the output-only state a request sends). ValueError for
        a name that is no source state."""
        self.publisher.ingestion_states.set(topic, state)

    def rerouted(self, topic: str) -> int:
        """Messages of `topic` published from a region its storage policy excludes and
        stored elsewhere (rerouted, as the service does without in-transit enforcement)."""
        return self.publisher.rerouted.get(topic)

    def message_count(self, topic: str) -> int:
        """How many messages were ever published to the topic."""
        return self.state.message_count(topic)

    def set_ancestry(self, child: str, parent: str | None) -> None:
        """Place "projects/p" under "folders/f" or "organizations/o" (None detaches),
        without the API: the link Resource Manager's GetProject and GetFolder answer
        with, and the org-policy evaluation walks."""
        self.state.set_ancestry(child, parent)

    def put_policy(self, policy: Policy) -> None:
        """Store an org policy (create or replace) without going through the API."""
        pb = stamp(policy_to_proto(policy))
        self.state.write_policy(pb.name, lambda _current: pb)

    def seed_policies(self, store: PolicyStore) -> None:
        """Test-bed helper: store every policy and ancestry link of `store`, replacing
        what is there (a test that changes its snapshot re-seeds with it). The
        command's `--org-policy` seeds with `seed_org_policy`, which never overwrites."""
        for child, parent in store.ancestry.items():
            self.set_ancestry(child, parent)
        for child in store.unparented:  # `projects/P: none`
            self.set_ancestry(child, None)
        for policy in store.policies.values():
            self.put_policy(policy)
        for constraint in store.custom_constraints.values():
            self.custom_constraints.put(constraint)

    def seed_org_policy(self, store: PolicyStore, *, reset: bool = False) -> int:
        """Seed the org policy from `store` (e.g. a snapshot file): policies and
        ancestry links the state lacks are added; one the state holds with other
        content (written through the API and acknowledged, or an earlier seed) is
        refused with `SeedConflict` naming it, unless `reset`, which replaces it.
        Returns how many policies and links were written."""
        with self.state.locked():
            have = self.state.policy_store
            conflicts = [
                f"ancestry of {child} (stored: {have.ancestry[child]}, seed: {parent})"
                for child, parent in sorted(store.ancestry.items())
                if have.ancestry.get(child, parent) != parent
            ]
            conflicts += [
                f"ancestry of {child} (stored: {have.ancestry[child]}, seed: none)"
                for child in sorted(store.unparented) if child in have.ancestry
            ]
            conflicts += [
                f"policy {name}"
                for name, policy in sorted(store.policies.items())
                if name in have.policies and not _same_policy(have.policies[name], policy)
            ]
            conflicts += [
                f"custom constraint {name}"
                for name, constraint in sorted(store.custom_constraints.items())
                if have.custom_constraints.get(name, constraint) != constraint
            ]
            if conflicts and not reset:
                raise SeedConflict(conflicts)
            written = 0
            for child, parent in store.ancestry.items():
                if have.ancestry.get(child) != parent:
                    self.set_ancestry(child, parent)
                    written += 1
            for child in store.unparented:
                if child in have.ancestry:
                    self.set_ancestry(child, None)
                    written += 1
            for name, policy in store.policies.items():
                current = have.policies.get(name)
                if current is None or not _same_policy(current, policy):
                    self.put_policy(policy)
                    written += 1
            for name, constraint in store.custom_constraints.items():
                if have.custom_constraints.get(name) != constraint:
                    self.custom_constraints.put(constraint)
                    written += 1
        return written

    def seed_topics(self, names: Iterable[str], labels: dict[str, str] | None = None) -> int:
        """Create many topics at once (benchmarks, paging tests), bypassing the API but
        not the name rules. Returns how many were new."""
        topics = []
        for name in names:
            parse_topic(name)
            topics.append(protos.Topic(name=name, labels=labels or {}))
        return self.state.create_topics(topics)


def _same_policy(a: Policy, b: Policy) -> bool:
    return a.spec == b.spec and a.dry_run_spec == b.dry_run_spec
