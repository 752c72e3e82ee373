"""Message storage policies against the effective org policy, and in-transit
enforcement at Publish. Org policies are written through the real OrgPolicyClient."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.localserver import CLIENT_REGION_KEY

PROJECT = "projects/proj-alpha"
T = f"{PROJECT}/topics/orders"


def _allow(orgpolicy_client: Any, parent: str, values: list[str]) -> None:
    orgpolicy_client.create_policy(
        parent=parent,
        policy={
            "name": f"{parent}/policies/gcp.resourceLocations",
            "spec": {"rules": [{"values": {"allowed_values": values}}]},
        },
    )


def _enforce_in_transit(orgpolicy_client: Any, parent: str, on: bool = True) -> None:
    orgpolicy_client.create_policy(
        parent=parent,
        policy={
            "name": f"{parent}/policies/pubsub.enforceInTransitRegions",
            "spec": {"rules": [{"enforce": on}]},
        },
    )


def _create(client: Any, regions: list[str] | None, enforce: bool = False) -> Any:
    request: dict[str, Any] = {"name": T}
    if regions is not None:
        request["message_storage_policy"] = {
            "allowed_persistence_regions": regions,
            "enforce_in_transit": enforce,
        }
    return client.create_topic(request=request)


def _set_policy(client: Any, regions: list[str] | None) -> Any:
    topic: dict[str, Any] = {"name": T}
    if regions is not None:
        topic["message_storage_policy"] = {"allowed_persistence_regions": regions}
    return client.update_topic(
        request={"topic": topic, "update_mask": {"paths": ["message_storage_policy"]}}
    )


def test_empty_region_list_is_invalid(publisher_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument, match="at least one region"):
        _create(publisher_client, [])
    _create(publisher_client, ["us-east1"])
    with pytest.raises(exceptions.InvalidArgument, match="at least one region"):
        publisher_client.update_topic(
            request={
                "topic": {"name": T, "message_storage_policy": {"enforce_in_transit": True}},
                "update_mask": {"paths": ["message_storage_policy"]},
            }
        )


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("us-east1-b", "a zone"),
        ("us", "a multi-region location"),
        ("nam4", "a dual-region location"),
        ("in:us-locations", "a value group"),
        ("-us-east1", "an exclusion"),
        ("mars-north1", "not a known Google Cloud region"),
    ],
)
def test_non_region_values_are_invalid(publisher_client: Any, value: str, what: str) -> None:
    with pytest.raises(exceptions.InvalidArgument) as info:
        _create(publisher_client, ["us-east1", value])
    assert f"{value!r} is {what}" in info.value.message


def test_region_outside_org_policy_is_failed_precondition(
    publisher_client: Any, orgpolicy_client: Any
) -> None:
    _allow(orgpolicy_client, PROJECT, ["us-east1", "us-central1"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        _create(publisher_client, ["us-east1", "europe-west1", "asia-east1"])
    message = info.value.message
    assert "asia-east1, europe-west1" in message
    assert "Allowed regions: us-central1, us-east1" in message
    assert "gcp.resourceLocations" in message
    created = _create(publisher_client, ["us-east1"])
    assert list(created.message_storage_policy.allowed_persistence_regions) == ["us-east1"]
    with pytest.raises(exceptions.FailedPrecondition, match="europe-west1"):
        _set_policy(publisher_client, ["europe-west1"])


def test_created_without_policy_gets_org_policy_regions(
    publisher_client: Any, orgpolicy_client: Any, local_server: Any
) -> None:
    local_server.set_ancestry(PROJECT, "organizations/1234")
    _allow(orgpolicy_client, "organizations/1234", ["in:europe-west1-locations", "us-east1"])
    _enforce_in_transit(orgpolicy_client, "organizations/1234")
    topic = _create(publisher_client, None)
    policy = topic.message_storage_policy
    assert list(policy.allowed_persistence_regions) == ["europe-west1", "us-east1"]
    assert policy.enforce_in_transit is True


def test_no_org_policy_means_no_storage_policy(publisher_client: Any) -> None:
    assert "message_storage_policy" not in _create(publisher_client, None)


def test_explicit_policy_gets_enforce_in_transit_from_org_policy(
    publisher_client: Any, orgpolicy_client: Any
) -> None:
    _enforce_in_transit(orgpolicy_client, PROJECT)
    topic = _create(publisher_client, ["us-east1"], enforce=False)
    assert topic.message_storage_policy.enforce_in_transit is True


def test_mask_with_unset_policy_recomputes_from_org_policy(
    publisher_client: Any, orgpolicy_client: Any
) -> None:
    _create(publisher_client, ["europe-west1"])
    _allow(orgpolicy_client, PROJECT, ["us-central1", "us-east1"])
    # The org policy changed; existing topics do not follow until recomputed.
    stale = publisher_client.get_topic(topic=T)
    assert list(stale.message_storage_policy.allowed_persistence_regions) == ["europe-west1"]
    recomputed = _set_policy(publisher_client, None)
    regions = list(recomputed.message_storage_policy.allowed_persistence_regions)
    assert regions == ["us-central1", "us-east1"]


def test_recompute_without_org_policy_clears_storage_policy(publisher_client: Any) -> None:
    _create(publisher_client, ["europe-west1"])
    assert "message_storage_policy" not in _set_policy(publisher_client, None)


def test_enforce_in_transit_rejects_publish_from_other_region(
    publisher_client: Any, local_server: Any
) -> None:
    local_server.client_region = "us-east1"
    _create(publisher_client, ["us-central1"], enforce=True)
    with pytest.raises(exceptions.FailedPrecondition) as info:
        publisher_client.publish(topic=T, messages=[{"data": b"x"}])
    assert "us-east1" in info.value.message and "us-central1" in info.value.message
    # Per-request metadata overrides the server's region.
    ok = publisher_client.publish(
        topic=T, messages=[{"data": b"x"}], metadata=[(CLIENT_REGION_KEY, "us-central1")]
    )
    assert len(ok.message_ids) == 1
    assert len(local_server.messages(T)) == 1


def test_without_enforcement_publish_from_elsewhere_is_rerouted(
    publisher_client: Any, local_server: Any
) -> None:
    _create(publisher_client, ["us-central1"], enforce=False)
    response = publisher_client.publish(
        topic=T,
        messages=[{"data": b"x"}, {"data": b"y"}],
        metadata=[(CLIENT_REGION_KEY, "us-east1")],
    )
    assert len(response.message_ids) == 2
    assert [m.data for m in local_server.messages(T)] == [b"x", b"y"]
    assert local_server.rerouted(T) == 2
    # From an allowed region nothing is rerouted.
    publisher_client.publish(
        topic=T, messages=[{"data": b"z"}], metadata=[(CLIENT_REGION_KEY, "us-central1")]
    )
    assert local_server.rerouted(T) == 2
    assert len(local_server.messages(T)) == 3


def test_ordering_key_from_excluded_region_fails(publisher_client: Any) -> None:
    _create(publisher_client, ["us-central1"], enforce=False)
    with pytest.raises(exceptions.FailedPrecondition, match="ordering key"):
        publisher_client.publish(
            topic=T,
            messages=[{"data": b"x", "ordering_key": "k"}],
            metadata=[(CLIENT_REGION_KEY, "us-east1")],
        )
