"""The org-policy rules for one desired topic, decided in one place.

`validate` applies them to the org-policy snapshot and places each problem on the
offending key or value of the spec; `plan` applies them to the live effective org
policy and places them on the topic. Both report the same codes and messages.

A refusal that rests on an inferred value-group membership (`in:us-locations` and
the other unverified groups of reconciler/data/locations.yaml) is a warning that says
so: the region may well be a member. `--strict-groups` (validate, plan) turns those
warnings back into errors (`promote_inferred`). A region outside the geography such a
group can hold (asia-east1 for in:us-locations) is certainly refused: an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

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
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
    PolicySpec,
)
from reconciler.orgpolicy.publishing import Landing, Refusal, land
from reconciler.orgpolicy.store import PolicyStore, ancestry_chain
from reconciler.spec.desired import DesiredTopic
from reconciler.topicrules import split_kms_key
from reconciler.yamlio import Document, PathKey

POLICY = ("spec", "messageStoragePolicy")
REGIONS = (*POLICY, "allowedPersistenceRegions")
PUBLISHER_REGIONS = ("spec", "publishers", "regions")
PUBLISHER_ENDPOINT = ("spec", "publishers", "endpoint")
KMS_KEY = ("spec", "kmsKeyName")
TOPIC = ("metadata", "name")
# Every diagnostic that rests on inferred group membership carries this phrase; it is
# how `promote_inferred` finds them again (one place writes it, one place reads it).
INFERRED_MARK = "rests on inferred value-group membership"


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


def facts_from_specs(
    resource_locations: PolicySpec | None,
    in_transit: PolicySpec | None,
    non_cmek: PolicySpec | None = None,
    key_projects: PolicySpec | None = None,
    ancestry: Mapping[str, str] | None = None,
) -> OrgFacts:
    return OrgFacts(
        location_restriction(resource_locations), enforce_in_transit(in_transit),
        cmek_required(non_cmek), key_projects, ancestry or {},
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
    )


@dataclass(frozen=True)
class OrgProblem:
    """One broken rule. `path` is the spec key at fault; `value`, when set, is the list
    item under it (a region) that the caller locates."""

    severity: Severity
    code: str
    message: str
    path: tuple[str, ...]
    value: str | None = None
    hint: str | None = None
    # The regions the org policy allows, for `allowed_note` to print once per project.
    allowed: tuple[str, ...] | None = None


# Where `allowed_note` puts the allowed regions in a message (control characters:
# nothing from a spec or a policy can contain them).
ALLOWED_SLOT = "\x00allowed\x00"


def allowed_note(problem: OrgProblem, project: str, listed: set[str]) -> str:
    """The problem's message with the regions its org policy allows: listed in full
    the first time for `project` (then recorded in `listed`), referred to after that,
    so that adopting many topics does not repeat a long list on every line."""
    if problem.allowed is None:
        return problem.message.replace(ALLOWED_SLOT, "")
    if project in listed:
        note = f" (allowed: as listed in the first {problem.code} message of project {project})"
    else:
        listed.add(project)
        note = f" (allowed: {', '.join(problem.allowed) or 'none'})"
    return problem.message.replace(ALLOWED_SLOT, note)


def locate(doc: Document, path: tuple[str, ...], value: str | None) -> PathKey:
    """The path of `value` inside the list at `path` in this document (a region may be
    declared here or come from a Defaults document: then the topic itself is blamed)."""
    node = doc.data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return ("metadata", "name")
        node = node[part]
    if value is None:
        return path
    if isinstance(node, list) and value in node:
        return (*path, node.index(value))
    return path


def kept_as_is(problem: OrgProblem, address: str) -> OrgProblem:
    """A region refusal for a live topic whose storage policy the plan leaves as it
    is: the service refuses only a call that sets the policy, so the plan's other
    changes go through; a warning saying what the service would refuse."""
    if problem.code != "org-location-denied" or problem.value is None:
        return problem
    return replace(
        problem,
        severity=Severity.WARNING,
        message=(
            f"topic {address} exists with region {problem.value!r} in its storage policy, "
            f"which the effective constraints/gcp.resourceLocations no longer allows"
            f"{ALLOWED_SLOT}; the plan leaves the policy as it is, and the service refuses "
            "changing it while it lists the region"
        ),
    )


CMEK_CODES = frozenset({"org-cmek-required", "org-cmek-key-project"})


def created_only(problem: OrgProblem, address: str) -> OrgProblem:
    """A CMEK problem of a topic that exists: the CMEK constraints bind only a new
    topic (reconciler/orgpolicy/cmek.py), so the service refuses none of the plan's
    calls for it; a warning saying what the constraint asks and that it was not asked
    of this topic."""
    if problem.code not in CMEK_CODES or problem.severity is not Severity.ERROR:
        return problem
    return replace(
        problem,
        severity=Severity.WARNING,
        message=(
            f"topic {address} exists, and the CMEK constraints apply only when a topic "
            f"is created, so the service does not refuse changing it; for a new topic: "
            f"{problem.message}"
        ),
        hint=None,  # what to do for a new topic: nothing is asked of this one
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
        "--strict-groups makes this an error]"
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
    """`--strict-groups`: every warning that rests on inferred membership is an error."""
    return [
        replace(d, severity=Severity.ERROR)
        if d.severity is Severity.WARNING and INFERRED_MARK in d.message
        else d
        for d in diagnostics
    ]


def org_problems(topic: DesiredTopic, facts: OrgFacts) -> list[OrgProblem]:
    """Every semantics rule that ties a topic to the effective org policy."""
    restriction = facts.restriction
    storage = topic.storage
    out: list[OrgProblem] = []
    if storage.mode == "inherit" and restriction.allowed == frozenset():
        out.append(
            OrgProblem(
                Severity.ERROR, "org-deny-all",
                f"the effective constraints/gcp.resourceLocations of project {topic.project} "
                "allows no region, so `inherit` has no storage policy to follow; the service "
                "would answer FAILED_PRECONDITION (fix the org policy, or list the regions)",
                POLICY,
            )
        )
    if storage.mode == "explicit":
        for region in storage.regions:
            if not restriction.allows(region):
                severity, message = _inferred(
                    Severity.ERROR,
                    f"region {region!r} is not allowed by the effective "
                    f"constraints/gcp.resourceLocations of project {topic.project}"
                    f"{ALLOWED_SLOT}{_outside(region, restriction)}; the service would refuse "
                    f"creating topic {topic.address} with it, or changing the topic's storage "
                    "policy to it (FAILED_PRECONDITION)",
                    restriction.inferred_basis(region),
                )
                out.append(OrgProblem(
                    severity, "org-location-denied", message, REGIONS, region,
                    hint=f"drop {region!r} from allowedPersistenceRegions, or write "
                    "`messageStoragePolicy: inherit` to take the regions the org policy "
                    "allows",
                    allowed=tuple(restriction.allowed_regions()),
                ))
        if facts.enforce_in_transit and storage.enforce_in_transit is False:
            out.append(
                OrgProblem(
                    Severity.WARNING, "org-in-transit",
                    f"constraints/{ENFORCE_IN_TRANSIT} is enforced for project "
                    f"{topic.project}, so the service stores enforceInTransit: true whatever "
                    "the spec says (on the wire false and unset are the same); the plan "
                    "expects true. Write true, or omit it",
                    (*POLICY, "enforceInTransit"),
                )
            )
    out.extend(_publisher_problems(topic, facts))
    out.extend(cmek_problems(topic, facts))
    return out


def cmek_problems(topic: DesiredTopic, facts: OrgFacts) -> list[OrgProblem]:
    """The CMEK constraints (reconciler/orgpolicy/cmek.py): a topic without a key where
    new topics need one, a key from a project the org does not allow. A key's location
    against the storage policy's regions is not checked: the service's documentation
    states no rule for a Pub/Sub topic."""
    key = topic.kms_key_name
    if key is None:
        if not facts.cmek_required:
            return []
        return [OrgProblem(
            Severity.ERROR, "org-cmek-required",
            f"the effective constraints/{RESTRICT_NON_CMEK} of project {topic.project} "
            f"requires a customer-managed key for {PUBSUB_SERVICE}, so the service refuses "
            f"to create topic {topic.address} without one",
            TOPIC,
            hint="declare kmsKeyName here or in a Defaults document; the constraint "
            "binds only a new topic: if this one exists already, `reconcile plan` reads it "
            "and reports this as a warning",
        )]
    if facts.key_projects is None:
        return []
    split = split_kms_key(key)
    if split is None:
        return []  # reported as a malformed name already
    key_project = f"projects/{split[0]}"
    verdict = key_project_verdict(facts.key_projects, ancestry_chain(facts.ancestry, key_project))
    allowed = ", ".join(
        v for r in facts.key_projects.rules if not r.condition for v in r.allowed_values
    ) or "none listed"
    if verdict == "denied":
        return [OrgProblem(
            Severity.ERROR, "org-cmek-key-project",
            f"kmsKeyName is a key of {key_project}, which the effective "
            f"constraints/{RESTRICT_KEY_PROJECTS} of project {topic.project} does not "
            f"allow (allowed: {allowed}); the service refuses a topic protected by it. "
            "Use a key from an allowed project",
            KMS_KEY,
        )]
    if verdict == "unknown":
        return [OrgProblem(
            Severity.WARNING, "org-cmek-key-project",
            f"cannot tell whether constraints/{RESTRICT_KEY_PROJECTS} of project "
            f"{topic.project} allows keys of {key_project} (allowed: {allowed}): the "
            f"org-policy snapshot does not say where {key_project} sits in the hierarchy. "
            f"Add `ancestry: {{{key_project}: folders/F}}` (and its folders) to the "
            "snapshot, or name the project itself in the policy",
            KMS_KEY,
        )]
    return []


def _publisher_problems(topic: DesiredTopic, facts: OrgFacts) -> list[OrgProblem]:
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

    allowed_text = ", ".join(sorted(allowed))
    example = f"{sorted(allowed)[0]}-pubsub.googleapis.com"
    out: list[OrgProblem] = []

    def add(severity: Severity, code: str, text: str, path: tuple[str, ...], region: str) -> None:
        severity, text = _inferred(severity, text, basis(region))
        out.append(OrgProblem(severity, code, text, path, region))

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
                f"publishers.endpoint {endpoint!r} ({host}) is outside the allowed regions "
                f"({allowed_text}) and enforceInTransit is on: publishing through it will "
                "fail with FAILED_PRECONDITION; use an endpoint in an allowed region",
                PUBLISHER_ENDPOINT, endpoint,
            )
        elif Refusal.ORDERING in through.refusals:
            add(
                Severity.ERROR, "publisher-ordering-region",
                f"publishers use ordering keys through {host}, but the storage policy "
                f"excludes {endpoint!r} (allowed: {allowed_text}); publishing with an "
                "ordering key will fail; use an endpoint in an allowed region",
                PUBLISHER_ENDPOINT, endpoint,
            )
        elif through.rerouted:
            add(
                Severity.WARNING, "publisher-region-rerouted",
                f"publishers.endpoint {endpoint!r} is outside the allowed regions "
                f"({allowed_text}); messages published through it are rerouted to the "
                "nearest allowed region (added latency)",
                PUBLISHER_ENDPOINT, endpoint,
            )
        return out
    for region in topic.publisher_regions:
        found = landing(region)
        if Refusal.ORDERING in found.refusals:
            add(
                Severity.ERROR, "publisher-ordering-region",
                f"publishers in {region!r} use ordering keys, but the storage policy "
                f"excludes their nearest region (allowed: {allowed_text}); publishing "
                "with an ordering key will fail; publish through a regional endpoint in an "
                f"allowed region (publishers.endpoint, e.g. {example})",
                PUBLISHER_REGIONS, region,
            )
        elif Refusal.IN_TRANSIT in found.refusals:
            add(
                Severity.WARNING, "publisher-region-denied",
                f"publishers in {region!r} will get FAILED_PRECONDITION unless they publish "
                "through a regional endpoint in an allowed region: enforceInTransit is on and "
                f"the policy allows only {allowed_text}; use e.g. {example} and declare "
                "it as publishers.endpoint, or add the region",
                PUBLISHER_REGIONS, region,
            )
        elif found.rerouted:
            add(
                Severity.WARNING, "publisher-region-rerouted",
                f"publishers in {region!r} are outside the allowed regions "
                f"({allowed_text}); their messages are rerouted to the nearest allowed "
                "region (added latency)",
                PUBLISHER_REGIONS, region,
            )
    return out


def _nowhere_to_publish(topic: DesiredTopic, by_org_policy: bool) -> list[OrgProblem]:
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
            f"{who} cannot publish to this topic, from any region or through any "
            f"endpoint: {cause}",
            path, region,
        )
        for path, region, who in where
    ]
