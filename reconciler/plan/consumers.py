"""What a plan's changes do to the topics' consumers and stored messages: the
subscriptions a change affects (in-transit enforcement, removed regions, a delete),
exports already paused, messages left behind in removed regions, prune refusals and
probable renames. Pure functions over the observation (plan/observation.py) and the
changes the differ made, and one step that `make_plan` calls (`consumer_step`).

Which by-region gauges a plan shows is decided here too, for plan/observe.py to read
them before the plan is made: those of the topics whose regions the specs remove (the
same rule the differ and `affected_regions` follow, applied to the specs and the live
topics: `gauge_queries`), and the backlogs of the subscriptions of prune's candidates
(`prune_gauge_queries`). A subscribed candidate is deleted only with
--prune-subscribed or the Owner document's pruneSubscribed entry naming it.

    consumer_step(changes, topics, owned, observation, tree_owner, prune,
                  prune_subscribed) -> ConsumerStep   what make_plan adds to its changes
    gauge_queries(desired, observation) -> [GaugeQuery]   the topics that lose regions
    backlog_queries(observation, queries) -> [GaugeQuery]   their subscriptions' gauges
    prune_gauge_queries(desired, observation) -> [GaugeQuery]   candidates' backlogs
    undeclared(desired, observation) -> (owned, legacy)   prune's candidates
    outside_review(desired, observation) -> {project: [name]}   named, never changed
    affected_regions(rc) -> AffectedPolicy | None       what a change does to where
    consumer_warnings(subs, affected) -> list[str]
    paused_export_diagnostic(topic, subs) -> Diagnostic | None
    left_behind(affected, stored, unknown, backlogs, retentions, topic_retains)
        -> (figures, why unknown, warnings, notes)
    delete_said(subs, backlog) -> (warnings, notes)   what a delete does to consumers
    prune_refusal(name, subs, unknown, backlog) -> Diagnostic
    probable_renames(creates, undeclared) -> {address: warning}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.backends.base import (
    GaugeQuery,
    ObservedSubscription,
    ObservedTopic,
    RegionStored,
)
from reconciler.backlogs import (
    Backlog,
    ages_out_within,
    clears_line,
    copies_text,
    distinct_bounds,
    distinct_text,
)
from reconciler.codec import replace
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.ownership import OWN_LABELS, is_legacy, is_owned
from reconciler.plan.differ import delete_change, live_policy_of, owned_by, wanted_policy
from reconciler.plan.model import (
    BacklogRef,
    LeftBehind,
    ResourceChange,
    SubscriptionRef,
)
from reconciler.plan.observation import Observation
from reconciler.plan.reasons import Reason, ReasonKind
from reconciler.plan.topicstate import topic_state
from reconciler.spec.desired import DesiredState, DesiredTopic, Owner
from reconciler.spec.durations import age_text
from reconciler.topic import StoragePolicy, region_set
from reconciler.topicfields import STORAGE_POLICY

PULL_KINDS = ("pull",)
PRUNE_SUBSCRIBED_FLAG = "--prune-subscribed"
DELIVERED_KINDS = ("push", "bigquery", "cloud_storage")
KIND_TEXT = {
    "pull": "pull",
    "push": "push",
    "bigquery": "BigQuery export",
    "cloud_storage": "Cloud Storage export",
}


@dataclass(frozen=True)
class AffectedPolicy:
    """A change's effect on where messages may be: `removed` regions (None: the old
    policy allowed every region), the regions `allowed` after it (None: every one),
    and whether it turns in-transit enforcement on."""

    allowed: frozenset[str] | None
    removed: frozenset[str] | None
    enables_in_transit: bool
    in_transit_after: bool

    @property
    def removes_regions(self) -> bool:
        return self.removed is None or bool(self.removed)


def _policy(state: Mapping[str, Any] | None) -> StoragePolicy | None:
    if state is None:
        return None
    value = state.get(STORAGE_POLICY.proto)
    return None if value is None else StoragePolicy.from_json(value)


def affected_regions(rc: ResourceChange) -> AffectedPolicy | None:
    """None unless an update changes where messages may be stored or processed in a
    way that can affect consumers or stored messages."""
    if rc.action != "update" or STORAGE_POLICY.proto not in rc.update_mask:
        return None
    return affected_by(_policy(rc.change.before), _policy(rc.change.after))


def affected_by(
    before: StoragePolicy | None, after: StoragePolicy | None
) -> AffectedPolicy | None:
    """What changing a topic's storage policy from `before` to `after` does to where
    messages may be; None when it affects neither consumers nor stored messages."""
    b, a = region_set(before), region_set(after)
    removed: frozenset[str] | None
    if a is None:
        removed = frozenset()
    elif b is None:
        removed = None  # every region before: whatever is stored outside `a`
    else:
        removed = frozenset(b - a)
    was = bool(before and before.enforce_in_transit)
    now = bool(after and after.enforce_in_transit)
    found = AffectedPolicy(a, removed, now and not was, now)
    if not found.removes_regions and not found.enables_in_transit:
        return None
    return found


def removes_regions(desired: DesiredTopic, live: ObservedTopic, observation: Observation) -> bool:
    """Will the plan's update of `live` remove regions (its left-behind figures then
    read)? The differ's policy (`wanted_policy`) and `affected_by`, so that it is true
    of every update whose `affected_regions` removes regions; also of a few the plan
    does not make after all (refused by the org policy or the label budget), whose
    gauges are read for nothing."""
    mode = desired.storage.mode
    computes = observation.service.computes_storage_policy
    if mode == "unmanaged" or (mode == "inherit" and not computes):
        return False  # the policy is left as it is (plan/make.py)
    before = live_policy_of(live.shape.policy)
    after = wanted_policy(desired, before, observation.facts(desired.project))
    if after == before:
        return False
    found = affected_by(before, after)
    return found is not None and found.removes_regions


def gauge_queries(desired: DesiredState, observation: Observation) -> list[GaugeQuery]:
    """The unacknowledged by-region gauges of every live topic whose regions the specs
    remove: one query per project that has any. Worked out once per distinct storage
    intent and live policy of a project (a large tree has a few of each)."""
    ids: dict[str, list[str]] = {}
    known: dict[tuple[Any, ...], bool] = {}
    topics = observation.topics
    for topic in desired.topics:
        live = topics.get(topic.address)
        storage = topic.storage
        if live is None or storage.mode == "unmanaged":
            continue
        policy = live.shape.policy
        key = (  # every value removes_regions reads, in plain tuples (cheap to hash)
            topic.project, storage.mode, storage.regions, storage.enforce_in_transit,
            None if policy is None else (policy.regions, policy.enforce_in_transit),
        )
        removes = known.get(key)
        if removes is None:
            removes = known[key] = removes_regions(topic, live, observation)
        if removes:
            ids.setdefault(topic.project, []).append(topic.topic)
    return [GaugeQuery(p, "topic", tuple(sorted(found))) for p, found in sorted(ids.items())]


def undeclared(
    desired: DesiredState, observation: Observation
) -> tuple[list[ObservedTopic], list[str]]:
    """Prune's candidates (the live, undeclared topics this tree owns, in name order)
    and the undeclared topics a reconcile before owners labelled (never pruned)."""
    declared = {t.address for t in desired.topics}
    owner = desired.owner.name
    owned: list[ObservedTopic] = []
    legacy: list[str] = []
    for project in desired.projects:
        for name in sorted(observation.projects.get(project, [])):
            if name in declared:
                continue
            live = observation.topics[name]
            if owned_by(live, owner):
                owned.append(live)
            elif is_legacy(live.shape.labels):
                legacy.append(name)
    return owned, legacy


def backlog_queries(observation: Observation, queries: Sequence[GaugeQuery]) -> list[GaugeQuery]:
    """Where the left-behind gauges (`queries`, answered) show something stored: the
    gauges of those topics' subscriptions, which say which subscription holds the
    copies the topic gauge counts. One query per project, and none where nothing is
    stored."""
    ids: dict[str, set[str]] = {}
    for query in queries:
        found = observation.gauges.get(query)
        if found is None or found.unavailable is not None:
            continue
        for topic_id, regions in found.unacked.items():
            if not any(r.messages for r in regions.values()):
                continue
            name = f"projects/{query.project}/topics/{topic_id}"
            for sub in observation.subscriptions_of(name) or ():
                if sub.name.startswith(f"projects/{query.project}/"):
                    ids.setdefault(query.project, set()).add(sub.short_name)
    return [
        GaugeQuery(p, "subscription", tuple(sorted(found))) for p, found in sorted(ids.items())
    ]


def outside_review(desired: DesiredState, observation: Observation) -> dict[str, list[str]]:
    """Per managed project, its live topics that no spec declares and no reconcile tree
    owns (no ownership label: made in a console, with gcloud, by another tool): named
    by the plan, never changed by it."""
    declared = {t.address for t in desired.topics}
    out: dict[str, list[str]] = {}
    for project in sorted(set(desired.projects)):
        for name in sorted(observation.projects.get(project, [])):
            if name not in declared and not is_owned(observation.topics[name].shape.labels):
                out.setdefault(project, []).append(name)
    return out


def prune_gauge_queries(desired: DesiredState, observation: Observation) -> list[GaugeQuery]:
    """The backlogs of the subscriptions of prune's candidates (what a delete would cut
    off, or why it is refused): one query per project that has any."""
    ids: dict[str, list[str]] = {}
    for live in undeclared(desired, observation)[0]:
        for sub in observation.subscriptions_of(live.name) or ():
            ids.setdefault(live.name.split("/")[1], []).append(sub.short_name)
    return [
        GaugeQuery(p, "subscription", tuple(sorted(found))) for p, found in sorted(ids.items())
    ]


def refs(subs: Sequence[ObservedSubscription], backlog: Mapping[str, int] | None = None
         ) -> list[SubscriptionRef]:
    return [
        SubscriptionRef(
            s.name, s.kind, s.state,
            None if backlog is None else backlog.get(s.short_name, 0),
        )
        for s in sorted(subs, key=lambda s: s.name)
    ]


def _names(subs: Sequence[ObservedSubscription]) -> str:
    return ", ".join(f"{s.short_name} ({KIND_TEXT[s.kind]})" for s in subs)


def _regions(allowed: frozenset[str] | None) -> str:
    return "every region" if allowed is None else ", ".join(sorted(allowed))


def consumer_warnings(
    subs: Sequence[ObservedSubscription] | None, affected: AffectedPolicy
) -> list[str]:
    """Which of the topic's subscriptions the change affects, and how."""
    if subs is None:  # the reason is said once, per project (subscriptions-unknown)
        return ["its subscriptions are unknown (see warning subscriptions-unknown): check its "
                "consumers before applying"]
    if not subs:
        return []
    where = _regions(affected.allowed)
    out = []
    pulls = [s for s in subs if s.kind in PULL_KINDS]
    delivered = [s for s in subs if s.kind in DELIVERED_KINDS]
    if affected.in_transit_after and (affected.enables_in_transit or affected.removes_regions):
        if pulls:
            out.append(
                f"pull subscriptions {_names(pulls)}: Pull and StreamingPull from outside "
                f"{where} will be refused (FAILED_PRECONDITION); subscribers there must use a "
                "regional endpoint in an allowed region"
            )
        if delivered:
            out.append(
                f"push and export subscriptions {_names(delivered)}: delivered only inside "
                f"{where}, and paused (IN_TRANSIT_LOCATION_RESTRICTION) when their "
                "destination is outside them"
            )
    elif affected.removes_regions:
        out.append(
            f"subscriptions {_names(subs)}: still delivered as before (in-transit "
            f"enforcement is off), but new messages are stored only in {where}"
        )
    return out


