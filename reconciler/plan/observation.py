"""What a plan is made against: the observation, read whole by plan/observe.py before
the plan is made, and the fingerprints of what it holds (what `apply PLANFILE`
compares with the live state again). Plain values and pure functions: make_plan and
everything it calls read only this.

    Observation(service, topics, projects, org, subscriptions, subscriptions_unknown,
                gauges, custom, custom_unavailable, organizations, hierarchy,
                hierarchy_unavailable, ancestry, stale, stale_ancestry, snapshot_file)
    observation.custom_unknown(project) -> str | None   why its custom constraints are
                                                        not known (None: they were read)
    topic_fingerprint(ObservedTopic | None) -> str
    org_fingerprint(OrgInputs, custom, parents=None) -> str
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.backends.base import (
    Ancestry,
    BackendInfo,
    CustomConstraints,
    GaugeQuery,
    GaugeScope,
    ObservedSubscription,
    ObservedTopic,
    OrgInputs,
    RegionStored,
    StoredMessages,
    SubscriptionListing,
)
from reconciler.codec import canonical_json
from reconciler.orgpolicy.cmek import cmek_required, key_projects_restricted
from reconciler.orgpolicy.locations import enforce_in_transit
from reconciler.orgpolicy.model import (
    DISABLE_TOPIC_TRANSFORMS,
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
    Policy,
)
from reconciler.spec.orgrules import OrgFacts, facts_from_specs


@dataclass
class Observation:
    """What a plan is made against, read whole before it: what the target is
    (`service`), live topics by name (every topic of every named project), each
    project's org inputs and subscriptions (or why they are unknown), and what the
    by-region gauges said (`gauges`, one answer per query). Plain values: a test
    builds one without any service.

    Where each project sits (`Reads.ancestry`: Cloud Resource Manager, or the
    --org-policy snapshot the target was opened with), exactly one of:
    - `hierarchy[project]`: its parents, nearest first: its folders ("folders/F"),
      then "organizations/O" when it is in an organization; () = no parent.
    - `hierarchy_unavailable[project]`: why its ancestry is unknown (a sentence
      naming the resource and the permission and role it needs, or the service's
      failure, or that the target serves no Resource Manager API). Its organization
      is then unknown, so no custom constraint was read for it.
    `organizations[project]`: "organizations/O", the top of a known hierarchy (the
    organization whose custom constraints were read). `stale_ancestry[project]`:
    (line, sentence) where the spec tree's snapshot (`snapshot_file`) places the
    project elsewhere than the live hierarchy does."""

    service: BackendInfo = field(default_factory=BackendInfo)
    topics: dict[str, ObservedTopic] = field(default_factory=dict)
    projects: dict[str, list[str]] = field(default_factory=dict)  # project -> names
    org: dict[str, OrgInputs] = field(default_factory=dict)
    # topic name -> its subscriptions; project -> why its subscriptions are unknown
    subscriptions: dict[str, list[ObservedSubscription]] = field(default_factory=dict)
    subscriptions_unknown: dict[str, str] = field(default_factory=dict)
    gauges: dict[GaugeQuery, StoredMessages] = field(default_factory=dict)
    # project -> the custom constraints on topics it enforces or dry-runs, and the
    # organization they were read for (the top of its `hierarchy`)
    custom: dict[str, CustomConstraints] = field(default_factory=dict)
    # project -> why reading its custom constraints failed (a permission, the network)
    custom_unavailable: dict[str, str] = field(default_factory=dict)
    # project -> why its org policy could not be read (only an import's reads note it:
    # `observe.read_topics(lenient=True)`; a plan's fail)
    org_unavailable: dict[str, str] = field(default_factory=dict)
    organizations: dict[str, str] = field(default_factory=dict)
    hierarchy: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hierarchy_unavailable: dict[str, str] = field(default_factory=dict)
    # child -> parent: the spec tree's snapshot's links, and the live ones of the
    # projects read: where a key's project sits, for gcp.restrictCmekCryptoKeyProjects
    ancestry: Mapping[str, str] = field(default_factory=dict)
    # project -> how the spec tree's snapshot (`snapshot_file`) differs from the live
    # org policy, when the plan reads the live one
    stale: dict[str, list[str]] = field(default_factory=dict)
    stale_ancestry: dict[str, tuple[int, str]] = field(default_factory=dict)
    snapshot_file: str = ""

    _facts: dict[str, OrgFacts] = field(default_factory=dict, repr=False, compare=False)

    def place(self, project: str, ancestry: Ancestry) -> None:
        """Record where `project` sits (or why that is unknown), its organization, and
        its links for the CMEK constraints' key projects."""
        if not ancestry.known:
            self.hierarchy_unavailable[project] = ancestry.unavailable or "unknown"
            return
        self.hierarchy[project] = ancestry.parents
        if ancestry.organization is not None:
            self.organizations[project] = ancestry.organization
        nodes = (f"projects/{project}", *ancestry.parents)
        self.ancestry = {**self.ancestry, **dict(itertools.pairwise(nodes))}

    def facts(self, project: str) -> OrgFacts:
        """What the org policy allows in `project`, worked out once per project (a plan
        asks for every topic)."""
        known = self._facts.get(project)
        if known is None:
            known = self._facts[project] = facts_of(self.org[project], self.ancestry)
        return known

    def custom_unknown(self, project: str) -> str | None:
        """Why the custom constraints that apply to `project` are not known, so that
        none of them could be judged (None: they were read, and `custom` holds those
        it enforces or dry-runs). The one place that decides it: the project's place
        in the hierarchy could not be learnt (`hierarchy_unavailable`: Resource
        Manager's answer, or a snapshot target that does not place it), or reading
        the constraints failed. A project known to have no organization has no custom
        constraints (judged: none apply)."""
        failed = self.custom_unavailable.get(project)
        if failed is not None:
            return f"reading them failed: {failed}"
        why = self.hierarchy_unavailable.get(project)
        if why is not None:
            return f"its organization is unknown ({why})"
        if project not in self.hierarchy:
            return f"its organization is unknown (the ancestry of projects/{project} was not read)"
        return None

    def subscriptions_of(self, name: str) -> list[ObservedSubscription] | None:
        """The subscriptions of topic `name` (projects/P/topics/T); None: unknown."""
        project = name.split("/")[1]
        if project in self.subscriptions_unknown:
            return None
        return self.subscriptions.get(name, [])

    def stored(
        self, project: str, scope: GaugeScope, resource_id: str
    ) -> tuple[Mapping[str, RegionStored] | None, str | None]:
        """What the gauges say of one topic (or subscription) id, unacknowledged, by
        region; or None and why not: no query asked for it, or why the metrics could not
        be read."""
        for query, found in self.gauges.items():
            if query.project != project or query.scope != scope:
                continue
            if query.ids is not None and resource_id not in query.ids:
                continue
            if found.unavailable is not None:
                return None, found.unavailable
            return found.unacked.get(resource_id, {}), None
        return None, "metrics not read"


