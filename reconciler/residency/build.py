"""The residency report from what was read: pure, no calls.

    build_report(desired, reads, target, created_at) -> ResidencyReport

`reads` has, per project, its live topics (with their retention), the effective org
inputs, its subscriptions (or why not), the topic by-region gauges (or why not) and,
where those show something stored, the subscription gauges: which subscription holds
the copies a topic gauge counts (reconciler/backlogs.py says what they mean).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciler.backends.base import (
    DEFAULT_SUBSCRIPTION_RETENTION,
    ObservedSubscription,
    ObservedTopic,
    RegionStored,
    StoredMessages,
)
from reconciler.backends.residency_reads import ProjectReads
from reconciler.backlogs import Backlog, ages_out_within, clears_line, distinct_bounds
from reconciler.frozen import FrozenDict
from reconciler.messagepaths import VERTEX_AI_STATE, data_paths
from reconciler.plan.datapaths import live_extras
from reconciler.plan.observation import facts_of
from reconciler.plan.policy import expected_policy
from reconciler.residency.model import (
    DataPathRecord,
    PausedExport,
    RegionStore,
    ResidencyReport,
    SubscriptionBacklog,
    TopicResidency,
)
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


@dataclass(frozen=True)
class TopicInputs:
    """What one topic's residency is judged from, beyond the project's reads.
    `backlogs`: subscription id -> region -> its own figures (None: unknown)."""

    subs: Sequence[ObservedSubscription] | None
    unacked: Mapping[str, RegionStored] | None
    retained: Mapping[str, RegionStored] | None
    unknown: Sequence[str]
    backlogs: StoredMessages | None = None
    now: datetime | None = None


def topic_residency(
    topic: DesiredTopic,
    live: ObservedTopic | None,
    facts: OrgFacts,
    subs: Sequence[ObservedSubscription] | None,
    unacked: Mapping[str, RegionStored] | None,
    retained: Mapping[str, RegionStored] | None,
    unknown: Sequence[str],
    backlogs: StoredMessages | None = None,
    now: datetime | None = None,
) -> TopicResidency:
    """One declared topic's residency (`unacked`/`retained` None: the metrics are
    unknown)."""
    source = FrozenDict(file=topic.file, line=topic.line) if topic.file else None
    inputs = TopicInputs(subs, unacked, retained, unknown, backlogs, now)
    return _residency(topic.address, topic.project, topic.topic, topic, live, facts, inputs,
                      source)


def _residency(
    address: str,
    project: str,
    topic_id: str,
    desired: DesiredTopic | None,
    live: ObservedTopic | None,
    facts: OrgFacts,
    inputs: TopicInputs,
    source: Any = None,
) -> TopicResidency:
    """`desired` None: a live topic no spec declares (no declared policy to judge)."""
    subs, unacked, retained, unknown = inputs.subs, inputs.unacked, inputs.retained, inputs.unknown
    declared_topic = desired is not None
    if live is None:
        return TopicResidency(address, project, topic_id, False, declared_topic, source=source,
                              subscriptions=None if subs is None else 0, unknown=unknown)
    topic_retention = live.retention_seconds
    policy = live.shape.policy
    held = sorted(set(unacked or {}) | set(retained or {}))
    # The declared policy is worked out only where something is stored to judge.
    managed, declared = (
        _declared(desired, facts) if held and desired is not None else (False, None)
    )
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
            ages_out_within([retention], u.oldest_age_seconds) if u else 0,
            ages_out_within([acked_retention], r.oldest_age_seconds) if r else 0,
        ]
        ages_out = None if None in outs else max(o for o in outs if o is not None)
        found = _backlogs(subs, inputs.backlogs, region, project)
        unacked_backlogs = [b for b in found or () if not b.acknowledged]
        low, high = distinct_bounds(unacked_backlogs) if found is not None else (None, None)
        regions.append(RegionStore(
            region,
            u.messages if u else 0, u.bytes if u else 0, u.oldest_age_seconds if u else None,
            r.messages if r else 0, r.bytes if r else 0, r.oldest_age_seconds if r else None,
            rules,  # type: ignore[arg-type]  # Rule values
            ages_out,
            backlogs=None if found is None else _records(found),
            distinct_messages_min=low,
            distinct_messages_max=high,
            clears=clears_line(region, found, topic_retention > 0, ages_out, inputs.now,
                               project)
            if rules else None,
        ))
    outside = [r for r in regions if r.not_allowed_by]
    last = [r.ages_out_within_seconds for r in outside]
    paused = [
        PausedExport(s.name, s.kind, s.state)
        for s in sorted(subs or (), key=lambda s: s.name)
        if s.delivery_paused or s.state == VERTEX_AI_STATE
    ]
    return TopicResidency(
        address, project, topic_id, True, declared_topic,
        regions=regions,
        outside=[r.region for r in outside],
        ages_out_within_seconds=None if not last or None in last else max(
            x for x in last if x is not None),
        paused_exports=paused,
        subscriptions=None if subs is None else len(subs),
        unknown=unknown,
        source=source,
        paths=_paths(live, subs),
    )


def _paths(live: ObservedTopic, subs: Sequence[ObservedSubscription] | None
           ) -> list[DataPathRecord]:
    """Where the topic's message data goes besides its stored copies: shown for a
    topic with transforms or an ingestion source (its exports then too: where the
    models' output is written)."""
    transforms, ingestion = live_extras(live.shape)
    if not transforms and not ingestion:
        return []
    return [
        DataPathRecord(p.kind, p.what, p.location, p.detail, p.state)
        for p in data_paths(transforms, ingestion, subs)
    ]


def _backlogs(
    subs: Sequence[ObservedSubscription] | None, stored: StoredMessages | None, region: str,
    project: str,
) -> list[Backlog] | None:
    """The topic's subscriptions' copies in `region` (None: unknown)."""
    if subs is None or stored is None or stored.unavailable is not None:
        return None
    out = []
    # The gauges were read per project, keyed by subscription ID: the topic's own
    # project's subscriptions (one in another project is not broken down here).
    for s in sorted(subs, key=lambda s: s.short_name):
        if not s.name.startswith(f"projects/{project}/"):
            continue
        u = stored.unacked.get(s.short_name, {}).get(region)
        r = stored.retained.get(s.short_name, {}).get(region)
        if u is not None and u.messages:
            out.append(Backlog(s.short_name, u.messages, u.bytes, u.oldest_age_seconds))
        if r is not None and r.messages:
            out.append(Backlog(s.short_name, r.messages, r.bytes, r.oldest_age_seconds, True))
    return out


def _records(found: Sequence[Backlog]) -> list[SubscriptionBacklog]:
    """One record per subscription: its unacknowledged and retained copies."""
    by: dict[str, dict[str, Backlog]] = {}
    for b in found:
        by.setdefault(b.subscription, {})["acked" if b.acknowledged else "unacked"] = b
    out = []
    for name, kinds in sorted(by.items()):
        u, r = kinds.get("unacked"), kinds.get("acked")
        out.append(SubscriptionBacklog(
            name,
            u.messages if u else 0, u.bytes if u else 0, u.oldest_age_seconds if u else None,
            r.messages if r else 0, r.bytes if r else None, r.oldest_age_seconds if r else None,
        ))
    return out


def build_report(
    desired: Sequence[DesiredTopic], reads: Mapping[str, ProjectReads], target: str,
    created_at: str, all_live: bool = False,
) -> ResidencyReport:
    """`reads`: what was read of each project. `all_live`: also the live topics of
    those projects that no spec declares (else only named)."""
    topics = []
    notes = []
    now = datetime.fromisoformat(created_at) if created_at else None
    for project in sorted(reads):
        read = reads[project]
        if read.subscriptions.unavailable is not None:
            notes.append(read.subscriptions.unavailable)
        if read.stored.unavailable is not None:
            notes.append(f"stored messages unknown: {read.stored.unavailable}")
        if read.backlogs is not None and read.backlogs.unavailable is not None:
            notes.append(f"per-subscription backlogs unknown: {read.backlogs.unavailable}")
    by_topic: dict[str, list[ObservedSubscription]] = {}
    for project in reads:
        for s in reads[project].subscriptions.subscriptions:
            by_topic.setdefault(s.topic, []).append(s)
    facts_by: dict[str, OrgFacts] = {p: facts_of(reads[p].org) for p in reads}
    declared = {t.address for t in desired}
    undeclared = sorted(
        name for p in reads for name in reads[p].topics if name not in declared
    )
    subjects: list[tuple[str, str, str, DesiredTopic | None]] = [
        (t.address, t.project, t.topic, t) for t in desired
    ]
    if all_live:
        for name in undeclared:
            project, _, topic_id = name.removeprefix("projects/").partition("/topics/")
            subjects.append((name, project, topic_id, None))
    for address, project, topic_id, spec in sorted(subjects, key=lambda x: x[0]):
        read = reads[project]
        unknown = []
        subs: list[ObservedSubscription] | None = by_topic.get(address, [])
        if read.subscriptions.unavailable is not None:
            subs = None
            unknown.append(read.subscriptions.unavailable)
        stored = read.stored
        unacked = retained = None
        live = read.topics.get(address)
        if stored.unavailable is None:
            unacked = stored.unacked.get(topic_id, {})
            retained = stored.retained.get(topic_id, {})
        elif live is not None and subs == [] and live.retention_seconds == 0:
            unacked = retained = {}  # no subscription, no retention: it holds nothing
        else:
            unknown.append(f"stored messages: {stored.unavailable}")
        inputs = TopicInputs(subs, unacked, retained, unknown, read.backlogs, now)
        source = (FrozenDict(file=spec.file, line=spec.line)
                  if spec is not None and spec.file else None)
        topics.append(_residency(address, project, topic_id, spec, live, facts_by[project],
                                 inputs, source))
    return ResidencyReport(created_at=created_at, target=target, topics=topics, notes=notes,
                           undeclared=undeclared)
