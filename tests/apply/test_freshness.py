"""The saved-plan check over the real clients and the local server: every kind of
change made to the live state after the plan is named, and nothing is applied."""

from __future__ import annotations

from typing import Any

import pytest
from apply_support import PROJECT, make
from google.protobuf import field_mask_pb2
from google.pubsub_v1.types import Topic

from reconciler.apply.freshness import check_fresh, stale_reasons
from reconciler.apply.guard import GuardedBackend
from reconciler.codec import replace
from reconciler.errors import PlanRefused
from reconciler.orgpolicy.model import Policy
from reconciler.plan.model import Fingerprints, Plan
from tests.specs_support import location_policy

A, B, C = (f"projects/{PROJECT}/topics/{n}" for n in ("alpha", "bravo", "charlie"))
OWNED = {"reconcile-managed": "true", "reconcile-owner": "default"}


def snapshot_plan(backend: GuardedBackend) -> Plan:
    """A real plan over A, B and C (an update of A's labels among its changes), with
    the fingerprints of all three and of the project's org policy."""
    plan = make(backend, {"alpha": {"k": "v"}, "bravo": {}, "charlie": {}})
    assert set(plan.fingerprints.topics) == {A, B, C}
    assert set(plan.fingerprints.org_policy) == {PROJECT}
    assert plan.resource_changes[0].address == A
    assert plan.resource_changes[0].action == "update"
    return plan


def seed(client: Any, name: str, labels: dict[str, str] | None = None) -> None:
    client.create_topic(request=Topic(name=name, labels=labels or OWNED))


def test_an_unchanged_world_is_fresh(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    seed(client, A)
    seed(client, B)
    plan = snapshot_plan(backend)
    assert stale_reasons(plan, backend) == []
    check_fresh(plan, backend)


def test_every_topic_change_is_named(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    seed(client, A)
    seed(client, B)
    plan = snapshot_plan(backend)
    client.update_topic(  # modified
        request={
            "topic": Topic(name=A, labels={"x": "1"}),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )
    client.delete_topic(request={"topic": B})  # deleted
    seed(client, C, {})  # created
    local_server.counters.reset()
    assert stale_reasons(plan, backend) == [
        f"{A}: modified since the plan",
        f"{B}: deleted since the plan",
        f"{C}: created since the plan",
    ]
    with pytest.raises(PlanRefused, match="nothing was applied") as refused:
        check_fresh(plan, backend)
    assert refused.value.reason == "stale"
    assert refused.value.exit_code == 4
    assert local_server.counters.get("UpdateTopic") == 0
    assert local_server.counters.get("CreateTopic") == 0
    assert local_server.counters.get("DeleteTopic") == 0


def test_an_org_policy_change_is_named(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    seed(client, A)
    plan = snapshot_plan(backend)
    # The organisation restricts resource locations after the plan was made.
    local_server.put_policy(
        Policy.from_dict(location_policy(f"projects/{PROJECT}", ["in:us-locations"]))
    )
    reasons = stale_reasons(plan, backend)
    # Issue 46: the one that changed, not the five it might have been.
    assert reasons == [
        f"projects/{PROJECT}: effective org policy changed since the plan "
        "(constraints/gcp.resourceLocations changed)"
    ]
    # A plan made before each input was recorded on its own can only list them all.
    older = replace(plan, fingerprints=replace(plan.fingerprints, org_policy_parts=None))
    assert stale_reasons(older, backend) == [
        f"projects/{PROJECT}: effective org policy changed since the plan "
        "(constraints/gcp.resourceLocations, in-transit enforcement, "
        "constraints/gcp.restrictNonCmekServices, constraints/gcp.restrictCmekCryptoKeyProjects, "
        "constraints/pubsub.managed.disableTopicMessageTransforms, "
        "the custom constraints on topics and their enforcement, or the project's folders "
        "and organization)"
    ]


def test_a_plan_without_fingerprints_is_refused(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    seed(client, A)
    # A plan made without them (a file without them is refused when read).
    plan = replace(snapshot_plan(backend), fingerprints=Fingerprints())
    assert plan.has_changes
    local_server.counters.reset()
    with pytest.raises(PlanRefused, match="no fingerprints") as refused:
        check_fresh(plan, backend)
    assert refused.value.reason == "damaged"
    assert local_server.counters.total() == 0
