"""The one Backend: the real google-cloud client libraries, whatever they point at.

Google Cloud (Application Default Credentials), the embedded local server (--local)
and any emulator differ only in how the clients are built (backends/connect.py);
this module turns their answers into plan-shaped values and their failures into
`BackendError`s that name the project or topic and the permission needed.

Stable entry points (plan and apply use them):
    ClientBackend(publisher, orgpolicy, info, policy_store=None, client_retry=True,
                  timeout=DEFAULT_TIMEOUT)
    is_google_emulator(publisher) -> bool               one probe of the server
    topicproto.observed(topic) / topic_to_proto(body)    proto <-> managed shape
    api_error(exc, action, resource)            google.api_core error -> BackendError

Topic bodies are `reconciler.topic.TopicShape` in JSON form (backends/topicproto.py).
`ObservedTopic.digest` (sha256 of the topic's wire form) is fingerprinted by plan.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from google.protobuf.json_format import MessageToDict

from reconciler.backends.base import (
    Ancestry,
    BackendInfo,
    CustomConstraints,
    GaugeQuery,
    ObservedTopic,
    OrgInputs,
    StoredMessages,
    SubscriptionListing,
)
from reconciler.backends.clients import close_client
from reconciler.backends.deadline import DEFAULT_TIMEOUT, Deadline, call_options, endpoint_of
from reconciler.backends.hierarchy import HierarchyReader, snapshot_ancestry
from reconciler.backends.metrics import MetricsReader, MetricsUnavailable, open_reader
from reconciler.backends.promql import PromQLReader, open_promql
from reconciler.backends.stored import read_stored
from reconciler.backends.subscriptions import list_subscriptions
from reconciler.backends.topicproto import observed, observed_pb, topic_to_proto
from reconciler.background import Background
from reconciler.errors import BackendError, is_propagation_message
from reconciler.localserver import CAPABILITIES_METHOD, SERVER_NAME
from reconciler.orgpolicy.custom import TOPIC, CustomConstraint
from reconciler.orgpolicy.model import (
    DISABLE_TOPIC_TRANSFORMS,
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
    Policy,
    PolicyFormatError,
    PolicySpec,
)
from reconciler.orgpolicy.store import PolicyStore

# Gauge queries read at once by `stored`.
MAX_PARALLEL_READS = 8

T = TypeVar("T")

# Everything a call may raise that is the service's or the credentials' doing.
API_ERRORS = (gexc.GoogleAPIError, gexc.RetryError, auth_exc.GoogleAuthError)

PAGE_SIZE = 1000

# What each call needs, for PERMISSION_DENIED messages: (permission, role).
PERMISSIONS: dict[str, tuple[str, str]] = {
    "list topics": ("pubsub.topics.list", "roles/pubsub.viewer"),
    "read topic": ("pubsub.topics.get", "roles/pubsub.viewer"),
    "create topic": ("pubsub.topics.create", "roles/pubsub.editor"),
    "update topic": ("pubsub.topics.update", "roles/pubsub.editor"),
    "delete topic": ("pubsub.topics.delete", "roles/pubsub.editor"),
    "read org policy": ("orgpolicy.policy.get", "roles/orgpolicy.policyViewer"),
    "list custom constraints": (
        "orgpolicy.customConstraints.list", "roles/orgpolicy.policyViewer"
    ),
}

ORG_POLICY_UNSERVED_HINT = (
    "pass --org-policy FILE (an Org Policy snapshot, e.g. written by "
    "`reconcile policy pull` against the real project), or use --local"
)


def api_error(exc: Exception, action: str, resource: str) -> BackendError:
    """A google.api_core failure as a message a person can act on (never a traceback,
    never a credential), carrying the gRPC status name."""
    error = _api_error(exc, action, resource)
    code = getattr(exc, "grpc_status_code", None)
    error.status = getattr(code, "name", None)
    return error


def _api_error(exc: Exception, action: str, resource: str) -> BackendError:
    detail = getattr(exc, "message", None) or str(exc)
    perm = PERMISSIONS.get(action)
    if isinstance(exc, auth_exc.GoogleAuthError):
        # Never echo the library's text: it may quote a token endpoint's answer.
        return BackendError(
            f"Google Cloud credentials were refused while trying to {action} for "
            f"{resource} ({type(exc).__name__})",
            hint="refresh them with `gcloud auth application-default login`",
        )
    if isinstance(exc, gexc.PermissionDenied):
        need = f" (needs {perm[0]}, e.g. role {perm[1]})" if perm else ""
        return BackendError(
            f"permission denied to {action} for {resource}{need}: {detail}",
            hint="grant the role to the account reconcile runs as "
            "(`gcloud auth application-default login` or a service account)",
        )
    if isinstance(exc, gexc.Unauthenticated):
        need = f"; the account needs {perm[0]} ({perm[1]})" if perm else ""
        return BackendError(
            f"not authenticated to {action} for {resource}{need}: {detail}",
            hint="run `gcloud auth application-default login` or set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file",
        )
    if isinstance(exc, gexc.NotFound):
        what = "project" if action in ("list topics", "read org policy") else "topic"
        return BackendError(
            f"{what} {resource} not found while trying to {action}: {detail}",
            hint="check the project ID in the spec (metadata.project) and that the "
            "Pub/Sub API is enabled in it",
        )
    if isinstance(exc, gexc.MethodNotImplemented) and action == "read org policy":
        return BackendError(
            f"the server does not serve the Org Policy API, so the effective org policy "
            f"of {resource} cannot be read: {detail}",
            hint=ORG_POLICY_UNSERVED_HINT,
        )
    if isinstance(exc, gexc.ServiceUnavailable):
        return BackendError(
            f"the service is unavailable while trying to {action} for {resource}: {detail}",
            hint="this is usually transient: retry; if it persists, check the network or "
            "the --emulator address",
        )
    if isinstance(exc, gexc.RetryError | gexc.DeadlineExceeded):
        return BackendError(
            f"the service did not answer in time while trying to {action} for {resource}: {detail}",
            hint="check the network or the --emulator address, then retry",
        )
    grpc_code = getattr(exc, "grpc_status_code", None)
    name = getattr(grpc_code, "name", None) or type(exc).__name__
    refused = emulator_refused_field(detail)
    if refused is not None:
        error = BackendError(
            f"failed to {action} for {resource}: Google's Pub/Sub emulator cannot update "
            f"{refused} of a topic (it answered: {name}: {detail}); running apply again "
            "will not help. Use --local (the embedded server updates labels and storage "
            "policies) or real Google Cloud for this change"
        )
        error.rerun_helps = False
        return error
    if is_propagation_message(detail):
        return BackendError(
            f"failed to {action} for {resource}: {name}: {detail}",
            hint="the project's organization policy has not reached Pub/Sub yet (a recently "
            "created project); apply waits for it up to --propagation-wait",
        )
    return BackendError(f"failed to {action} for {resource}: {name}: {detail}")


# Google's emulator refuses UpdateTopic masks it does not implement with this sentence.
_UNKNOWN_FIELD = re.compile(
    r"Invalid update_mask .*?\b(labels|message_storage_policy) is not a known Topic field"
)
_FIELD_TEXT = {"labels": "labels", "message_storage_policy": "message storage policies"}


def emulator_refused_field(detail: str) -> str | None:
    """'labels' / 'message storage policies' when Google's emulator refused to update
    that field (it implements no update of either), else None."""
    found = _UNKNOWN_FIELD.search(detail)
    return _FIELD_TEXT[found.group(1)] if found else None


def _spec(policy: Policy | None) -> PolicySpec | None:
    return policy.spec if policy is not None else None


def is_google_emulator(publisher: Any) -> bool:
    """Is the server behind this publisher client Google's emulator rather than ours?
    Ours answers `GetCapabilities` of its own service (an RPC no other server has; it
    is neither counted nor logged); Google's emulator answers UNIMPLEMENTED: one cheap
    probe, made once per command, before the backend states what it is."""
    try:
        probe = publisher.transport.grpc_channel.unary_unary(CAPABILITIES_METHOD)
        answer = json.loads(probe(b"", timeout=5.0))
        return not (isinstance(answer, dict) and answer.get("server") == SERVER_NAME)
    except (grpc.RpcError, ValueError, AttributeError):
        return True  # UNIMPLEMENTED (Google's emulator) and the like


def _call(deadline: Deadline, action: str, resource: str, fn: Callable[[], T]) -> T:
    """Run one call; our own deadline passing is reported as such (naming the endpoint),
    anything else the service or the credentials raise through `api_error`."""
    started = time.monotonic()
    try:
        return fn()
    except API_ERRORS as exc:
        if deadline.expired(exc, started):
            raise deadline.error(exc, action, resource) from None
        raise api_error(exc, action, resource) from None


class ClientBackend:
    """The Backend over the client libraries: a Pub/Sub PublisherClient (GAPIC or the
    google.cloud wrapper), an Org Policy client, a Subscriber client and the Cloud
    Monitoring readers, pointed at Google Cloud, the local server or an emulator.
    `policy_store` (from --org-policy FILE) replaces the Org Policy API entirely, and
    Resource Manager with it (the snapshot's `ancestry:`); `orgpolicy` may then be
    None. `resourcemanager` makes Resource Manager's Projects and Folders clients, which
    `ancestry` reads (made on first use: a command that reads no ancestry never loads
    that library; None: the target serves no such API, and `ancestry` says so).

    `client_retry=False` turns off the client library's own retry (GAPIC defaults retry
    UNAVAILABLE, invisibly, for up to 600 s per call): apply does that, so that its own
    bounded retry of all transient codes is the only one and every attempt is counted.
    Every call ends within `timeout` seconds (backends/deadline.py); when it does not,
    the client's endpoint is named (the target for the emulator and --local).
    `info` states what the backend is (backends/base.py).
    """

    def __init__(
        self,
        publisher: Any,
        orgpolicy: Any | None,
        info: BackendInfo,
        *,
        policy_store: PolicyStore | None = None,
        on_close: Callable[[], None] | None = None,
        metrics_client: Callable[[], tuple[Any, str]] | None = None,
        promql_client: Callable[[float], PromQLReader] | None = None,
        subscriber: Any | None = None,
        resourcemanager: Callable[[], tuple[Any, Any]] | None = None,
        client_retry: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.client_retry = client_retry
        self.deadline = Deadline(timeout, endpoint_of(publisher, info.label))
        self.policy_deadline = Deadline(timeout, endpoint_of(orgpolicy, info.label))
        self._options = call_options(timeout, client_retry)
        self.publisher = publisher
        self.orgpolicy = orgpolicy
        self.info = info
        self.policy_store = policy_store
        self.policy_source = f"snapshot {info.snapshot}" if info.snapshot else "snapshot"
        self._on_close = on_close
        self._metrics_client = metrics_client
        self.subscriber = subscriber
        self._metrics: MetricsReader | None = None
        self._promql_client = promql_client
        self._promql: PromQLReader | None = None
        self._promql_lock = threading.Lock()  # made once, whichever thread asks first
        self._gauge_reads = Background(MAX_PARALLEL_READS, "gauges")
        self._timeout = timeout
        self._org_constraints: dict[str, list[CustomConstraint]] = {}
        self._org_lock = threading.Lock()
        self._resourcemanager = resourcemanager
        self._hierarchy: HierarchyReader | None = None
        self._hierarchy_lock = threading.Lock()

    @property
    def _rpc(self) -> dict[str, Any]:
        """Per-call options: the deadline, and the library's retry bounded by it (or
        none when turned off)."""
        return dict(self._options)

    # -- topics ---------------------------------------------------------------
    def list_topics(self, project: str) -> list[ObservedTopic]:
        """Every topic of the project, through the pager (ListTopics, 1000 a page)."""
        return self.list_topics_as(project, observed_pb)

    def list_topics_as(self, project: str, convert: Callable[[Any], T]) -> list[T]:
        """`list_topics`, each bare protobuf topic made into what `convert` makes of it
        (topicproto.observed_pb, or topic_row for the plan's read-ahead process, which
        sends the rows), page by page."""
        resource = f"projects/{project}"

        def run() -> list[T]:
            request = {"project": resource, "page_size": PAGE_SIZE}
            pager = self.publisher.list_topics(request=request, **self._rpc)
            pages = (type(page).pb(page).topics for page in pager.pages)  # bare messages
            return [convert(pb) for topics in pages for pb in topics]

        return _call(self.deadline, "list topics", resource, run)

    def get_topic(self, name: str) -> ObservedTopic | None:
        def run() -> Any:
            try:
                return self.publisher.get_topic(request={"topic": name}, **self._rpc)
            except gexc.NotFound:
                return None

        topic = _call(self.deadline, "read topic", name, run)
        return None if topic is None else observed(topic)

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic:
        topic = topic_to_proto(body)
        created = _call(
            self.deadline,
            "create topic",
            topic.name,
            lambda: self.publisher.create_topic(request=topic, **self._rpc),
        )
        return observed(created)

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic:
        topic = topic_to_proto(body)
        request = {"topic": topic, "update_mask": {"paths": list(update_mask)}}
        updated = _call(
            self.deadline,
            "update topic",
            topic.name,
            lambda: self.publisher.update_topic(request=request, **self._rpc),
        )
        return observed(updated)

    def delete_topic(self, name: str) -> None:
        _call(
            self.deadline,
            "delete topic",
            name,
            lambda: self.publisher.delete_topic(request={"topic": name}, **self._rpc),
        )

    def list_topic_subscriptions(self, name: str) -> list[str]:
        """The subscriptions attached to topic `name` now (ListTopicSubscriptions, all
        pages): what apply re-checks right before deleting it."""

        def run() -> list[str]:
            request = {"topic": name, "page_size": PAGE_SIZE}
            return [str(s) for s in self.publisher.list_topic_subscriptions(
                request=request, **self._rpc
            )]

        return _call(self.deadline, "list the subscriptions of", name, run)

    # -- org policy -----------------------------------------------------------
    def effective_policy(self, project: str) -> OrgInputs:
        """The project's effective org policy, from the snapshot or the API: which one
        was decided when the target was opened (backends/connect.py)."""
        resource = f"projects/{project}"
        if self.policy_store is not None:
            store = self.policy_store
            return OrgInputs(
                resource_locations=store.effective_spec(RESOURCE_LOCATIONS, resource),
                enforce_in_transit=store.effective_spec(ENFORCE_IN_TRANSIT, resource),
                source=self.policy_source,
                restrict_non_cmek=store.effective_spec(RESTRICT_NON_CMEK, resource),
                key_projects=store.effective_spec(RESTRICT_KEY_PROJECTS, resource),
                disable_topic_transforms=store.effective_spec(DISABLE_TOPIC_TRANSFORMS, resource),
            )
        if self.orgpolicy is None:
            raise BackendError(
                f"no Org Policy API at {self.info.label} to read the org policy of {resource}",
                hint=ORG_POLICY_UNSERVED_HINT,
            )

        def read(constraint: str) -> PolicySpec | None:
            return _spec(self.read_effective_policy(project, constraint))

        return OrgInputs(
            resource_locations=read(RESOURCE_LOCATIONS),
            enforce_in_transit=read(ENFORCE_IN_TRANSIT),
            source="api",
            restrict_non_cmek=read(RESTRICT_NON_CMEK),
            key_projects=read(RESTRICT_KEY_PROJECTS),
            disable_topic_transforms=read(DISABLE_TOPIC_TRANSFORMS),
        )

    def read_effective_policy(self, project: str, constraint: str) -> Policy | None:
        """GetEffectivePolicy for one constraint, named as the project's own policy;
        None on NOT_FOUND (no policy in the hierarchy: the constraint's default. A
        missing project is reported by ListTopics, which plan always calls too)."""
        resource = f"projects/{project}"
        name = f"{resource}/policies/{constraint}"
        if self.orgpolicy is None:
            raise BackendError(
                f"no Org Policy API at {self.info.label} to read {name}",
                hint=ORG_POLICY_UNSERVED_HINT,
            )
        orgpolicy = self.orgpolicy

        def run() -> Any:
            try:
                return orgpolicy.get_effective_policy(request={"name": name}, **self._rpc)
            except gexc.NotFound:
                return None

        policy = _call(self.policy_deadline, "read org policy", resource, run)
        if policy is None:
            return None
        data = MessageToDict(type(policy).pb(policy))
        data["name"] = name  # the service may answer with the project number
        data.pop("etag", None)
        try:
            return Policy.from_dict(data)
        except PolicyFormatError as exc:
            raise BackendError(f"unreadable effective policy {name}: {exc}") from None

    def ancestry(self, project: str) -> Ancestry:
        """Where the project sits: from the snapshot when the target was opened with
        one, else from Resource Manager (backends/hierarchy.py), or why not."""
        if self.policy_store is not None:
            return snapshot_ancestry(self.policy_store, project)
        factory = self._resourcemanager
        if factory is None:
            return Ancestry(unavailable=f"{self.info.label} serves no Resource Manager API")
        with self._hierarchy_lock:
            if self._hierarchy is None:
                self._hierarchy = HierarchyReader(*factory(), lambda: self._rpc)
            reader = self._hierarchy
        return reader.ancestry(project)

    def list_custom_constraints(self, organization: str) -> list[CustomConstraint]:
        """Every custom constraint of `organization` (organizations/ORG), all pages."""
        if self.orgpolicy is None:
            raise BackendError(
                f"no Org Policy API at {self.info.label} to list the custom constraints of "
                f"{organization}",
                hint=ORG_POLICY_UNSERVED_HINT,
            )
        orgpolicy = self.orgpolicy

        def run() -> list[Any]:
            pager = orgpolicy.list_custom_constraints(
                request={"parent": organization}, **self._rpc
            )
            return list(pager)

        out = []
        for item in _call(self.policy_deadline, "list custom constraints", organization, run):
            data = MessageToDict(type(item).pb(item))
            data.pop("updateTime", None)
            try:
                out.append(CustomConstraint.from_dict(data))
            except PolicyFormatError as exc:
                raise BackendError(
                    f"unreadable custom constraint {data.get('name', '?')}: {exc}"
                ) from None
        return out

    def custom_constraints(self, project: str, organization: str | None) -> CustomConstraints:
        """The custom constraints on topics that `project` enforces or dry-runs, with
        how: from the snapshot, or from the API (`organization`: the project's, which
        `ancestry` names; the Org Policy API alone cannot tell a project's
        organization, so without one there are none to read)."""
        resource = f"projects/{project}"
        if self.policy_store is not None:
            return tuple(self.policy_store.custom_constraints_for(resource, TOPIC))
        if organization is None:
            return ()
        with self._org_lock:
            listed = self._org_constraints.get(organization)
            if listed is None:
                listed = self._org_constraints[organization] = sorted(
                    (c for c in self.list_custom_constraints(organization)
                     if TOPIC in c.resource_types),
                    key=lambda c: c.name,
                )
        out = []
        for constraint in listed:
            policy = self.read_effective_policy(project, constraint.constraint_id)
            if policy is None:
                continue
            mode = PolicyStore(policies={policy.name: policy}).enforcement(
                constraint.constraint_id, resource
            )
            if mode is not None:
                out.append((constraint, mode))
        return tuple(out)

    # -- metrics ----------------------------------------------------------------
    def metrics(self) -> MetricsReader:
        """The Cloud Monitoring reader for this target (made on first use, closed with
        the backend), or MetricsUnavailable saying why there is none."""
        if self._metrics is None:
            if self._metrics_client is None:
                raise MetricsUnavailable(f"{self.info.label} serves no Cloud Monitoring API")
            self._metrics = open_reader(self._metrics_client, self._timeout)
        return self._metrics

    def promql(self) -> PromQLReader:
        """The Cloud Monitoring PromQL reader for this target (made on first use, closed
        with the backend), or MetricsUnavailable saying why there is none."""
        with self._promql_lock:
            if self._promql is None:
                factory = self._promql_client
                if factory is None:
                    raise MetricsUnavailable(f"{self.info.label} serves no Cloud Monitoring API")
                self._promql = open_promql(lambda: factory(self._timeout))
            return self._promql

    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:
        """Where the messages of each query's topics (scope "topic") or subscriptions
        ("subscription") are stored, from the by-region gauges: one PromQL query each,
        at most MAX_PARALLEL_READS at once (daemon threads: reconciler/background.py)."""
        found = [self._gauge_reads.submit(self._read_gauges, q) for q in queries]
        return [f.result() for f in found]

    def _read_gauges(self, query: GaugeQuery) -> StoredMessages:
        try:
            reader = self.promql()
        except MetricsUnavailable as exc:
            return StoredMessages({}, {}, unavailable=exc.reason)
        return read_stored(reader, query.project, query.scope, query.ids, query.retained)

    # -- subscriptions ------------------------------------------------------------
    def list_subscriptions(self, project: str) -> SubscriptionListing:
        """Every subscription of the project (one paged ListSubscriptions), or why they
        cannot be listed: never an error that stops a plan."""
        if self.subscriber is None:
            return SubscriptionListing(
                unavailable=f"cannot list subscriptions in {project} ({self.info.label} "
                "was opened without a Subscriber client)"
            )
        try:
            return list_subscriptions(self.subscriber, project, self._rpc)
        except BackendError as exc:  # e.g. Google Cloud unreachable (ConnectFirst)
            return SubscriptionListing(
                unavailable=f"cannot list subscriptions in {project} ({exc.message})"
            )

    def close(self) -> None:
        for reader in (self._metrics, self._promql):
            if reader is not None:
                reader.close()
        hierarchy = self._hierarchy
        rm_clients = () if hierarchy is None else (hierarchy.projects, hierarchy.folders)
        for client in (self.publisher, self.orgpolicy, self.subscriber, *rm_clients):
            close_client(client)
        if self._on_close is not None:
            self._on_close()
