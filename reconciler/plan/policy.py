"""What the org policy makes of a topic's storage policy, so that the differ, drift
reports and apply agree: the policy the service computes, the one a spec asks for, and
how a live policy is out of step with the org policy."""

from __future__ import annotations

from reconciler.orgpolicy.locations import catalog
from reconciler.plan.model import DRIFT_ALLOWS_DISALLOWED, DRIFT_BOTH, DRIFT_MISSES_ALLOWED
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgrules import OrgFacts
from reconciler.topic import StoragePolicy, norm_policy, region_set


def computed_policy(facts: OrgFacts) -> StoragePolicy | None:
    """The policy the service gives a topic created without one (or recomputed): the
    regions the org policy allows, with its in-transit enforcement. No
    resource-location constraint = no policy at all (every region)."""
    allowed = facts.restriction.allowed
    if allowed is None:
        return None
    return norm_policy(StoragePolicy.of(allowed, facts.enforce_in_transit))


def explicit_request_policy(
    desired: DesiredTopic, facts: OrgFacts, live: StoragePolicy | None = None
) -> StoragePolicy:
    """The whole object an explicit intent sends (regions and enforce_in_transit); an
    omitted enforceInTransit is what the org policy decides, and an enforcing org policy
    makes it true whatever the spec says (the service forces it: `false` and unset are
    the same on the wire), so the plan expects what the topic will carry; but a topic
    that exists with it off, as the spec says, keeps it off (`keeps_in_transit_off`)."""
    eit = desired.storage.enforce_in_transit
    if keeps_in_transit_off(desired, live, facts):
        return StoragePolicy.of(desired.storage.regions, False)
    return StoragePolicy.of(desired.storage.regions, facts.enforce_in_transit or bool(eit))


def keeps_in_transit_off(
    desired: DesiredTopic, live: StoragePolicy | None, facts: OrgFacts
) -> bool:
    """An explicit `enforceInTransit: false` on a topic that exists with it off and
    the declared regions, under an enforcing in-transit constraint: org policy changes
    do not reach existing topics, so the topic is what the spec says, and no call
    turns it on (an existing violation, reported: spec/orgrules.py). A change of the
    regions is a call that sets the policy, where the service turns it on."""
    storage = desired.storage
    return (
        facts.enforce_in_transit
        and storage.mode == "explicit"
        and storage.enforce_in_transit is False
        and live is not None
        and not live.enforce_in_transit
        and region_set(live) == frozenset(storage.regions)
    )


def expected_policy(
    desired: DesiredTopic, facts: OrgFacts, live: StoragePolicy | None = None
) -> StoragePolicy | None:
    """What the topic's storage policy should be once applied (managed modes only);
    `live`: its policy now, when it exists."""
    if desired.storage.mode == "inherit":
        return computed_policy(facts)
    return norm_policy(explicit_request_policy(desired, facts, live))


def drift_category(
    live: StoragePolicy | None, facts: OrgFacts
) -> tuple[str, list[str], list[str]] | None:
    """(category, disallowed-but-allowed-by-topic, allowed-but-missing) or None."""
    allowed = facts.restriction.allowed
    topic = region_set(live)
    if allowed is None and topic is None:
        return None
    every = frozenset(catalog().regions)
    topic_set = every if topic is None else topic
    policy_set = every if allowed is None else allowed
    disallowed = sorted(topic_set - policy_set)
    missing = sorted(policy_set - topic_set)
    if disallowed and missing:
        return DRIFT_BOTH, disallowed, missing
    if disallowed:
        return DRIFT_ALLOWS_DISALLOWED, disallowed, missing
    if missing:
        return DRIFT_MISSES_ALLOWED, disallowed, missing
    return None


def narrowing_warning(before: StoragePolicy | None, after: StoragePolicy | None) -> str | None:
    """A change that removes regions: messages already stored there stay there."""
    b, a = region_set(before), region_set(after)
    if a is None:
        return None
    removed = (frozenset(catalog().regions) if b is None else b) - a
    if not removed:
        return None
    what = (
        f"from every region to {', '.join(sorted(a))}"
        if b is None
        else f"no longer allowed: {', '.join(sorted(removed))}"
    )
    return (
        f"narrows the storage regions ({what}); messages already stored elsewhere are "
        "not moved: the change applies only to messages published after it"
    )