def paused_export_diagnostic(
    topic: DesiredTopic, subs: Sequence[ObservedSubscription]
) -> Diagnostic | None:
    """An export (or push) subscription already paused by in-transit restriction:
    a warning on the topic, whether or not the plan changes it."""
    paused = [s for s in subs if s.delivery_paused]
    if not paused:
        return None
    names = ", ".join(f"{s.short_name} ({KIND_TEXT[s.kind]}, {s.state})" for s in paused)
    return Diagnostic(
        topic.file or topic.address, topic.line, 1 if topic.line else 0, Severity.WARNING,
        "export-paused",
        f"{topic.address}: delivery is paused for {names}: the topic enforces in-transit "
        "regions and the destination is outside them; messages wait in the backlog",
        hint="allow the destination's region in the topic's policy, or move the destination",
        topic=topic.address,
    )


def left_behind(
    affected: AffectedPolicy,
    stored: Mapping[str, RegionStored] | None,
    unknown: str | None,
    backlogs: Mapping[str, Sequence[Backlog]] | None = None,
    retentions: Sequence[int] = (),
    topic_retains: bool = False,
    project: str = "PROJECT",
) -> tuple[list[LeftBehind], str | None, list[str], list[str]]:
    """What is stored in the regions the change removes: the figures, why they are
    unknown, the warnings that say it in the residency report's words
    (reconciler/backlogs.py), and the note that nothing is stored there. `backlogs`:
    region -> the subscriptions' copies there (None: unknown); `retentions`: the
    topic's and its subscriptions' (seconds)."""
    if not affected.removes_regions:
        return [], None, [], []
    if stored is None:
        why = unknown or "not read"
        return [], why, [
            f"what is stored in the removed regions is unknown ({why}); stored messages "
            "are not moved by a policy change"
        ], []
    allowed = affected.allowed
    found = []
    warnings = []
    for r in sorted(stored.values(), key=lambda r: r.region):
        if allowed is None or r.region in allowed or not r.messages or (
                affected.removed is not None and r.region not in affected.removed):
            continue
        held = None if backlogs is None else list(backlogs.get(r.region, ()))
        low, high = distinct_bounds(held) if held else (None, None)
        clears = clears_line(r.region, held, topic_retains,
                             ages_out_within(retentions, r.oldest_age_seconds), None, project)
        found.append(LeftBehind(
            r.region, r.messages, r.bytes, r.oldest_age_seconds,
            backlogs=None if held is None else [
                BacklogRef(b.subscription, b.messages, b.bytes, b.oldest_age_seconds)
                for b in held
            ],
            distinct_messages_min=low, distinct_messages_max=high, clears=clears,
        ))
        distinct = f": {distinct_text(held)}" if held else ""
        # The verb agrees with what it follows: the distinct count, else the copies.
        one = distinct_bounds(held)[1] == 1 if held else r.messages == 1
        warnings.append(
            f"{copies_text(r.messages, r.bytes, held)}{distinct} "
            f"{'stays' if one else 'stay'} stored in {r.region}, "
            f"which the new policy no longer allows (oldest {age_text(r.oldest_age_seconds)}): "
            f"a policy change does not move stored messages; {clears}"
        )
    if not found:
        return [], None, [], [
            "nothing unacknowledged is stored in the removed regions (by the by-region gauges)"
        ]
    return found, None, warnings, []