def facts_of(inputs: OrgInputs, ancestry: Mapping[str, str] | None = None) -> OrgFacts:
    """What `inputs` allow a topic, as spec/orgrules.py judges it (`ancestry`: where
    a key's project sits)."""
    return facts_from_specs(
        inputs.resource_locations, inputs.enforce_in_transit, inputs.restrict_non_cmek,
        inputs.key_projects, ancestry, inputs.disable_topic_transforms,
    )


def attach_subscriptions(out: Observation, project: str, listing: SubscriptionListing) -> None:
    """Each subscription under its topic's name (a detached one, `_deleted-topic_`,
    belongs to none); why they are unknown, when they are."""
    if listing.unavailable is not None:
        out.subscriptions_unknown[project] = listing.unavailable
        return
    for sub in listing.subscriptions:
        out.subscriptions.setdefault(sub.topic, []).append(sub)


# -- fingerprints --------------------------------------------------------------


def _sha(data: Any) -> str:
    """sha256 of the canonical JSON of `data` (non-ASCII escaped: the digests of
    plans made before stay true)."""
    return hashlib.sha256(canonical_json(data, ascii=True)).hexdigest()


def topic_fingerprint(topic: ObservedTopic | None) -> str:
    """sha256 of every field of the topic, managed or not (its deterministic wire form
    when the backend gave it, else its raw JSON), or "absent"."""
    if topic is None:
        return "absent"
    return topic.digest or _sha(topic.raw or topic.body)


def org_fingerprint(
    inputs: OrgInputs, custom: CustomConstraints = (), parents: tuple[str, ...] | None = None
) -> str:
    """sha256 of what the project's effective org policy means for its topics (not of
    where it came from): the specs of the location and in-transit constraints, what
    the CMEK constraints ask of a new topic, the custom constraints on topics with
    their enforcement, and where the project sits (`parents`, `Observation.hierarchy`:
    a project moved to another folder is another org policy's). A CMEK constraint
    that asks nothing, an empty list of custom constraints, and a project with no
    parent or an unknown one (None), add nothing to the hash."""
    return _sha(_org_inputs(inputs, custom, parents))


# The inputs an org fingerprint covers, each fingerprinted alone too (`org_parts`), so
# that a stale plan's refusal names the one that changed.
ORG_PARTS = (
    RESOURCE_LOCATIONS, ENFORCE_IN_TRANSIT, RESTRICT_NON_CMEK, RESTRICT_KEY_PROJECTS,
    "custom", "parents",
)


def org_parts(
    inputs: OrgInputs, custom: CustomConstraints = (), parents: tuple[str, ...] | None = None
) -> dict[str, str]:
    """sha256 of each input `org_fingerprint` covers (ORG_PARTS; "absent" for one
    that adds nothing to it)."""
    data = _org_inputs(inputs, custom, parents)
    return {part: _sha(data[part]) if part in data else "absent" for part in ORG_PARTS}


def _org_inputs(
    inputs: OrgInputs, custom: CustomConstraints, parents: tuple[str, ...] | None
) -> dict[str, Any]:

    def spec(constraint: str, value: Any) -> Any:
        if value is None:
            return None
        return Policy(f"projects/_/policies/{constraint}", value).to_dict().get("spec", {})

    data: dict[str, Any] = {
        RESOURCE_LOCATIONS: spec(RESOURCE_LOCATIONS, inputs.resource_locations),
        ENFORCE_IN_TRANSIT: spec(ENFORCE_IN_TRANSIT, inputs.enforce_in_transit),
    }
    if cmek_required(inputs.restrict_non_cmek):
        data[RESTRICT_NON_CMEK] = True
    if enforce_in_transit(inputs.disable_topic_transforms):  # enforced: else nothing added
        data[DISABLE_TOPIC_TRANSFORMS] = True
    key_projects = key_projects_restricted(inputs.key_projects)
    if key_projects is not None:
        data[RESTRICT_KEY_PROJECTS] = key_projects._asdict()
    if custom:
        data["custom"] = [[c.to_dict(), mode] for c, mode in sorted(
            custom, key=lambda pair: pair[0].name
        )]
    if parents:
        data["parents"] = list(parents)
    return data
