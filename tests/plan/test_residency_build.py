"""The residency report's figures from given reads (residency/build.py): which policy
disallows a region, and when the last message there ages out."""

from __future__ import annotations

from reconciler.backends.base import ObservedSubscription, RegionStored
from reconciler.orgpolicy.locations import LocationRestriction
from reconciler.residency.build import topic_residency
from reconciler.spec.desired import DesiredTopic, StorageIntent
from reconciler.spec.orgrules import OrgFacts
from reconciler.topic import ObservedTopic, StoragePolicy, TopicShape

SHAPE = TopicShape({}, StoragePolicy(("europe-west1", "us-east1"), False))
LIVE = ObservedTopic.of_shape("projects/p/topics/t", SHAPE, "")


def _sub(name: str, retention: int, retain_acked: bool = False, kind: str = "pull",
         state: str = "ACTIVE") -> ObservedSubscription:
    return ObservedSubscription(
        f"projects/p/subscriptions/{name}", "projects/p/topics/t", kind,  # type: ignore[arg-type]
        state, retention, retain_acked,
    )


def test_a_region_the_org_policy_no_longer_allows_is_outside_and_ages_out_by_the_longest_retention(
) -> None:
    topic = DesiredTopic("p", "t", storage=StorageIntent("unmanaged"))
    facts = OrgFacts(LocationRestriction(frozenset({"europe-west1"})), False)
    subs = [_sub("a", 3600), _sub("b", 7200)]
    unacked = {
        "us-east1": RegionStored("us-east1", 5, 50, 600),
        "europe-west1": RegionStored("europe-west1", 1, 10, 30),
    }
    found = topic_residency(topic, LIVE, facts, subs, unacked, {}, [])
    regions = {r.region: r for r in found.regions}
    assert regions["us-east1"].not_allowed_by == ["org"]  # unmanaged: no declared policy
    assert regions["us-east1"].ages_out_within_seconds == 7200 - 600
    assert regions["europe-west1"].not_allowed_by == []
    assert found.outside == ["us-east1"] and found.ages_out_within_seconds == 6600
    assert found.has_findings


def test_retained_acked_messages_age_out_by_the_retaining_subscriptions_and_topic_retention(
) -> None:
    topic = DesiredTopic("p", "t", storage=StorageIntent("explicit", ("europe-west1",), False))
    facts = OrgFacts(LocationRestriction(None), False)
    subs = [_sub("keeps", 1800, retain_acked=True), _sub("long", 86400)]
    retained = {"us-east1": RegionStored("us-east1", 2, 20, 100)}
    retaining = ObservedTopic.of_shape("projects/p/topics/t", SHAPE, "", 3000)
    found = topic_residency(topic, retaining, facts, subs, {}, retained, [])
    [region] = found.regions
    assert region.not_allowed_by == ["declared"]
    assert region.retained_acked_messages == 2 and region.unacked_messages == 0
    assert region.ages_out_within_seconds == 3000 - 100  # topic retention beats 1800 s


def test_unknown_metrics_and_a_paused_export_are_reported_not_guessed() -> None:
    topic = DesiredTopic("p", "t")
    facts = OrgFacts(LocationRestriction(None), False)
    subs = [_sub("bq", 600, kind="bigquery", state="IN_TRANSIT_LOCATION_RESTRICTION")]
    found = topic_residency(topic, LIVE, facts, subs, None, None, ["metrics: no role"])
    assert found.regions == [] and found.unknown == ["metrics: no role"]
    assert [p.name for p in found.paused_exports] == ["projects/p/subscriptions/bq"]
    assert found.has_findings