def region_backlogs(
    observation: Observation, project: str, subs: Sequence[ObservedSubscription] | None
) -> dict[str, list[Backlog]] | None:
    """Region -> the topic's subscriptions' unacknowledged copies there, by their own
    gauges (`backlog_queries`); None: unknown (not read, or unreadable)."""
    if subs is None:
        return None
    out: dict[str, list[Backlog]] = {}
    for sub in sorted(subs, key=lambda s: s.short_name):
        if not sub.name.startswith(f"projects/{project}/"):
            continue
        stored, unknown = observation.stored(project, "subscription", sub.short_name)
        if stored is None or unknown is not None:
            return None
        for region, r in stored.items():
            if r.messages:
                out.setdefault(region, []).append(
                    Backlog(sub.short_name, r.messages, r.bytes, r.oldest_age_seconds))
    return out


def _listed(subs: Sequence[ObservedSubscription], backlog: Mapping[str, int] | None) -> str:
    """"a (pull, 3 unacknowledged), b (push)": each subscription, kind, backlog."""
    return ", ".join(
        f"{s.short_name} ({KIND_TEXT[s.kind]}"
        + ("" if backlog is None else f", {backlog.get(s.short_name, 0)} unacknowledged")
        + ")"
        for s in subs
    )


def prune_refusal(
    name: str, subs: Sequence[ObservedSubscription] | None, unknown: str | None,
    backlog: Mapping[str, int] | None,
) -> Diagnostic:
    """A managed, undeclared topic that prune would delete but that has (or may have)
    subscriptions: kept, and said so."""
    if subs is None:
        what = f"its subscriptions are unknown ({unknown})"
    else:
        count = f"{len(subs)} subscription{'s' if len(subs) != 1 else ''}"
        what = f"it has {count}: {_listed(subs, backlog)}"
    return Diagnostic(
        name, 0, 0, Severity.WARNING, "prune-subscribed",
        f"{name} is not declared and carries the ownership label, but is not deleted: {what}; "
        "deleting it would cut them off (they are detached and stop receiving messages)",
        hint="pass --prune-subscribed to delete subscribed topics too, or list this one "
        "under the Owner document's pruneSubscribed (docs/ownership.md)",
        topic=name,
    )


