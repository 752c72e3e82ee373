"""What plan and apply need from a Pub/Sub + Org Policy service, and nothing more.

`Reads` is what a plan, `residency` and apply's freshness check read (plan/observe.py):
each project's topics, effective org policy, place in the resource hierarchy
(`ancestry`), custom constraints on topics and subscriptions, and the by-region
gauges, all through one call (`stored`). `Backend`
adds what apply changes. Both are implemented once over the real client libraries
(`reconciler.backends.client_backend`),
which serve Google Cloud, the embedded local server and any emulator alike; `Reads` is
also served by the plan's read-ahead process (plan/readahead.py).
Topic bodies are dicts in the plan's shape (`reconciler.topic.TopicShape` as JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.orgpolicy.model import PolicySpec
from reconciler.topic import ObservedTopic

if TYPE_CHECKING:  # the constraints' module loads only where custom constraints are read
    from reconciler.orgpolicy.custom import CustomConstraint
    from reconciler.orgpolicy.store import Enforcement

__all__ = [
    "Ancestry",
    "Backend",
    "BackendInfo",
    "CustomConstraints",
    "GaugeQuery",
    "ObservedSubscription",
    "ObservedTopic",
    "OrgInputs",
    "Reads",
    "RegionStored",
    "StoredMessages",
    "SubscriptionListing",
    "TargetOptions",
]


@dataclass(frozen=True)
class OrgInputs:
    """The effective org policy of one project (None = constraint default): where its
    topics may store messages (`resource_locations`, `enforce_in_transit`) and what
    the CMEK constraints ask of a new topic (`restrict_non_cmek`:
    gcp.restrictNonCmekServices, `key_projects`: gcp.restrictCmekCryptoKeyProjects;
    reconciler/orgpolicy/cmek.py reads them), and whether topics may have message
    transforms (`disable_topic_transforms`: the managed
    pubsub.managed.disableTopicMessageTransforms; reconciler/messagepaths.py)."""

    resource_locations: PolicySpec | None
    enforce_in_transit: PolicySpec | None
    source: str  # "api", "snapshot FILE"
    restrict_non_cmek: PolicySpec | None = None
    key_projects: PolicySpec | None = None
    disable_topic_transforms: PolicySpec | None = None


@dataclass(frozen=True)
class Ancestry:
    """Where a project sits in the resource hierarchy, as the target states it (Cloud
    Resource Manager: GetProject, then GetFolder up to the organization; a snapshot
    target: its `ancestry:`). `parents`: the project's folders, nearest first, then
    its organization (`organizations/O`) when it is in one; () = no parent. Or why
    it is unknown (`unavailable`: a sentence naming the resource, and the permission
    and a role that grant it, or the service's failure; never raised: a plan goes on
    without it). `parents` then holds what was read before the failure."""

    parents: tuple[str, ...] = ()
    unavailable: str | None = None

    @property
    def known(self) -> bool:
        return self.unavailable is None

    @property
    def organization(self) -> str | None:
        """organizations/O at the top, when known and the project is in one."""
        if self.known and self.parents and self.parents[-1].startswith("organizations/"):
            return self.parents[-1]
        return None


def placed(parents: Sequence[str]) -> str:
    """Where `parents` put a project, for messages: "under folders/F under
    organizations/O", or "outside any folder or organization"."""
    if not parents:
        return "outside any folder or organization"
    return f"under {' under '.join(parents)}"


# A project's custom constraints on topics, each with how the project applies it.
CustomConstraints = tuple[tuple["CustomConstraint", "Enforcement"], ...]


@dataclass(frozen=True)
class TargetOptions:
    """Where plan, apply, import and policy pull look: --local, --emulator HOST:PORT,
    --org-policy FILE, and --timeout SECONDS (the deadline of each call to it);
    `state_dir`: --local's absolute state directory (None: anchored at the current
    directory, reconciler/localstate.py)."""

    local: bool = False
    emulator: str | None = None
    org_policy: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    state_dir: Path | None = None


ServiceKind = Literal["gcp", "local", "emulator"]
OrgPolicySource = Literal["api", "snapshot"]


@dataclass(frozen=True)
class BackendInfo:
    """What a backend is and can do, stated when it is opened (backends/connect.py), so
    that plan, apply and messages never guess it from a label or an attribute.

    `kind` and `address`: Google Cloud, the embedded local server (its state
    directory) or an emulator (HOST:PORT). `google_emulator`: the server there is
    Google's Pub/Sub emulator, which computes no message storage policy and cannot
    update labels or storage policies. `org_policy`: where `effective_policy`
    answers from, the Org Policy API or the snapshot file `snapshot` (the sha256 of
    its bytes: `snapshot_sha256`); `ancestry` answers from the same source (Cloud
    Resource Manager with the API, the snapshot's `ancestry:` otherwise);
    `snapshot_fallback`: that snapshot is the spec tree's own, used because the
    emulator serves neither the Org Policy nor the Resource Manager API. `served_by`: for
    the local state, the address of the `reconcile local-server` serving it ("" when
    embedded in this process). Worked out once, before the backend is made
    (backends/target.py, backends/connect.py), and never changed after."""

    kind: ServiceKind = "gcp"
    address: str = ""
    google_emulator: bool = False
    org_policy: OrgPolicySource = "api"
    snapshot: str = ""
    snapshot_fallback: bool = False
    served_by: str = ""
    snapshot_sha256: str = ""

    @property
    def label(self) -> str:
        """For messages: "gcp", "local (DIR)", "emulator HOST:PORT"."""
        if self.kind == "local":
            return f"local ({self.address})"
        if self.kind == "emulator":
            return f"emulator {self.address}"
        return "gcp"

    @property
    def computes_storage_policy(self) -> bool:
        """Does the service derive a topic's storage policy from the org policy
        (`messageStoragePolicy: inherit`)? Google's emulator does not."""
        return not self.google_emulator


