"""What a plan's changes do to the topics' consumers and stored messages: the
subscriptions a change affects (in-transit enforcement, removed regions, a delete),
exports already paused, messages left behind in removed regions, prune refusals and
probable renames. Pure functions over the observation (plan/observe.py) and the
changes the differ made, and one step that `make_plan` calls (`consumer_step`). The
by-region gauges (`backend.stored`: one call per project, backends/stored.py) are read
only for the changes that remove regions (`LeftBehindReads`, asked for project by
project while the differ goes on) and the prune candidates with subscriptions; a
subscribed candidate is deleted only with --prune-subscribed or the Owner document's
pruneSubscribed entry naming it.

    consumer_step(changes, topics, candidates, observation, backend, prune_subscribed,
                  owner, left_behind_reads)
    affected_regions(rc) -> AffectedPolicy | None       what a change does to where
    consumer_warnings(subs, affected) -> list[str]
    paused_export_diagnostic(topic, subs) -> Diagnostic | None
    left_behind(affected, stored, unknown) -> (figures, why unknown, warnings)
    prune_refusal(name, subs, unknown, backlog) -> Diagnostic
    probable_renames(creates, undeclared) -> {address: warning}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.backends.base import (
    ObservedSubscription,
    RegionStored,
    StoredAnswer,
    StoredMessages,
)
from reconciler.codec import replace
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.ownership import OWN_LABELS
from reconciler.plan.differ import delete_change, owned_by
from reconciler.plan.model import LeftBehind, ResourceChange, SubscriptionRef, topic_state
from reconciler.spec.desired import DesiredTopic, Owner
from reconciler.spec.durations import age_text
from reconciler.topic import STORAGE_POLICY, StoragePolicy, region_set

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
    value = state.get(STORAGE_POLICY)
    return None if value is None else StoragePolicy.from_json(value)


def affected_regions(rc: ResourceChange) -> AffectedPolicy | None:
    """None unless an update (or a delete's absence of one) changes where messages may
    be stored or processed in a way that can affect consumers or stored messages."""
    if rc.action != "update" or STORAGE_POLICY not in rc.update_mask:
        return None
    before, after = _policy(rc.change.before), _policy(rc.change.after)
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
    )


def left_behind(
    affected: AffectedPolicy,
    stored: Mapping[str, RegionStored] | None,
    unknown: str | None,
) -> tuple[list[LeftBehind], str | None, list[str]]:
    """What is stored in the regions the change removes: the figures, why they are
    unknown, and the warnings that say it."""
    if not affected.removes_regions:
        return [], None, []
    if stored is None:
        why = unknown or "not read"
        return [], why, [
            f"what is stored in the removed regions is unknown ({why}); stored messages "
            "are not moved by a policy change"
        ]
    allowed = affected.allowed
    found = [
        LeftBehind(r.region, r.messages, r.bytes, r.oldest_age_seconds)
        for r in sorted(stored.values(), key=lambda r: r.region)
        if allowed is not None and r.region not in allowed
        and (affected.removed is None or r.region in affected.removed)
    ]
    if not found:
        return [], None, [
            "nothing unacknowledged is stored in the removed regions (by the by-region gauges)"
        ]
    warnings = []
    for item in found:
        size = "" if item.bytes is None else f", {item.bytes} bytes"
        warnings.append(
            f"{item.messages} unacknowledged messages{size} stay stored in {item.region}, "
            f"which the new policy no longer allows (oldest {age_text(item.oldest_age_seconds)}): "
            "a policy change does not move stored messages; they leave when acknowledged or "
            "when their retention ends"
        )
    return found, None, warnings


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
    )


def delete_warnings(
    subs: Sequence[ObservedSubscription] | None, backlog: Mapping[str, int] | None
) -> list[str]:
    if subs is None:
        return ["its subscriptions are unknown: any it has are detached and stop receiving"]
    if not subs:
        return ["it has no subscriptions"]
    return [
        f"its subscriptions are detached and stop receiving messages: "
        f"{_listed(subs, backlog)}; their "
        "backlog is not moved to any other topic"
    ]


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


def _subs_of(observation: Any, name: str) -> list[ObservedSubscription] | None:
    project = name.split("/")[1]
    if project in observation.subscriptions_unknown:
        return None
    found: list[ObservedSubscription] = observation.subscriptions.get(name, [])
    return found


def stored_by_project(
    backend: Any, scope: str, ids: Mapping[str, list[str]]
) -> dict[str, Any]:
    """project -> StoredMessages of the unacknowledged gauges for `ids` there, every
    project's at once (`stored_many`: one request to the read-ahead, or one thread a
    project)."""
    if not ids:
        return {}
    found = backend.stored_many([(p, scope, list(wanted), False) for p, wanted in ids.items()])
    return dict(zip(ids, found, strict=True))


class LeftBehindReads:
    """The by-region gauges of the changes that remove regions, asked for as the
    differ finishes each project (`make_plan` walks the topics in address order, so a
    project's changes come together): the next projects are diffed while they are
    read, and `read` waits only for what is left (one call per project, as before)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._asked: list[tuple[str, StoredAnswer]] = []

    def project_done(self, project: str, changes: Sequence[ResourceChange]) -> None:
        ids = [
            rc.topic for rc in changes
            if (found := affected_regions(rc)) is not None and found.removes_regions
        ]
        if ids:
            answer = self._backend.ask_stored([(project, "topic", ids, False)])
            self._asked.append((project, answer))

    def read(self) -> dict[str, StoredMessages]:
        """project -> the unacknowledged gauges of its topics that lose regions."""
        return {project: answer()[0] for project, answer in self._asked}


def _backlogs(backend: Any, subs_by_project: Mapping[str, list[ObservedSubscription]]
              ) -> dict[str, dict[str, int] | None]:
    """Per project, subscription id -> unacknowledged messages (None: unknown)."""
    out: dict[str, dict[str, int] | None] = {}
    wanted = {p: [s.short_name for s in subs] for p, subs in subs_by_project.items() if subs}
    read = stored_by_project(backend, "subscription", wanted)
    for project in subs_by_project:
        stored = read.get(project)
        if stored is None:
            out[project] = None
            continue
        if stored.unavailable is not None:
            out[project] = None
            continue
        out[project] = {
            sid: sum(r.messages for r in regions.values())
            for sid, regions in stored.unacked.items()
        }
    return out


def consumer_step(
    changes: list[ResourceChange],
    topics: Mapping[str, DesiredTopic],
    candidates: Sequence[Any],
    observation: Any,
    backend: Any,
    prune_subscribed: bool,
    tree_owner: Owner,
    left_behind_reads: LeftBehindReads,
) -> ConsumerStep:
    """Subscriptions onto the changes that affect them, measured left-behind messages
    (asked for by the differ's loop: `left_behind_reads`), paused exports, and prune's
    candidates (live ObservedTopics) made into deletes or refusals: a subscribed
    candidate is deleted with `prune_subscribed`, or when the Owner document's
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
    for address, subs in observation.subscriptions.items():
        topic = topics.get(address)
        if topic is not None:
            found = paused_export_diagnostic(topic, subs)
            if found is not None:
                diagnostics.append(found)
    # Changes that affect consumers or stored messages.
    affected: dict[int, AffectedPolicy] = {}
    for i, rc in enumerate(changes):
        found_policy = affected_regions(rc)
        if found_policy is not None:
            affected[i] = found_policy
    stored = left_behind_reads.read()
    out = list(changes)
    for i, policy in affected.items():
        rc = changes[i]
        subs = _subs_of(observation, rc.address)
        warnings = consumer_warnings(subs, policy)
        measured = stored.get(rc.project)
        if measured is None:
            figures, unknown, more = left_behind(policy, None, "metrics not read")
        elif measured.unavailable is not None:
            figures, unknown, more = left_behind(policy, None, measured.unavailable)
        else:
            figures, unknown, more = left_behind(
                policy, measured.unacked.get(rc.topic, {}), None
            )
        out[i] = replace(
            rc,
            warnings=[*rc.warnings, *warnings, *more],
            subscriptions=refs(subs or ()),
            left_behind=figures,
            left_behind_unknown=unknown,
        )
    # Prune: nothing with a consumer is deleted by surprise.
    with_subs: dict[str, list[ObservedSubscription]] = {}
    for live in candidates:
        subs = _subs_of(observation, live.name)
        if subs:
            with_subs.setdefault(live.name.split("/")[1], []).extend(subs)
    backlogs = _backlogs(backend, with_subs)
    deletes: list[ResourceChange] = []
    undeclared: dict[str, Any] = {}
    for live in candidates:
        project = live.name.split("/")[1]
        subs = _subs_of(observation, live.name)
        backlog = backlogs.get(project)
        rc = delete_change(live, owner)
        undeclared[live.name] = rc.change.before
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
            reasons.append(f"its subscriptions may be detached: allowed by {allowed_by}")
        deletes.append(replace(
            rc, warnings=delete_warnings(subs, backlog), subscriptions=refs(subs or (), backlog),
            prune_subscribed_by=allowed_by, reasons=reasons,
        ))
    # Probable renames (with prune, the old topic is a candidate; without, still live).
    creates = [rc for rc in out if rc.action == "create"]
    if creates:
        for name, live in _undeclared_owned(observation, topics, owner).items():
            undeclared.setdefault(name, _state_of(live))
    renames = probable_renames(creates, undeclared)
    if renames:
        out = [
            replace(rc, warnings=[*rc.warnings, renames[rc.address]])
            if rc.address in renames else rc
            for rc in out
        ]
    return ConsumerStep(out, deletes, diagnostics)


def _state_of(live: Any) -> Mapping[str, Any]:
    shape = live.shape
    return topic_state(dict(shape.labels), shape.policy)


def _undeclared_owned(
    observation: Any, declared: Mapping[str, Any], owner: str
) -> dict[str, Any]:
    return {
        name: observation.topics[name]
        for names in observation.projects.values()
        for name in names
        if name not in declared and owned_by(observation.topics[name], owner)
    }
