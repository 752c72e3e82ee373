"""Observe: every read a plan needs, made before the plan (which then reads nothing),
and the fingerprints of what was read.

Per project: one ListTopics pager, one ListSubscriptions pager, the effective org
policy (the location, in-transit and CMEK constraints) and the custom constraints on
topics it enforces or dry-runs (for the organization the spec tree's snapshot names),
projects in parallel (never one GetTopic per topic); then the by-region gauges
the plan will show (`plan/consumers.py: gauge_queries`): those of the topics whose
regions the specs remove, known from the specs and the live topics before any diff, and
read while the subscriptions still are; and, with prune, the backlogs of the undeclared
topics' subscriptions; and where the left-behind gauges found something stored, the
gauges of those topics' subscriptions (which holds the copies). Subscriptions or
gauges that cannot be read are a note of the project, not a failure. What the org
policy makes of a topic is plan/policy.py's; how topics compare is reconciler/topic.py's.

Stable entry points:
    observe(reads, desired, prune=False) -> Observation     what make_plan is given
    read_topics(reads, projects, orgs) -> Observation    topics, org policy and custom
                                                     constraints only (apply's
                                                     freshness check)
    organizations(snapshot, projects) -> {project: org}   each project's organization,
                                                     whose custom constraints are read
The observation itself, and its fingerprints, are plan/observation.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from reconciler.backends.base import CustomConstraints, ObservedTopic, OrgInputs, Reads
from reconciler.background import Background
from reconciler.errors import BackendError
from reconciler.orgpolicy.store import PolicyStore
from reconciler.plan.consumers import backlog_queries, gauge_queries, prune_gauge_queries
from reconciler.plan.observation import Observation, attach_subscriptions
from reconciler.plan.staleness import differences
from reconciler.spec.desired import DesiredState

MAX_WORKERS = 8


def observe(
    reads: Reads, desired: DesiredState, prune: bool = False, workers: int = MAX_WORKERS,
    snapshot: tuple[Path, PolicyStore] | None = None,
) -> Observation:
    """Everything a plan of `desired` reads (`prune`: its deletes too), projects in
    parallel; every failure to read topics or org policy is reported together.
    `snapshot`: the spec tree's org-policy snapshot, which validate used: its ancestry
    names each project's organization (whose custom constraints are read), and,
    against the live org policy, how it differs from it is noted."""
    out = Observation(reads.info)
    names = sorted(set(desired.projects))
    if not names:
        return out
    background = Background(workers, "observe")
    out.organizations = organizations(snapshot, names)
    if snapshot is not None:  # where a key's project sits, for the CMEK constraints
        out.ancestry = dict(snapshot[1].ancestry)
        out.snapshot_file = str(snapshot[0])
    started = _start_topics(reads, names, out.organizations, background)
    listings = {p: background.submit(reads.list_subscriptions, p) for p in names}
    _collect_topics(out, *started, custom_failures=True)
    _compare_snapshot(out, snapshot)
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


def organizations(
    snapshot: tuple[Path, PolicyStore] | None, projects: Iterable[str]
) -> dict[str, str]:
    """Each project's organization, as the spec tree's snapshot records it in its
    ancestry (the Org Policy API cannot tell it): whose custom constraints a plan
    reads. Projects it does not place are left out."""
    if snapshot is None:
        return {}
    store = snapshot[1]
    found = {p: store.organization(f"projects/{p}") for p in projects}
    return {p: org for p, org in found.items() if org is not None}


def _start_custom(
    reads: Reads, orgs: Mapping[str, str], names: Sequence[str], background: Background,
) -> dict[str, Future[CustomConstraints]]:
    """Each project's custom constraints on topics, asked for now, from the target
    (its snapshot, or the Org Policy API for the project's organization)."""
    return {p: background.submit(reads.custom_constraints, p, orgs.get(p)) for p in names}


def _compare_snapshot(out: Observation, snapshot: tuple[Path, PolicyStore] | None) -> None:
    """How the spec tree's snapshot differs from the live org policy, per project."""
    if snapshot is None or out.service.org_policy != "api":
        return
    store = snapshot[1]
    for p, inputs in out.org.items():
        found = differences(store, p, inputs, out.custom.get(p, ()))
        if found:
            out.stale[p] = found


def read_topics(
    reads: Reads, projects: Iterable[str], orgs: Mapping[str, str] | None = None,
    workers: int = MAX_WORKERS,
) -> Observation:
    """The live topics, org inputs and custom constraints of `projects` only (no
    subscription, no gauge; `orgs`: each project's organization, as the plan
    recorded it): what a saved plan's fingerprints are checked against."""
    out = Observation(reads.info)
    names = sorted(set(projects))
    if names:
        out.organizations = dict(orgs or {})
        background = Background(workers, "observe")
        _collect_topics(out, *_start_topics(reads, names, out.organizations, background))
    return out


Started = tuple[
    dict[str, Future[list[ObservedTopic]]], dict[str, Future[OrgInputs]],
    dict[str, Future[CustomConstraints]],
]


def _start_topics(
    reads: Reads, names: Sequence[str], orgs: Mapping[str, str], background: Background
) -> Started:
    """Each project's topics, org inputs and custom constraints, asked for now, in
    parallel."""
    listing = {p: background.submit(reads.list_topics, p) for p in names}
    inputs = {p: background.submit(reads.effective_policy, p) for p in names}
    return listing, inputs, _start_custom(reads, orgs, names, background)


def _collect_topics(
    out: Observation, listing: dict[str, Future[list[ObservedTopic]]],
    inputs: dict[str, Future[OrgInputs]], custom: dict[str, Future[CustomConstraints]],
    custom_failures: bool = False,
) -> None:
    """The topics, org inputs and custom constraints into `out`; every failure raised
    together, once all are in. `custom_failures` (a plan's): a project whose custom
    constraints cannot be read is noted (`custom_unavailable`), not a failure of the
    reads: the plan names them as not judged (and fails unless told to let them
    through)."""
    errors: list[str] = []
    for p, fut in listing.items():
        try:
            topics = fut.result()
        except BackendError as exc:
            errors.append(str(exc))
            continue
        out.projects[p] = [t.name for t in topics]
        out.topics.update((t.name, t) for t in topics)
    errors += _gather(inputs, out.org)
    errors += _gather(custom, out.custom, out.custom_unavailable if custom_failures else None)
    _raise_all(errors)


T = TypeVar("T")


def _gather(
    futures: dict[str, Future[T]], into: dict[str, T], failures: dict[str, str] | None = None
) -> list[str]:
    """Each project's answer into `into`; the failures' messages (into `failures` by
    project instead, when given)."""
    errors = []
    for p, fut in futures.items():
        try:
            into[p] = fut.result()
        except BackendError as exc:
            if failures is not None:
                failures[p] = str(exc)
            else:
                errors.append(str(exc))
    return errors


def _raise_all(errors: list[str]) -> None:
    """Every failure at once, each said once."""
    if errors:
        raise BackendError("\n".join(dict.fromkeys(errors)))
