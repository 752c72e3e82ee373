"""The saved-plan check against an in-memory backend: every kind of change is named."""

from __future__ import annotations

import pytest
from apply_fakes import FakeBackend, change

from reconciler.apply.freshness import check_fresh, stale_reasons
from reconciler.backends.base import OrgInputs
from reconciler.errors import StalePlanError
from reconciler.plan.model import Fingerprints, Plan
from reconciler.plan.observe import observe, org_fingerprint, topic_fingerprint

A, B, C = (f"projects/p/topics/{n}" for n in "abc")


def snapshot_plan(backend: FakeBackend) -> Plan:
    seen = observe(backend, ["p"])
    fps = Fingerprints(
        topics={n: topic_fingerprint(seen.topics.get(n)) for n in (A, B, C)},
        org_policy={"p": org_fingerprint(seen.org["p"])},
    )
    return Plan(resource_changes=[change("update", A, labels={"k": "v"})], fingerprints=fps)


def test_an_unchanged_world_is_fresh() -> None:
    backend = FakeBackend({A: {"labels": {}}, B: {"labels": {}}})
    plan = snapshot_plan(backend)
    assert stale_reasons(plan, backend) == []
    check_fresh(plan, backend)


def test_every_topic_change_is_named() -> None:
    backend = FakeBackend({A: {"labels": {}}, B: {"labels": {}}})
    plan = snapshot_plan(backend)
    backend.topics[A] = {"labels": {"x": "1"}}  # modified
    del backend.topics[B]  # deleted
    backend.topics[C] = {"labels": {}}  # created
    assert stale_reasons(plan, backend) == [
        f"{A}: modified since the plan",
        f"{B}: deleted since the plan",
        f"{C}: created since the plan",
    ]
    with pytest.raises(StalePlanError, match="nothing was applied"):
        check_fresh(plan, backend)
    assert backend.calls["UpdateTopic"] == 0


def test_an_org_policy_change_is_named() -> None:
    backend = FakeBackend({A: {"labels": {}}})
    plan = snapshot_plan(backend)
    plan.fingerprints.org_policy["p"] = org_fingerprint(OrgInputs(None, None, "old"))[::-1]
    reasons = stale_reasons(plan, backend)
    assert reasons == [
        "projects/p: effective org policy changed since the plan "
        "(constraints/gcp.resourceLocations or in-transit enforcement)"
    ]


def test_a_plan_without_fingerprints_is_refused() -> None:
    backend = FakeBackend({A: {"labels": {}}})
    plan = Plan(resource_changes=[change("update", A, labels={"k": "v"})])
    with pytest.raises(StalePlanError, match="no fingerprints"):
        check_fresh(plan, backend)