def delete_said(
    subs: Sequence[ObservedSubscription] | None, backlog: Mapping[str, int] | None
) -> tuple[list[str], list[str]]:
    """What a delete does to the topic's consumers: (warnings, notes)."""
    if subs is None:
        return ["its subscriptions are unknown: any it has are detached and stop receiving"], []
    if not subs:
        return [], ["it has no subscriptions"]
    return [
        f"its subscriptions are detached and stop receiving messages: "
        f"{_listed(subs, backlog)}; their "
        "backlog is not moved to any other topic"
    ], []


def rename_key(state: Mapping[str, Any] | None) -> Any:
    """Labels without the ownership label, and the storage policy: what a topic renamed
    in a spec keeps."""
    if not state:
        return None
    labels = tuple(sorted((k, v) for k, v in state["labels"].items() if k not in OWN_LABELS))
    policy = _policy(state)
    return (labels, None if policy is None else (region_set(policy), policy.enforce_in_transit))


def probable_renames(
    creates: Sequence[ResourceChange], undeclared: Mapping[str, Any]
) -> dict[str, str]:
    """Create address -> warning, where an undeclared live topic of the same project
    has the same labels and policy (`undeclared`: name -> its `before` state)."""
    index: dict[tuple[str, Any], list[str]] = {}
    for name, state in undeclared.items():
        project = name.split("/")[1]
        index.setdefault((project, rename_key(state)), []).append(name)
    out = {}
    for rc in creates:
        olds = index.get((rc.project, rename_key(rc.change.after)))
        if olds:
            out[rc.address] = (
                f"probable rename of {', '.join(sorted(olds))} (same labels and policy, no "
                "longer declared): a new topic is created; the old topic's subscriptions and "
                "stored messages do not move to it"
            )
    return out


