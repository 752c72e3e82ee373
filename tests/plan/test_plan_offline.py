"""`make_plan` reads nothing: given a recorded observation (plain values, no backend,
no server), it makes the whole plan (the diff, the org-policy checks, the consumers'
warnings, the left-behind figures, prune's deletes and refusals) while any socket,
process or file the plan would open is refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reconciler.backends.base import (
    BackendInfo,
    GaugeQuery,
    ObservedSubscription,
    OrgInputs,
    RegionStored,
    StoredMessages,
)
from reconciler.orgpolicy.locations import catalog
from reconciler.plan.make import PlanOptions, make_plan
from reconciler.plan.observation import Observation
from reconciler.spec.desired import DesiredState, DesiredTopic, StorageIntent
from reconciler.topic import ObservedTopic, StoragePolicy, TopicShape

P = "proj-a"
OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
BOTH = StoragePolicy(("us-central1", "us-east1"), False)

# What observe read, written down: the service, the topics, the org policy, the
# subscriptions, and what the by-region gauges said.
RECORDED = Observation(
    service=BackendInfo("emulator", "127.0.0.1:8085"),
    topics={
        f"projects/{P}/topics/{name}": ObservedTopic.of_shape(
            f"projects/{P}/topics/{name}", TopicShape(labels, policy), f"digest-{name}"
        )
        for name, labels, policy in (
            ("narrowed", {**OWN, "team": "a"}, BOTH),
            ("relabelled", {**OWN, "team": "old"}, BOTH),
            ("retired", OWN, None),
        )
    },
    projects={P: [f"projects/{P}/topics/{n}" for n in ("narrowed", "relabelled", "retired")]},
    org={P: OrgInputs(None, None, "snapshot org-policy.yaml")},
    subscriptions={
        f"projects/{P}/topics/narrowed": [ObservedSubscription(
            f"projects/{P}/subscriptions/narrowed-pull", f"projects/{P}/topics/narrowed",
            "pull", "ACTIVE", 604800, False,
        )],
        f"projects/{P}/topics/retired": [ObservedSubscription(
            f"projects/{P}/subscriptions/retired-pull", f"projects/{P}/topics/retired",
            "pull", "ACTIVE", 604800, False,
        )],
    },
    gauges={
        GaugeQuery(P, "topic", ("narrowed",)): StoredMessages(
            {"narrowed": {"us-east1": RegionStored("us-east1", 3, 30, 120)}}, {}
        ),
        GaugeQuery(P, "subscription", ("retired-pull",)): StoredMessages(
            {"retired-pull": {"us-east1": RegionStored("us-east1", 7, 70, 60)}}, {}
        ),
    },
)
DESIRED = DesiredState([
    DesiredTopic(P, "narrowed", {"team": "a"}, StorageIntent("explicit", ("us-central1",), False)),
    DesiredTopic(P, "relabelled", {"team": "new"}),
])


@contextmanager
def nothing_opened() -> Iterator[list[str]]:
    """Every socket, process or file opened inside the block, by an audit hook."""
    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and (
            event in ("open", "subprocess.Popen", "os.system", "os.posix_spawn", "os.exec")
            or event.startswith("socket.")
        ):
            seen.append(f"{event} {args[:1]!r}")

    sys.addaudithook(hook)  # an audit hook cannot be removed: it goes quiet after
    try:
        yield seen
    finally:
        active[0] = False


def test_a_plan_is_made_from_a_recorded_observation_with_no_backend() -> None:
    catalog()  # the package's own location data, loaded once per process
    with nothing_opened() as opened:
        plan = make_plan(DESIRED, RECORDED, PlanOptions(prune=True))
        text = plan.dumps()  # and its document
    assert opened == []
    assert '"projects/proj-a/topics/narrowed"' in text
    changes = {rc.address: rc for rc in plan.resource_changes}
    narrowed = changes[f"projects/{P}/topics/narrowed"]
    assert narrowed.update_mask == ["message_storage_policy"]
    [left] = narrowed.left_behind
    assert (left.region, left.messages, left.bytes) == ("us-east1", 3, 30)
    assert [s.name for s in narrowed.subscriptions] == [f"projects/{P}/subscriptions/narrowed-pull"]
    assert changes[f"projects/{P}/topics/relabelled"].update_mask == ["labels"]
    # The subscribed topic prune would delete is kept, its backlog from the gauges.
    assert f"projects/{P}/topics/retired" not in changes
    [kept] = [d for d in plan.diagnostics if d.code == "prune-subscribed"]
    assert "retired-pull (pull, 7 unacknowledged)" in kept.message
    assert plan.target.kind == "emulator"
    assert plan.fingerprints.topics[f"projects/{P}/topics/narrowed"] == "digest-narrowed"


def test_a_topic_whose_gauges_were_not_read_says_so() -> None:
    """The observation answers only what it asked: a narrowing it read no gauge for is
    "metrics not read", never "nothing stored"."""
    blind = Observation(
        service=RECORDED.service, topics=RECORDED.topics, projects=RECORDED.projects,
        org=RECORDED.org, subscriptions=RECORDED.subscriptions,
    )
    plan = make_plan(DESIRED, blind)
    [narrowed] = [rc for rc in plan.resource_changes if rc.topic == "narrowed"]
    assert narrowed.left_behind_unknown == "metrics not read"
    assert not narrowed.left_behind
