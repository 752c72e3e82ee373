"""Observe: every read a plan needs, made before the plan (which then reads nothing),
and the fingerprints of what was read.

Per project: one ListTopics pager, one ListSubscriptions pager, the effective org
policy (the location, in-transit and CMEK constraints), where the project sits
(`Reads.ancestry`: Resource Manager, or the --org-policy snapshot) and then the custom
constraints on topics it enforces or dry-runs (those of the organization its
ancestry ends at), projects in parallel (never one GetTopic per topic); then the
by-region gauges
the plan will show (`plan/consumers.py: gauge_queries`): those of the topics whose
regions the specs remove, known from the specs and the live topics before any diff, and
read while the subscriptions still are; and, with prune, the backlogs of the undeclared
topics' subscriptions; and where the left-behind gauges found something stored, the
gauges of those topics' subscriptions (which holds the copies). Subscriptions or
gauges that cannot be read are a note of the project, not a failure. What the org
policy makes of a topic is plan/policy.py's; how topics compare is reconciler/topic.py's.

Stable entry points:
    observe(reads, desired, prune=False) -> Observation     what make_plan is given
    read_topics(reads, projects) -> Observation          topics, org policy, ancestry and
                                                     custom constraints only (apply's
                                                     freshness check; `import`'s reads,
                                                     `lenient`)
The observation itself, and its fingerprints, are plan/observation.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from reconciler.backends.base import Ancestry, CustomConstraints, ObservedTopic, OrgInputs, Reads
from reconciler.background import Background
from reconciler.errors import BackendError
from reconciler.orgpolicy.snapshot import ancestry_line
from reconciler.orgpolicy.store import PolicyStore
from reconciler.plan.consumers import backlog_queries, gauge_queries, prune_gauge_queries
from reconciler.plan.observation import Observation, attach_subscriptions
from reconciler.plan.staleness import ancestry_difference, differences
from reconciler.spec.desired import DesiredState

MAX_WORKERS = 8


def observe(
    reads: Reads, desired: DesiredState, prune: bool = False, workers: int = MAX_WORKERS,
    snapshot: tuple[Path, PolicyStore] | None = None,
) -> Observation:
    """Everything a plan of `desired` reads (`prune`: its deletes too), projects in
    parallel; every failure to read topics or org policy is reported together.
    `snapshot`: the spec tree's org-policy snapshot, which validate used: its ancestry
    places the projects the plan does not read (a key's project, for the CMEK
    constraints), and, against the live org policy and ancestry, how it differs from
    them is noted."""
    out = Observation(reads.info)
    names = sorted(set(desired.projects))
    if not names:
        return out
    background = Background(workers, "observe")
    if snapshot is not None:  # where a key's project sits, for the CMEK constraints
        out.ancestry = dict(snapshot[1].ancestry)
    started = _start_topics(reads, names, background)
    listings = {p: background.submit(reads.list_subscriptions, p) for p in names}
    _collect_topics(out, *started, custom_failures=True)
    _compare_snapshot(out, snapshot)
    # The tags of the live topics that declare some: a live topic never shows them.
    tagged = [t.address for t in desired.topics if t.tags and t.address in out.topics]
    if tagged:
        out.tag_bindings = reads.tag_bindings(tagged)
    # The left-behind gauges, read while the subscriptions still are.
    queries = gauge_queries(desired, out)
    left_behind = background.submit(reads.stored, queries) if queries else None
    for project, listed in listings.items():
        attach_subscriptions(out, project, listed.result())
    more = prune_gauge_queries(desired, out) if prune else []
    if more:
        out.gauges.update(zip(more, reads.stored(more), strict=True))
    if left_behind is not None:
        out.gauges.update(zip(queries, left_behind.result(), strict=True))
        # Which subscriptions hold what the topic gauges found stored: only where
        # they found something.
        held = backlog_queries(out, queries)
        if held:
            out.gauges.update(zip(held, reads.stored(held), strict=True))
    return out


def _compare_snapshot(out: Observation, snapshot: tuple[Path, PolicyStore] | None) -> None:
    """How the spec tree's snapshot differs from the live org policy and ancestry, per
    project (a project the snapshot does not place, or whose live ancestry is
    unknown, has no ancestry to compare)."""
    if snapshot is None or out.service.org_policy != "api":
        return
    path, store = snapshot
    out.snapshot_file = str(path)
    for p, inputs in out.org.items():
        found = differences(store, p, inputs, out.custom.get(p, ()))
        if found:
            out.stale[p] = found
    for p, live in out.hierarchy.items():
        recorded = tuple(store.chain(f"projects/{p}")[1:])
        placed = bool(recorded) or f"projects/{p}" in store.unparented
        if placed and recorded != live:
            line = ancestry_line(path, f"projects/{p}")
            out.stale_ancestry[p] = (line, ancestry_difference(p, recorded, live))


def read_topics(
    reads: Reads, projects: Iterable[str], workers: int = MAX_WORKERS, lenient: bool = False
) -> Observation:
    """The live topics, org inputs, ancestry and custom constraints of `projects` only
    (no subscription, no gauge): what a saved plan's fingerprints are checked
    against, and what `import` reads to write the topics and mark what the plan will
    find on them (`lenient`: a project whose org policy or custom constraints cannot be
    read is noted, `org_unavailable` and `custom_unavailable`, not a failure: the
    import still writes its topics)."""
    out = Observation(reads.info)
    names = sorted(set(projects))
    if names:
        background = Background(workers, "observe")
        _collect_topics(
            out, *_start_topics(reads, names, background),
            custom_failures=lenient, org_failures=lenient,
        )
    return out


Placed = tuple[Ancestry, "CustomConstraints | BackendError"]
Started = tuple[
    dict[str, Future[list[ObservedTopic]]], dict[str, Future[OrgInputs]],
    dict[str, Future[Placed]],
]


def _start_topics(reads: Reads, names: Sequence[str], background: Background) -> Started:
    """Each project's topics, org inputs, and ancestry then custom constraints, asked
    for now, in parallel."""
    listing = {p: background.submit(reads.list_topics, p) for p in names}
    inputs = {p: background.submit(reads.effective_policy, p) for p in names}
    placed = {p: background.submit(_placed, reads, p) for p in names}
    return listing, inputs, placed


def _placed(reads: Reads, project: str) -> Placed:
    """Where the project sits, then the custom constraints of its organization (one
    call after the other, so that no read waits on another for a slot)."""
    ancestry = reads.ancestry(project)
    try:
        return ancestry, reads.custom_constraints(project, ancestry.organization)
    except BackendError as exc:
        return ancestry, exc


def _collect_topics(
    out: Observation, listing: dict[str, Future[list[ObservedTopic]]],
    inputs: dict[str, Future[OrgInputs]], placed: dict[str, Future[Placed]],
    custom_failures: bool = False, org_failures: bool = False,
) -> None:
    """The topics, org inputs, ancestry and custom constraints into `out`; every
    failure raised together, once all are in (an ancestry that cannot be read is
    recorded as such, never raised). `custom_failures` (a plan's): a project whose
    custom constraints cannot be read is noted (`custom_unavailable`), not a failure of
    the reads: the plan names them as not judged (and fails unless told to let them
    through). `org_failures` (an import's): a project whose org policy cannot be read
    is noted (`org_unavailable`)."""
    errors: list[str] = []
    for p, fut in listing.items():
        try:
            topics = fut.result()
        except BackendError as exc:
            errors.append(str(exc))
            continue
        out.projects[p] = [t.name for t in topics]
        out.topics.update((t.name, t) for t in topics)
    failed = _gather(inputs, out.org)
    if org_failures:
        out.org_unavailable.update(failed)
    else:
        errors += failed.values()
    for p, placing in placed.items():
        ancestry, custom = placing.result()
        out.place(p, ancestry)
        if not isinstance(custom, BackendError):
            out.custom[p] = custom
        elif custom_failures:
            out.custom_unavailable[p] = str(custom)
        else:
            errors.append(str(custom))
    _raise_all(errors)


T = TypeVar("T")


def _gather(futures: dict[str, Future[T]], into: dict[str, T]) -> dict[str, str]:
    """Each project's answer into `into`; the failures' messages, by project."""
    errors = {}
    for p, fut in futures.items():
        try:
            into[p] = fut.result()
        except BackendError as exc:
            errors[p] = str(exc)
    return errors


def _raise_all(errors: list[str]) -> None:
    """Every failure at once, each said once."""
    if errors:
        raise BackendError("\n".join(dict.fromkeys(errors)))