# -- the plan step ---------------------------------------------------------------------


@dataclass
class ConsumerStep:
    """What `make_plan` gets back: the changes with their consumers, the deletes prune
    may make, and the warnings (paused exports, unknown subscriptions, refusals)."""

    changes: list[ResourceChange]
    deletes: list[ResourceChange]
    diagnostics: list[Diagnostic]


def _backlog(
    observation: Observation, project: str, subs: Sequence[ObservedSubscription]
) -> dict[str, int] | None:
    """Subscription id -> unacknowledged messages (None: unknown, or none read)."""
    out: dict[str, int] = {}
    for sub in subs:
        stored, unknown = observation.stored(project, "subscription", sub.short_name)
        if stored is None or unknown is not None:
            return None
        out[sub.short_name] = sum(r.messages for r in stored.values())
    return out or None


def consumer_step(
    changes: list[ResourceChange],
    topics: Mapping[str, DesiredTopic],
    owned: Sequence[ObservedTopic],
    observation: Observation,
    tree_owner: Owner,
    prune: bool,
    prune_subscribed: bool,
) -> ConsumerStep:
    """Subscriptions onto the changes that affect them, measured left-behind messages
    (read by observe: `gauge_queries`), paused exports, and with `prune` the live
    undeclared topics this tree owns (`owned`) made into deletes or refusals: a
    subscribed one is deleted with `prune_subscribed`, or when the Owner document's
    pruneSubscribed names it (the plan says which allowed it)."""
    owner = tree_owner.name
    diagnostics: list[Diagnostic] = [
        Diagnostic(
            project, 0, 0, Severity.WARNING, "subscriptions-unknown",
            f"{why}: plan goes on without them; changes that affect consumers are not "
            "checked against them and prune deletes no topic there",
            hint="grant the role to the account reconcile runs as",
        )
        for project, why in sorted(observation.subscriptions_unknown.items())
    ]
    # Paused exports, whatever the change.
    for address, attached in observation.subscriptions.items():
        topic = topics.get(address)
        if topic is not None:
            found = paused_export_diagnostic(topic, attached)
            if found is not None:
                diagnostics.append(found)
    # Changes that affect consumers or stored messages.
    affected: dict[int, AffectedPolicy] = {}
    for i, rc in enumerate(changes):
        found_policy = affected_regions(rc)
        if found_policy is not None:
            affected[i] = found_policy
    out = list(changes)
    for i, policy in affected.items():
        rc = changes[i]
        subs = observation.subscriptions_of(rc.address)
        warnings = consumer_warnings(subs, policy)
        measured: Mapping[str, RegionStored] | None = None
        why: str | None = None
        held: dict[str, list[Backlog]] | None = None
        live = observation.topics.get(rc.address)
        retention = live.retention_seconds if live is not None else 0
        if policy.removes_regions:
            measured, why = observation.stored(rc.project, "topic", rc.topic)
            if measured and any(r.messages for r in measured.values()):
                held = region_backlogs(observation, rc.project, subs)
        figures, unknown, more, notes = left_behind(
            policy, measured, why, held,
            [retention, *(s.retention_seconds for s in subs or ())], retention > 0,
            rc.project,
        )
        out[i] = replace(
            rc,
            warnings=[*rc.warnings, *warnings, *more],
            notes=[*rc.notes, *notes],
            subscriptions=refs(subs or ()),
            left_behind=figures,
            left_behind_unknown=unknown,
        )
    # Prune: nothing with a consumer is deleted by surprise.
    deletes: list[ResourceChange] = []
    for live in owned if prune else ():
        project = live.name.split("/")[1]
        subs = observation.subscriptions_of(live.name)
        backlog = _backlog(observation, project, subs) if subs else None
        rc = delete_change(live, owner)
        opt_in = tree_owner.prune_opt_in(live.name)
        allowed_by = (
            opt_in.reason if opt_in is not None
            else PRUNE_SUBSCRIBED_FLAG if prune_subscribed else None
        )
        if (subs is None or subs) and allowed_by is None:
            diagnostics.append(
                prune_refusal(live.name, subs, observation.subscriptions_unknown.get(project),
                              backlog)
            )
            continue
        reasons = list(rc.reasons)
        if allowed_by is not None and (subs is None or subs):
            reasons.append(Reason(ReasonKind.DETACHES, allowed_by))
        warned, noted = delete_said(subs, backlog)
        deletes.append(replace(
            rc, warnings=warned, notes=noted, subscriptions=refs(subs or (), backlog),
            prune_subscribed_by=allowed_by, reasons=reasons,
        ))
    # Probable renames (the old topic is still live, or deleted by this prune).
    creates = [rc for rc in out if rc.action == "create"]
    if creates:
        renames = probable_renames(creates, {live.name: _state_of(live) for live in owned})
        out = [
            replace(rc, warnings=[*rc.warnings, renames[rc.address]])
            if rc.address in renames else rc
            for rc in out
        ]
    return ConsumerStep(out, deletes, diagnostics)


def _state_of(live: ObservedTopic) -> Mapping[str, Any]:
    shape = live.shape
    return topic_state(dict(sorted(shape.labels.items())), shape.policy)
