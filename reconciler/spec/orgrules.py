"""The org-policy rules for one desired topic, decided in one place.

`validate` applies them to the org-policy snapshot and places each problem on the
offending key or value of the spec; `plan` applies them to the live effective org
policy and places them on the topic. Both report the same codes and messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.diagnostics import Severity
from reconciler.orgpolicy.locations import (
    LocationRestriction,
    catalog,
    enforce_in_transit,
    location_restriction,
)
from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESOURCE_LOCATIONS, PolicySpec
from reconciler.orgpolicy.store import PolicyStore
from reconciler.spec.desired import DesiredTopic

POLICY = ("spec", "messageStoragePolicy")
REGIONS = (*POLICY, "allowedPersistenceRegions")
PUBLISHER_REGIONS = ("spec", "publishers", "regions")


@dataclass(frozen=True)
class OrgFacts:
    """What the effective org policy says for one project."""

    restriction: LocationRestriction
    enforce_in_transit: bool


def facts_from_specs(
    resource_locations: PolicySpec | None, in_transit: PolicySpec | None
) -> OrgFacts:
    return OrgFacts(location_restriction(resource_locations), enforce_in_transit(in_transit))


def org_facts(store: PolicyStore | None, project: str) -> OrgFacts | None:
    if store is None:
        return None
    resource = f"projects/{project}"
    return facts_from_specs(
        store.effective_spec(RESOURCE_LOCATIONS, resource),
        store.effective_spec(ENFORCE_IN_TRANSIT, resource),
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
    return out


def org_problems(topic: DesiredTopic, facts: OrgFacts) -> list[OrgProblem]:
    """Every rule of DESIGN.md that ties a topic to the effective org policy."""
    restriction = facts.restriction
    note = restriction.unverified_note()
    suffix = f" [{note}]" if note else ""
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
                out.append(
                    OrgProblem(
                        Severity.ERROR, "org-location-denied",
                        f"region {region!r} is not allowed by the effective "
                        f"constraints/gcp.resourceLocations of project {topic.project} "
                        f"(allowed: {', '.join(restriction.allowed_regions()) or 'none'}); "
                        f"the service would reject it with FAILED_PRECONDITION{suffix}",
                        REGIONS,
                        region,
                    )
                )
        if facts.enforce_in_transit and storage.enforce_in_transit is False:
            out.append(
                OrgProblem(
                    Severity.ERROR, "org-in-transit",
                    f"constraints/{ENFORCE_IN_TRANSIT} is enforced for project "
                    f"{topic.project}, so enforceInTransit cannot be false; set it to true "
                    "or omit it",
                    (*POLICY, "enforceInTransit"),
                )
            )
    out.extend(_publisher_problems(topic, facts, suffix))
    return out


def _publisher_problems(topic: DesiredTopic, facts: OrgFacts, suffix: str) -> list[OrgProblem]:
    """Where publishers' messages go: decidable only when the policy is managed."""
    storage = topic.storage
    if storage.mode == "unmanaged" or not topic.publisher_regions:
        return []
    if storage.mode == "explicit":
        allowed: frozenset[str] | None = frozenset(storage.regions)
        enforce = (
            storage.enforce_in_transit
            if storage.enforce_in_transit is not None
            else facts.enforce_in_transit
        )
        suffix = ""
    else:
        allowed = facts.restriction.allowed
        enforce = facts.enforce_in_transit
    if allowed is None:
        return []
    allowed_text = ", ".join(sorted(allowed)) or "none"
    out = []
    for region in topic.publisher_regions:
        if region in allowed:
            continue
        if topic.message_ordering:
            out.append(
                OrgProblem(
                    Severity.ERROR, "publisher-ordering-region",
                    f"publishers in {region!r} use ordering keys, but the storage policy "
                    f"excludes their nearest region (allowed: {allowed_text}); publishing "
                    f"with an ordering key will fail{suffix}",
                    PUBLISHER_REGIONS,
                    region,
                )
            )
        elif enforce:
            out.append(
                OrgProblem(
                    Severity.ERROR, "publisher-region-denied",
                    f"publishers in {region!r} will get FAILED_PRECONDITION: enforceInTransit "
                    f"is on and the policy allows only {allowed_text}; add the region or "
                    f"move the publishers{suffix}",
                    PUBLISHER_REGIONS,
                    region,
                )
            )
        else:
            out.append(
                OrgProblem(
                    Severity.WARNING, "publisher-region-rerouted",
                    f"publishers in {region!r} are outside the allowed regions "
                    f"({allowed_text}); their messages are rerouted to the nearest allowed "
                    "region (added latency)",
                    PUBLISHER_REGIONS,
                    region,
                )
            )
    return out
