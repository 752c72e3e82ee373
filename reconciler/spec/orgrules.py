"""The org-policy rules for one desired topic, decided in one place.

`validate` applies them to the org-policy snapshot and places each problem on the
offending key or value of the spec; `plan` applies them to the live effective org
policy and places them on the topic. Both report the same codes and messages.

The rules read an `OrgSubject`: everything of a topic they judge except its name, so
that a plan of many topics works a verdict out once per distinct subject; a message
names its topic through `TOPIC_SLOT`, filled in for each topic (`OrgProblem.worded`),
so no verdict can carry one topic's name to another.

Existing is not new: a refusal that only a new topic (or a change to the value) meets
(`OrgProblem.existing`: the CMEK constraints bind only creation; a region the location
constraint no longer allows is refused only in a call that sets the storage policy)
cannot be decided offline, where nothing says whether the topic exists. `validate`
reports it as a warning that says so (`plan_decides`); `plan` refuses it for a new
topic and for a call that carries it, and reports a topic that has the value already
once, in the `existing-*` family (`spec/orgexisting.py`), without changing it.

A refusal that rests on an inferred value-group membership (`in:us-locations` and
the other unverified groups of reconciler/data/locations.yaml) is a warning that says
so: the region may well be a member. `--strict-groups` (validate, plan) turns those
warnings back into errors (`promote_inferred`). A region outside the geography such a
group can hold (asia-east1 for in:us-locations) is certainly refused: an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.orgpolicy.cmek import PUBSUB_SERVICE, cmek_required, key_project_verdict
from reconciler.orgpolicy.locations import (
    LocationRestriction,
    ValueGroup,
    catalog,
    enforce_in_transit,
    location_restriction,
)
from reconciler.orgpolicy.model import (
    DISABLE_TOPIC_TRANSFORMS,
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
    PolicySpec,
)
from reconciler.orgpolicy.publishing import (
    Landing,
    Refusal,
    land,
)
from reconciler.orgpolicy.store import PolicyStore, ancestry_chain
from reconciler.spec.desired import DesiredTopic, StorageIntent
from reconciler.topicfields import HEDGING, KMS_KEY, STORAGE_POLICY
from reconciler.topicrules import split_kms_key
from reconciler.yamlio import Document, PathKey

POLICY = STORAGE_POLICY.spec_path
REGIONS = (*POLICY, "allowedPersistenceRegions")
PUBLISHER_REGIONS = (*HEDGING.spec_path, "regions")
PUBLISHER_ENDPOINT = (*HEDGING.spec_path, "endpoint")
KMS_KEY_PATH = KMS_KEY.spec_path
TOPIC = ("metadata", "name")
# Every diagnostic that rests on inferred group membership carries this phrase; it is
# how `promote_inferred` finds them again (one place writes it, one place reads it).
INFERRED_MARK = "rests on inferred value-group membership"
# Every refusal `validate` leaves to plan because only an existing topic escapes it
# carries this phrase: `promote_inferred` leaves it a warning, and a plan, which
# decides it from the live topic, puts its own verdict in its place.
PLAN_DECIDES = "the topic may exist, so `reconcile plan` decides"
# Where a message names its topic (a control character: no spec or policy holds one).
TOPIC_SLOT = "\x00topic\x00"
TOPIC_WORDS = f"topic {TOPIC_SLOT}"
WHY_SLOT = "\x00why\x00"  # what an UpdateTopic sets (`OrgProblem.on_update`)
# The existing family: a value the org would refuse today on a topic that has it.
EXISTING_CMEK = "existing-cmek-required"
EXISTING_KEY_PROJECT = "existing-cmek-key-project"
EXISTING_LOCATION = "existing-location-denied"
EXISTING_IN_TRANSIT = "existing-in-transit-off"
# reconcile's own guard, not the service's: a `reconcile-publish-endpoint` label is a
# label to the service, which refuses none; publishing through that endpoint is what
# fails, for a topic that has the label already as for a new one.
EXISTING_ENDPOINT = "existing-publisher-endpoint"


@dataclass(frozen=True)
class OrgFacts:
    """What the effective org policy says for one project: its location restriction,
    in-transit enforcement, whether new topics need a customer-managed key
    (`cmek_required`) and which projects' keys may protect them (`key_projects`, the
    effective restrictCmekCryptoKeyProjects; `ancestry` places a key's project in the
    hierarchy as far as it is known)."""

    restriction: LocationRestriction
    enforce_in_transit: bool
    cmek_required: bool = False
    key_projects: PolicySpec | None = None
    ancestry: Mapping[str, str] = field(default_factory=dict, compare=False)
    # pubsub.managed.disableTopicMessageTransforms enforced (reconciler/messagepaths.py)
    transforms_disabled: bool = False


def facts_from_specs(
    resource_locations: PolicySpec | None,
    in_transit: PolicySpec | None,
    non_cmek: PolicySpec | None = None,
    key_projects: PolicySpec | None = None,
    ancestry: Mapping[str, str] | None = None,
    disable_transforms: PolicySpec | None = None,
) -> OrgFacts:
    return OrgFacts(
        location_restriction(resource_locations), enforce_in_transit(in_transit),
        cmek_required(non_cmek), key_projects, ancestry or {},
        enforce_in_transit(disable_transforms),  # a boolean constraint, read the same way
    )


def org_facts(store: PolicyStore | None, project: str) -> OrgFacts | None:
    if store is None:
        return None
    resource = f"projects/{project}"
    return facts_from_specs(
        store.effective_spec(RESOURCE_LOCATIONS, resource),
        store.effective_spec(ENFORCE_IN_TRANSIT, resource),
        store.effective_spec(RESTRICT_NON_CMEK, resource),
        store.effective_spec(RESTRICT_KEY_PROJECTS, resource),
        store.ancestry,
        store.effective_spec(DISABLE_TOPIC_TRANSFORMS, resource),
    )


class OrgSubject(NamedTuple):
    """What the org-policy rules read of a declared topic: all of it but its name
    (`org_problems` cannot read the name, so a verdict may serve every topic with the
    same subject)."""

    project: str
    storage: StorageIntent
    publisher_regions: tuple[str, ...]
    publisher_endpoint: str | None
    message_ordering: bool
    kms_key_name: str | None


def subject_of(topic: DesiredTopic) -> OrgSubject:
    return OrgSubject(
        topic.project, topic.storage, topic.publisher_regions, topic.publisher_endpoint,
        topic.message_ordering, topic.kms_key_name,
    )


@dataclass(frozen=True)
class OrgProblem:
    """One broken rule. `path` is the spec key at fault; `value`, when set, is the list
    item under it (a region) that the caller locates. The message and hint name the
    topic as `TOPIC_SLOT` (`worded` fills it in). `existing`: the code of the
    existing family this refusal becomes for a topic that has the value already (None:
    a refusal whatever exists)."""

    severity: Severity
    code: str
    message: str
    path: tuple[str, ...]
    value: str | None = None
    hint: str | None = None
    existing: str | None = None
    # A refusal a topic that exists meets in an UpdateTopic too: what it says then,
    # why the call carries the value in `WHY_SLOT` (`on_update` fills it in).
    update_message: str | None = None

    def worded(self, address: str) -> tuple[str, str | None]:
        """(message, hint) naming the topic `address`."""
        hint = None if self.hint is None else self.hint.replace(TOPIC_SLOT, address)
        return self.message.replace(TOPIC_SLOT, address), hint

    def on_update(self, why: str) -> OrgProblem:
        """The refusal as the UpdateTopic of a topic that exists meets it: the call
        carries the value (`why`: what the call sets) while the topic keeps it."""
        if self.update_message is None:
            return self
        return replace(
            self, message=self.update_message.replace(WHY_SLOT, why),
            hint=f"{self.hint}; or, to leave the topic's storage policy as it is, declare "
            "it as it is (its regions, and enforceInTransit: false where it is off)",
        )


def allowed_text(regions: Iterable[str]) -> str:
    """` (allowed: ...)`, the regions the org policy allows, for a message."""
    return f" (allowed: {', '.join(regions) or 'none'})"


def locate(doc: Document, path: tuple[str | int, ...], value: str | None) -> PathKey:
    """The path of `value` inside the list at `path` in this document (a region may be
    declared here or come from a Defaults document: then the topic itself is blamed)."""
    node = doc.data_for_message()
    for part in path:
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            continue
        if not isinstance(node, dict) or part not in node:
            return ("metadata", "name")
        node = node[part]
    if value is None:
        return path
    if isinstance(node, list) and value in node:
        return (*path, node.index(value))
    return path


def plan_decides(problem: OrgProblem) -> OrgProblem:
    """`validate`'s form of a problem that only a new topic, or a change to the value,
    meets (`problem.existing`): a warning saying that the topic may exist and that
    `plan` decides, from the live topic."""
    if problem.existing is None:
        return problem
    if problem.existing == EXISTING_LOCATION:
        what = (
            "it refuses a new topic before any call, and any change of the storage "
            "policy to it; a topic that lists it already keeps it, reported as "
            f"{EXISTING_LOCATION}"
        )
    elif problem.existing == EXISTING_ENDPOINT:
        what = (
            "a new topic, or a change that sets this endpoint or the storage policy, is "
            "refused; a topic that has both already keeps them, reported as "
            f"{EXISTING_ENDPOINT}"
        )
    elif problem.existing == EXISTING_IN_TRANSIT:
        what = (
            "a new topic, or a call that sets the storage policy, gets true; a topic "
            "that has it off and keeps its regions keeps it off, reported as "
            f"{EXISTING_IN_TRANSIT}"
        )
    else:
        what = (
            "the constraint binds only a topic's creation: it refuses a new topic "
            f"before any call, and reports an existing one as {problem.existing}"
        )
    return replace(
        problem, severity=Severity.WARNING, message=f"{problem.message} [{PLAN_DECIDES}: {what}]"
    )


def unknown_group_problems(project: str, facts: OrgFacts) -> list[OrgProblem]:
    """Value groups the org policy names that the location data does not know."""
    out = []
    for group in facts.restriction.unknown_groups:
        suggestion = catalog().suggest_group(group)
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        out.append(
            OrgProblem(
                Severity.ERROR, "org-unknown-group",
                f"the org policy of project {project} uses the value group {group!r}, "
                f"which reconcile does not know.{hint} Fix the policy value, or, if Google "
                "added the group, add it with its regions to reconciler/data/locations.yaml",
                ("metadata", "project"),
            )
        )
    for value in sorted(set(facts.restriction.under_values)):
        out.append(
            OrgProblem(
                Severity.WARNING, "org-under-value",
                f"the org policy of project {project} uses {value!r}: `under:` names a "
                "resource-hierarchy subtree (e.g. under:organizations/123), not a location "
                f"value group; reconcile reads it as 'in:{value.split(':', 1)[1]}' and treats "
                "what follows from it as unverified. Use `in:` for value groups",
                ("metadata", "project"),
            )
        )
    return out


def _inferred(
    severity: Severity, message: str, basis: tuple[ValueGroup, ...]
) -> tuple[Severity, str]:
    """A refusal resting on inferred membership: a warning that says which group."""
    if not basis:
        return severity, message
    groups = "; ".join(sorted({f"in:{g.name} ({g.basis})" for g in basis}))
    return Severity.WARNING, (
        f"{message} [{INFERRED_MARK}: membership not verified for {groups}; the "
        "region may be a member. "
        "--strict-groups counts it as refused]"
    )


def _outside(region: str, restriction: LocationRestriction) -> str:
    """Why a refusal is certain although the allowed groups' members are inferred:
    the region lies outside the geography every member of theirs lies in."""
    if restriction.inferred_basis(region) or not restriction.allowed_inferred:
        return ""
    bounds = "; ".join(
        f"in:{g.name} holds only {', '.join(g.within)} regions"
        for g in sorted(restriction.allowed_inferred, key=lambda g: g.name)
        if g.within and all(p.endswith("*") for p in g.within)
    )
    return f"; {region} is in none of the allowed groups: {bounds}" if bounds else ""


def promote_inferred(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """`--strict-groups`: every warning that rests on inferred membership is an error,
    but for one that only `plan` can decide (the topic may exist): it counts as
    refused there."""
    return [
        replace(d, severity=Severity.ERROR)
        if d.severity is Severity.WARNING and INFERRED_MARK in d.message
        and PLAN_DECIDES not in d.message
        else d
        for d in diagnostics
    ]


def org_problems(topic: OrgSubject, facts: OrgFacts) -> list[OrgProblem]:
    """Every semantics rule that ties a topic to the effective org policy (a topic's
    subject: `subject_of`)."""
    restriction = facts.restriction
    storage = topic.storage
    out: list[OrgProblem] = []
    if storage.mode == "inherit" and restriction.allowed == frozenset():
        out.append(
            OrgProblem(
                Severity.ERROR, "org-deny-all",
                f"the effective constraints/gcp.resourceLocations of project {topic.project} "
                f"allows no region, so `inherit` has no storage policy to follow for "
                f"{TOPIC_WORDS}; the service would answer FAILED_PRECONDITION (fix the org "
                "policy, or list the regions)",
                POLICY,
            )
        )
    if storage.mode == "explicit":
        allowed = allowed_text(restriction.allowed_regions())
        for region in storage.regions:
            if not restriction.allows(region):
                basis = restriction.inferred_basis(region)
                denied = (
                    f"region {region!r} is not allowed by the effective "
                    f"constraints/gcp.resourceLocations of project {topic.project}"
                    f"{allowed}{_outside(region, restriction)}; "
                )
                severity, message = _inferred(
                    Severity.ERROR,
                    f"{denied}the service would refuse creating {TOPIC_WORDS} with it, or "
                    "changing the topic's storage policy to it (FAILED_PRECONDITION)",
                    basis,
                )
                _, on_update = _inferred(
                    Severity.ERROR,
                    f"{denied}the plan's UpdateTopic of {TOPIC_WORDS} sets its storage "
                    f"policy ({WHY_SLOT}) while it keeps the region, which the service "
                    "refuses (FAILED_PRECONDITION)",
                    basis,
                )
                out.append(OrgProblem(
                    severity, "org-location-denied", message, REGIONS, region,
                    hint=f"drop {region!r} from allowedPersistenceRegions, or write "
                    "`messageStoragePolicy: inherit` to take the regions the org policy "
                    "allows",
                    existing=EXISTING_LOCATION, update_message=on_update,
                ))
        if facts.enforce_in_transit and storage.enforce_in_transit is False:
            out.append(
                OrgProblem(
                    Severity.WARNING, "org-in-transit",
                    f"constraints/{ENFORCE_IN_TRANSIT} is enforced for project "
                    f"{topic.project}, so the service stores enforceInTransit: true on "
                    f"{TOPIC_WORDS} whatever the spec says when a call sets its storage "
                    "policy (on the wire false and unset are the same); the plan expects "
                    "true. Write true, or omit it",
                    (*POLICY, "enforceInTransit"),
                    existing=EXISTING_IN_TRANSIT,
                )
            )
    out.extend(_publisher_problems(topic, facts))
    out.extend(cmek_problems(topic.project, topic.kms_key_name, facts))
    return out


def allowed_key_projects(facts: OrgFacts) -> str:
    assert facts.key_projects is not None
    return ", ".join(
        v for r in facts.key_projects.rules if not r.condition for v in r.allowed_values
    ) or "none listed"


def cmek_problems(project: str, key: str | None, facts: OrgFacts) -> list[OrgProblem]:
    """The CMEK constraints (reconciler/orgpolicy/cmek.py) on a new topic of `project`
    with the key `key`: none where new topics need one, a key from a project the org
    does not allow. A key's location against the storage policy's regions is not
    checked: the service's documentation states no rule for a Pub/Sub topic."""
    if key is None:
        if not facts.cmek_required:
            return []
        return [OrgProblem(
            Severity.ERROR, "org-cmek-required",
            f"the effective constraints/{RESTRICT_NON_CMEK} of project {project} "
            f"requires a customer-managed key for {PUBSUB_SERVICE}, so the service refuses "
            f"to create {TOPIC_WORDS} without one",
            TOPIC,
            hint="declare kmsKeyName here or in a Defaults document",
            existing=EXISTING_CMEK,
        )]
    verdict = key_verdict(key, facts)
    if verdict is None:
        return []
    key_project = verdict[1]
    if verdict[0] == "denied":
        return [OrgProblem(
            Severity.ERROR, "org-cmek-key-project",
            f"kmsKeyName of {TOPIC_WORDS} is a key of {key_project}, which the effective "
            f"constraints/{RESTRICT_KEY_PROJECTS} of project {project} does not "
            f"allow (allowed: {allowed_key_projects(facts)}); the service refuses to "
            "create a topic protected by it. Use a key from an allowed project",
            KMS_KEY_PATH,
            existing=EXISTING_KEY_PROJECT,
        )]
    if verdict[0] == "unknown":
        return [OrgProblem(
            Severity.WARNING, "org-cmek-key-project",
            f"cannot tell whether constraints/{RESTRICT_KEY_PROJECTS} of project "
            f"{project} allows keys of {key_project} (allowed: "
            f"{allowed_key_projects(facts)}), the key of {TOPIC_WORDS}: the org-policy "
            f"snapshot does not say where {key_project} sits in the hierarchy. "
            f"Add `ancestry: {{{key_project}: folders/F}}` (and its folders) to the "
            "snapshot, or name the project itself in the policy",
            KMS_KEY_PATH,
        )]
    return []


