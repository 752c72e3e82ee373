"""The residency report from what was read: pure, no calls.

    build_report(desired, reads, target, created_at) -> ResidencyReport

`reads` has, per project, its live topics (with their retention), the effective org
inputs, its subscriptions (or why not) and the topic by-region gauges (or why not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.backends.base import (
    DEFAULT_SUBSCRIPTION_RETENTION,
    ObservedSubscription,
    ObservedTopic,
    RegionStored,
)
from reconciler.backends.residency_reads import ProjectReads
from reconciler.frozen import FrozenDict
from reconciler.plan.observation import facts_of
from reconciler.plan.policy import expected_policy
from reconciler.residency.model import PausedExport, RegionStore, ResidencyReport, TopicResidency
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgrules import OrgFacts
from reconciler.topic import StoragePolicy, region_set


def _allows(policy: StoragePolicy | None, region: str) -> bool:
    regions = region_set(policy)
    return regions is None or region in regions


def _declared(topic: DesiredTopic, facts: OrgFacts) -> tuple[bool, StoragePolicy | None]:
    """Whether the spec manages the policy, and the policy it declares."""
    if topic.storage.mode == "unmanaged":
        return False, None
    found: StoragePolicy | None = expected_policy(topic, facts)
    return True, found


def _ages_out(retention: int, age: int | None) -> int | None:
    return None if age is None else max(0, retention - age)


def topic_residency(
    topic: DesiredTopic,
    live: ObservedTopic | None,
    facts: OrgFacts,
    subs: Sequence[ObservedSubscription] | None,
    unacked: Mapping[str, RegionStored] | None,
    retained: Mapping[str, RegionStored] | None,
    unknown: Sequence[str],
) -> TopicResidency:
    """One topic's residency (`unacked`/`retained` None: the metrics are unknown)."""
    source = FrozenDict(file=topic.file, line=topic.line) if topic.file else None
    if live is None:
        return TopicResidency(topic.address, topic.project, topic.topic, False, source=source,
                              subscriptions=None if subs is None else 0, unknown=unknown)
    topic_retention = live.retention_seconds
    policy = live.shape.policy
    held = sorted(set(unacked or {}) | set(retained or {}))
    # The declared policy is worked out only where something is stored to judge.
    managed, declared = _declared(topic, facts) if held else (False, None)
    regions = []
    if held:  # the retentions matter only where something is stored
        # Subscriptions unknown: the service's default retention is the best guess.
        guess = [DEFAULT_SUBSCRIPTION_RETENTION] if subs is None else []
        retention = max([topic_retention, *guess, *(s.retention_seconds for s in subs or ())])
        acked_retention = max(
            [topic_retention, *(s.retention_seconds for s in subs or () if s.retain_acked)]
        )
    for region in held:
        u = (unacked or {}).get(region)
        r = (retained or {}).get(region)
        rules = []
        if not _allows(policy, region):
            rules.append("live")
        if managed and not _allows(declared, region):
            rules.append("declared")
        if not facts.restriction.allows(region):
            rules.append("org")
        outs = [
            _ages_out(retention, u.oldest_age_seconds) if u else 0,
            _ages_out(acked_retention, r.oldest_age_seconds) if r else 0,
        ]
        regions.append(RegionStore(
            region,
            u.messages if u else 0, u.bytes if u else 0, u.oldest_age_seconds if u else None,
            r.messages if r else 0, r.bytes if r else 0, r.oldest_age_seconds if r else None,
            rules,  # type: ignore[arg-type]  # Rule values
            None if None in outs else max(o for o in outs if o is not None),
        ))
    outside = [r for r in regions if r.not_allowed_by]
    last = [r.ages_out_within_seconds for r in outside]
    paused = [
        PausedExport(s.name, s.kind, s.state)
        for s in sorted(subs or (), key=lambda s: s.name)
        if s.delivery_paused
    ]
    return TopicResidency(
        topic.address, topic.project, topic.topic, True,
        regions=regions,
        outside=[r.region for r in outside],
        ages_out_within_seconds=None if not last or None in last else max(
            x for x in last if x is not None),
        paused_exports=paused,
        subscriptions=None if subs is None else len(subs),
        unknown=unknown,
        source=source,
    )


def build_report(
    desired: Sequence[DesiredTopic], reads: Mapping[str, ProjectReads], target: str,
    created_at: str,
) -> ResidencyReport:
    """`reads`: what was read of each project."""
    topics = []
    notes = []
    for project in sorted(reads):
        read = reads[project]
        if read.subscriptions.unavailable is not None:
            notes.append(read.subscriptions.unavailable)
        if read.stored.unavailable is not None:
            notes.append(f"stored messages unknown: {read.stored.unavailable}")
    by_topic: dict[str, list[ObservedSubscription]] = {}
    for project in reads:
        for s in reads[project].subscriptions.subscriptions:
            by_topic.setdefault(s.topic, []).append(s)
    facts_by: dict[str, OrgFacts] = {p: facts_of(reads[p].org) for p in reads}
    for topic in sorted(desired, key=lambda t: t.address):
        read = reads[topic.project]
        unknown = []
        subs: list[ObservedSubscription] | None = by_topic.get(topic.address, [])
        if read.subscriptions.unavailable is not None:
            subs = None
            unknown.append(read.subscriptions.unavailable)
        stored = read.stored
        unacked = retained = None
        live = read.topics.get(topic.address)
        if stored.unavailable is None:
            unacked = stored.unacked.get(topic.topic, {})
            retained = stored.retained.get(topic.topic, {})
        elif live is not None and subs == [] and live.retention_seconds == 0:
            unacked = retained = {}  # no subscription, no retention: it holds nothing
        else:
            unknown.append(f"stored messages: {stored.unavailable}")
        topics.append(topic_residency(
            topic, live, facts_by[topic.project], subs, unacked, retained, unknown,
        ))
    return ResidencyReport(created_at=created_at, target=target, topics=topics, notes=notes)
