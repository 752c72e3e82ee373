"""The existing family of the org-policy rules: what the effective org policy would
refuse of a new topic, judged on a topic that exists and keeps it (`existing_problems`).

The rules of spec/orgrules.py decide what a topic may be; these decide what the plan
says of one the service already holds: plan (plan/orgcheck.py) and import (the marks
it writes at each such value) ask this one function, so a mark and the plan's warning
never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.diagnostics import Severity
from reconciler.orgpolicy.cmek import PUBSUB_SERVICE
from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESTRICT_KEY_PROJECTS, RESTRICT_NON_CMEK
from reconciler.orgpolicy.publishing import receiving_region, refuses_in_transit
from reconciler.spec.orgrules import (
    EXISTING_CMEK,
    EXISTING_ENDPOINT,
    EXISTING_IN_TRANSIT,
    EXISTING_KEY_PROJECT,
    EXISTING_LOCATION,
    KMS_KEY_PATH,
    POLICY,
    PUBLISHER_ENDPOINT,
    REGIONS,
    TOPIC,
    TOPIC_WORDS,
    OrgFacts,
    OrgProblem,
    allowed_key_projects,
    allowed_text,
    key_verdict,
)
from reconciler.topic import StoragePolicy


@dataclass(frozen=True)
class Standing:
    """A topic that exists, as the plan leaves it, as far as the org's rules read it:
    its key, its storage policy, and whether the plan's call sends the policy (then
    the call is judged, not the standing value) and whether the spec declares regions
    (an unmanaged policy out of step with the org is reported as drift instead)."""

    project: str
    kms_key_name: str | None
    policy: StoragePolicy | None
    policy_sent: bool
    regions_declared: bool
    # The publishers' endpoint (`reconcile-publish-endpoint`) the topic has and the
    # spec declares, so the plan leaves it (None: none, or the plan sets another).
    endpoint: str | None = None


def existing_problems(standing: Standing, facts: OrgFacts) -> list[OrgProblem]:
    """The existing family: what the effective org policy would refuse of a new topic,
    on a topic that has it and keeps it (one problem per rule and topic). None of them
    stops a plan: the CMEK constraints bind only creation (Google's "CMEK organization
    policies" page) and the location constraint only what is created or set (its
    "Restricting resource locations" page; the Pub/Sub page: org policy changes do not
    propagate to existing topics); the plan leaves the value as it is (docs/validate.md,
    "Existing topics")."""
    out: list[OrgProblem] = []
    project = standing.project
    key = standing.kms_key_name
    if key is None and facts.cmek_required:
        out.append(OrgProblem(
            Severity.WARNING, EXISTING_CMEK,
            f"{TOPIC_WORDS} exists without a customer-managed key, which the effective "
            f"constraints/{RESTRICT_NON_CMEK} of project {project} requires of a new "
            f"{PUBSUB_SERVICE} topic; the constraint binds only creation, so the plan's "
            "calls are not refused, and the plan leaves the topic without a key",
            TOPIC,
            hint="to comply, declare kmsKeyName (UpdateTopic sets it) or recreate the "
            "topic with a key",
        ))
    if key is not None and (verdict := key_verdict(key, facts)) and verdict[0] == "denied":
        out.append(OrgProblem(
            Severity.WARNING, EXISTING_KEY_PROJECT,
            f"{TOPIC_WORDS} is protected by a key of {verdict[1]}, which the effective "
            f"constraints/{RESTRICT_KEY_PROJECTS} of project {project} does not allow "
            f"for a new topic (allowed: {allowed_key_projects(facts)}); the constraint "
            "binds only creation, so the plan's calls are not refused, and the key stays",
            KMS_KEY_PATH,
            hint="to comply, declare a kmsKeyName of an allowed project",
        ))
    policy = standing.policy
    if policy is None or standing.policy_sent or not policy.regions:
        return out
    restriction = facts.restriction
    if standing.regions_declared:
        refused = [r for r in policy.regions if not restriction.allows(r)]
        if refused:
            inferred = sorted({
                f"in:{g.name}" for r in refused for g in restriction.inferred_basis(r)
            })
            maybe = (
                f" (resting on inferred value-group membership of {', '.join(inferred)}: "
                "they may be allowed)" if inferred else ""
            )
            listed = ", ".join(repr(r) for r in refused)
            out.append(OrgProblem(
                Severity.WARNING, EXISTING_LOCATION,
                f"{TOPIC_WORDS} exists with region{'s' if len(refused) > 1 else ''} "
                f"{listed} in its storage policy, which the effective "
                f"constraints/gcp.resourceLocations of project {project} does not allow"
                f"{maybe}{allowed_text(restriction.allowed_regions())}; the plan leaves the "
                "policy as it is, which the service does not refuse, but it refuses any "
                "change of the policy that keeps a disallowed region",
                REGIONS, refused[0],
                hint="to comply, drop the region from allowedPersistenceRegions, or "
                "write `messageStoragePolicy: inherit`",
            ))
    if standing.endpoint is not None and policy.enforce_in_transit and refuses_in_transit(
        receiving_region(standing.endpoint), policy.regions, True
    ):
        host = f"{standing.endpoint}-pubsub.googleapis.com"
        out.append(OrgProblem(
            Severity.WARNING, EXISTING_ENDPOINT,
            f"{TOPIC_WORDS} exists with publishers.endpoint {standing.endpoint!r} ({host}) "
            f"outside its storage policy's regions ({', '.join(policy.regions)}) and "
            "enforceInTransit on: publishing through it fails with FAILED_PRECONDITION, "
            "today as after the plan; the endpoint is reconcile's label, which the "
            "service does not refuse, so the plan leaves it as it is",
            PUBLISHER_ENDPOINT, standing.endpoint,
            hint="to comply, declare an endpoint in one of the topic's regions",
        ))
    if facts.enforce_in_transit and not policy.enforce_in_transit:
        out.append(OrgProblem(
            Severity.WARNING, EXISTING_IN_TRANSIT,
            f"{TOPIC_WORDS} exists with enforceInTransit off, and "
            f"constraints/{ENFORCE_IN_TRANSIT} is enforced for project {project} now; "
            "the plan leaves it off (the org policy does not reach existing topics), "
            "and the service turns it on with any call that sets the storage policy",
            (*POLICY, "enforceInTransit"),
            hint="to comply, write `enforceInTransit: true`",
        ))
    return out
