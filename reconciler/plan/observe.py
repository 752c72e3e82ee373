"""Observe: read the live state a plan is made against, and fingerprint it.

One ListTopics pager, one ListSubscriptions pager and one pair of GetEffectivePolicy
calls per project, projects in parallel: never one GetTopic per topic. Subscriptions
that cannot be listed are a note of the project, not a failure. What the org policy
makes of a topic is plan/policy.py's; how topics compare is reconciler/topic.py's.

Stable entry points (apply uses them to check a saved plan):
    observe(backend, projects) -> Observation   (org policy: backend.effective_policy)
    topic_fingerprint(ObservedTopic | None) -> str
    org_fingerprint(OrgInputs) -> str
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from reconciler.backends.base import (
    Backend,
    ObservedSubscription,
    ObservedTopic,
    OrgInputs,
    SubscriptionListing,
)
from reconciler.errors import BackendError
from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESOURCE_LOCATIONS, Policy
from reconciler.spec.orgrules import OrgFacts, facts_from_specs

MAX_WORKERS = 8


@dataclass
class Observation:
    """Live topics by name (every topic of every named project) and org inputs."""

    topics: dict[str, ObservedTopic] = field(default_factory=dict)
    projects: dict[str, list[str]] = field(default_factory=dict)  # project -> names
    org: dict[str, OrgInputs] = field(default_factory=dict)
    # topic name -> its subscriptions; project -> why its subscriptions are unknown
    subscriptions: dict[str, list[ObservedSubscription]] = field(default_factory=dict)
    subscriptions_unknown: dict[str, str] = field(default_factory=dict)

    _facts: dict[str, OrgFacts] = field(default_factory=dict, repr=False, compare=False)

    def facts(self, project: str) -> OrgFacts:
        """What the org policy allows in `project`, worked out once per project (a plan
        asks for every topic)."""
        known = self._facts.get(project)
        if known is None:
            known = self._facts[project] = facts_of(self.org[project])
        return known


def facts_of(inputs: OrgInputs) -> OrgFacts:
    return facts_from_specs(inputs.resource_locations, inputs.enforce_in_transit)


def observe(
    backend: Backend,
    projects: Iterable[str],
    workers: int = MAX_WORKERS,
) -> Observation:
    """Read every named project in parallel; all failures are reported together."""
    names = sorted(set(projects))
    out = Observation()
    if not names:
        return out
    errors: list[str] = []
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, 2 * len(names))))
    try:
        listing: dict[str, Future[list[ObservedTopic]]] = {
            p: pool.submit(backend.list_topics, p) for p in names
        }
        inputs: dict[str, Future[OrgInputs]] = {
            p: pool.submit(backend.effective_policy, p) for p in names
        }
        lister = getattr(backend, "list_subscriptions", None)  # a bare test backend has none
        subs: dict[str, Future[SubscriptionListing]] = (
            {p: pool.submit(lister, p) for p in names} if lister is not None else {}
        )
        for p in names:
            try:
                topics = listing[p].result()
            except BackendError as exc:
                errors.append(str(exc))
                continue
            out.projects[p] = [t.name for t in topics]
            out.topics.update((t.name, t) for t in topics)
        for p, fut in inputs.items():
            try:
                out.org[p] = fut.result()
            except BackendError as exc:
                errors.append(str(exc))
        for p, listed in subs.items():
            attach_subscriptions(out, p, listed.result())
    finally:
        # On Ctrl-C or an unexpected error, do not wait for the other projects' calls.
        pool.shutdown(wait=False, cancel_futures=True)
    if errors:
        unique = list(dict.fromkeys(errors))
        raise BackendError("\n".join(unique))
    return out


def attach_subscriptions(out: Observation, project: str, listing: SubscriptionListing) -> None:
    """Each subscription under its topic's name (a detached one, `_deleted-topic_`,
    belongs to none); why they are unknown, when they are."""
    if listing.unavailable is not None:
        out.subscriptions_unknown[project] = listing.unavailable
        return
    for sub in listing.subscriptions:
        out.subscriptions.setdefault(sub.topic, []).append(sub)


# -- fingerprints --------------------------------------------------------------


def _sha(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def topic_fingerprint(topic: ObservedTopic | None) -> str:
    """sha256 of every field of the topic, managed or not (its deterministic wire form
    when the backend gave it, else its raw JSON), or "absent"."""
    if topic is None:
        return "absent"
    return topic.digest or _sha(topic.raw or topic.body)


def org_fingerprint(inputs: OrgInputs) -> str:
    """sha256 of the effective specs of both constraints (not of where they came from)."""

    def spec(constraint: str, value: Any) -> Any:
        if value is None:
            return None
        return Policy(f"projects/_/policies/{constraint}", value).to_dict().get("spec", {})

    return _sha(
        {
            RESOURCE_LOCATIONS: spec(RESOURCE_LOCATIONS, inputs.resource_locations),
            ENFORCE_IN_TRANSIT: spec(ENFORCE_IN_TRANSIT, inputs.enforce_in_transit),
        }
    )