def key_verdict(key: str, facts: OrgFacts) -> tuple[str, str] | None:
    """(verdict, the key's project) under the effective restrictCmekCryptoKeyProjects;
    None when no such policy applies or the key name is malformed (reported as such
    already)."""
    if facts.key_projects is None:
        return None
    split = split_kms_key(key)
    if split is None:
        return None
    key_project = f"projects/{split[0]}"
    chain = ancestry_chain(facts.ancestry, key_project)
    return key_project_verdict(facts.key_projects, chain), key_project


def _publisher_problems(topic: OrgSubject, facts: OrgFacts) -> list[OrgProblem]:
    """Where publishers' messages go: decidable only when the policy is managed.

    With in-transit enforcement, publishers outside the allowed regions must publish
    through a locational endpoint (REGION-pubsub.googleapis.com) in an allowed region:
    fine when `publishers.endpoint` names one, a warning when none is declared, an
    error when the declared one is not allowed. Ordering keys follow the endpoint.
    Where a Publish lands and why it is refused is the rule the local server applies
    too (`reconciler.orgpolicy.publishing.land`); this says what it means for a spec."""
    storage = topic.storage
    endpoint = topic.publisher_endpoint
    if storage.mode == "unmanaged" or not (topic.publisher_regions or endpoint):
        return []
    restriction: LocationRestriction | None = None
    if storage.mode == "explicit":
        allowed: frozenset[str] | None = frozenset(storage.regions)
        enforce = facts.enforce_in_transit or bool(storage.enforce_in_transit)
    else:
        restriction = facts.restriction
        allowed = restriction.allowed
        enforce = facts.enforce_in_transit
    if allowed is None:
        return []
    if not allowed:
        return _nowhere_to_publish(topic, restriction is not None)

    def basis(region: str) -> tuple[ValueGroup, ...]:
        return restriction.inferred_basis(region) if restriction is not None else ()

    allowed_list = ", ".join(sorted(allowed))
    example = f"{sorted(allowed)[0]}-pubsub.googleapis.com"
    out: list[OrgProblem] = []

    # Enforcement the spec turns off and only the org policy turns on: a topic that
    # exists with it off and keeps it off (plan/policy.py `keeps_in_transit_off`) does
    # not refuse these publishers, so what rests on it is decided where existence is
    # known, like the enforcement itself (`existing`: plan/orgcheck.py drops it there).
    org_only = (
        storage.mode == "explicit" and storage.enforce_in_transit is False
        and facts.enforce_in_transit
    )

    def add(severity: Severity, code: str, text: str, path: tuple[str, ...], region: str,
            in_transit: bool = False, existing: str | None = None) -> None:
        severity, text = _inferred(severity, text, basis(region))
        if in_transit and org_only:
            existing = EXISTING_IN_TRANSIT
        out.append(OrgProblem(severity, code, text, path, region, existing=existing))

    regions = sorted(allowed)  # ties between equally near regions: name order

    def landing(received: str) -> Landing:
        return land(received, regions, enforce_in_transit=enforce,
                    ordering=topic.message_ordering)

    if endpoint is not None:
        # The endpoint decides where messages enter, whatever the publishers' regions.
        through = landing(endpoint)
        host = f"{endpoint}-pubsub.googleapis.com"
        if Refusal.IN_TRANSIT in through.refusals:
            add(
                Severity.ERROR, "publisher-endpoint-denied",
                f"publishers.endpoint {endpoint!r} ({host}) of {TOPIC_WORDS} is outside the "
                f"allowed regions "
                f"({allowed_list}) and enforceInTransit is on: publishing through it will "
                "fail with FAILED_PRECONDITION; use an endpoint in an allowed region",
                PUBLISHER_ENDPOINT, endpoint, in_transit=True, existing=EXISTING_ENDPOINT,
            )
        elif Refusal.ORDERING in through.refusals:
            add(
                Severity.ERROR, "publisher-ordering-region",
                f"publishers of {TOPIC_WORDS} use ordering keys through {host}, but the "
                f"storage policy excludes {endpoint!r} (allowed: {allowed_list}); publishing "
                "with an ordering key will fail; use an endpoint in an allowed region",
                PUBLISHER_ENDPOINT, endpoint,
            )
        elif through.rerouted:
            add(
                Severity.WARNING, "publisher-region-rerouted",
                f"publishers.endpoint {endpoint!r} of {TOPIC_WORDS} is outside the allowed "
                f"regions "
                f"({allowed_list}); messages published through it are rerouted to the "
                "nearest allowed region (added latency)",
                PUBLISHER_ENDPOINT, endpoint,
            )
        return out
    for region in topic.publisher_regions:
        found = landing(region)
        if Refusal.ORDERING in found.refusals:
            add(
                Severity.ERROR, "publisher-ordering-region",
                f"publishers of {TOPIC_WORDS} in {region!r} use ordering keys, but the "
                f"storage policy excludes their nearest region (allowed: {allowed_list}); "
                "publishing with an ordering key will fail; publish through a regional "
                f"endpoint in an allowed region (publishers.endpoint, e.g. {example})",
                PUBLISHER_REGIONS, region,
            )
        elif Refusal.IN_TRANSIT in found.refusals:
            add(
                Severity.WARNING, "publisher-region-denied",
                f"publishers of {TOPIC_WORDS} in {region!r} will get FAILED_PRECONDITION "
                "unless they publish "
                "through a regional endpoint in an allowed region: enforceInTransit is on and "
                f"the policy allows only {allowed_list}; use e.g. {example} and declare "
                "it as publishers.endpoint, or add the region",
                PUBLISHER_REGIONS, region, in_transit=True,
            )
        elif found.rerouted:
            add(
                Severity.WARNING, "publisher-region-rerouted",
                f"publishers of {TOPIC_WORDS} in {region!r} are outside the allowed regions "
                f"({allowed_list}); their messages are rerouted to the nearest allowed "
                "region (added latency)",
                PUBLISHER_REGIONS, region,
            )
    return out


def _nowhere_to_publish(topic: OrgSubject, by_org_policy: bool) -> list[OrgProblem]:
    """Publishers of a topic whose policy allows no region at all: no endpoint or
    region of theirs can help (the error on the policy itself says what to fix)."""
    if by_org_policy:
        cause = (
            f"the effective constraints/gcp.resourceLocations of project {topic.project} "
            "allows no region, so the topic has none to store messages in (see "
            "org-deny-all); fix the org policy"
        )
    else:
        cause = "the storage policy lists no region; list at least one"
    endpoint = topic.publisher_endpoint
    if endpoint is not None:
        host = f"{endpoint}-pubsub.googleapis.com"
        where = [(PUBLISHER_ENDPOINT, endpoint, f"publishers using {host}")]
    else:
        where = [(PUBLISHER_REGIONS, r, f"publishers in {r!r}") for r in topic.publisher_regions]
    return [
        OrgProblem(
            Severity.WARNING, "publisher-region-denied",
            f"{who} cannot publish to {TOPIC_WORDS}, from any region or through any "
            f"endpoint: {cause}",
            path, region,
        )
        for path, region, who in where
    ]