SubscriptionKind = Literal["pull", "push", "bigquery", "cloud_storage"]
PAUSED_STATE = "IN_TRANSIT_LOCATION_RESTRICTION"
DEFAULT_SUBSCRIPTION_RETENTION = 7 * 24 * 3600  # the service's default, seconds


class ObservedSubscription(NamedTuple):
    """A live subscription as plan and residency need it. `state`: the export config's
    state for bigquery / cloud_storage (e.g. IN_TRANSIT_LOCATION_RESTRICTION), else the
    subscription's own (ACTIVE, RESOURCE_ERROR); `retention_seconds`: how long an
    unacknowledged (and, with `retain_acked`, an acknowledged) message is kept. A
    tuple: a project lists thousands, and the plan's read-ahead hands them over as
    rows, which `_make` turns back into values more cheaply than a dataclass's
    constructor would."""

    name: str  # projects/P/subscriptions/S
    topic: str  # projects/P/topics/T, or _deleted-topic_
    kind: SubscriptionKind
    state: str
    retention_seconds: int
    retain_acked: bool

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def delivery_paused(self) -> bool:
        """An export paused by in-transit restriction, or a push subscription in
        RESOURCE_ERROR (the API has no in-transit state for push; the local server
        reports a paused push so, and the service any push it cannot deliver)."""
        if self.state == PAUSED_STATE:
            return True
        return self.kind == "push" and self.state == "RESOURCE_ERROR"


@dataclass(frozen=True)
class SubscriptionListing:
    """One project's subscriptions, or why they could not be listed (`unavailable`:
    a sentence naming the permission and role; plan and residency go on without)."""

    subscriptions: tuple[ObservedSubscription, ...] = ()
    unavailable: str | None = None
    calls: int = 0  # ListSubscriptions pages read


@dataclass(frozen=True, slots=True)
class RegionStored:
    """What the by-region gauges say is stored in one region (None: not reported)."""

    region: str
    messages: int
    bytes: int | None
    oldest_age_seconds: int | None


@dataclass(frozen=True)
class StoredMessages:
    """Where the messages of a project's topics (or subscriptions) are stored:
    resource id -> region -> figures, unacknowledged and retained acknowledged
    separately; `unavailable`: why the metrics could not be read (None: read)."""

    unacked: dict[str, dict[str, RegionStored]]
    retained: dict[str, dict[str, RegionStored]]
    unavailable: str | None = None
    calls: int = 0


GaugeScope = Literal["topic", "subscription"]


class GaugeQuery(NamedTuple):
    """One read of the by-region gauges: in `project`, of its topics or subscriptions
    (`scope`), only `ids` (None: every one), and with `retained` the retained
    acknowledged messages' gauges too. A tuple: equal queries are one read."""

    project: str
    scope: GaugeScope
    ids: tuple[str, ...] | None = None
    retained: bool = False


class Reads(Protocol):
    """What is read of a target to plan against it (plan/observe.py), to report where
    its messages are stored (`residency`) and to check a saved plan is still true."""

    info: BackendInfo

    def list_topics(self, project: str) -> list[ObservedTopic]:
        """Every topic of the project (one paged ListTopics)."""
        ...

    def effective_policy(self, project: str) -> OrgInputs:
        """The project's effective org policy: from the --org-policy snapshot or the
        Org Policy API, whichever the target was opened with."""
        ...

    def ancestry(self, project: str) -> Ancestry:
        """Where the project sits (its folders and organization), from Resource Manager
        or the --org-policy snapshot, whichever the target was opened with; read once
        per project and once per folder in a run. Why not, as a value."""
        ...

    def custom_constraints(self, project: str, organization: str | None) -> CustomConstraints:
        """The custom constraints on topics that `project` enforces or dry-runs, from
        the same source as `effective_policy`; from the API they are those of
        `organization` (the Org Policy API cannot tell a project's organization:
        `ancestry` does), and without one there are none to read."""
        ...

    def list_subscriptions(self, project: str) -> SubscriptionListing:
        """One paged ListSubscriptions; why not, as a value, when it cannot be read."""
        ...

    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:
        """Where messages are stored, by the by-region gauges: one answer per query, in
        its order, the queries read at once (unavailable: why not, as a value)."""
        ...

    def close(self) -> None: ...


class Backend(Reads, Protocol):
    """`Reads`, and the calls apply makes."""

    def get_topic(self, name: str) -> ObservedTopic | None: ...

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic: ...

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic: ...

    def delete_topic(self, name: str) -> None: ...

    def list_topic_subscriptions(self, name: str) -> list[str]:
        """The topic's subscriptions (ListTopicSubscriptions, every page)."""
        ...
