"""The Org Policy v2 service through the real OrgPolicyClient."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.clients import orgpolicy_client as make_orgpolicy_client
from reconciler.backends.clients import publisher_client as make_publisher_client

ORG = "organizations/1234"
FOLDER = "folders/77"
PROJECT = "projects/proj-alpha"
LOC = "gcp.resourceLocations"


def _put(client: Any, parent: str, constraint: str, spec: dict[str, Any]) -> Any:
    return client.create_policy(
        parent=parent, policy={"name": f"{parent}/policies/{constraint}", "spec": spec}
    )


def _allowed(client: Any, resource: str, constraint: str = LOC) -> set[str]:
    policy = client.get_effective_policy(name=f"{resource}/policies/{constraint}")
    rule = policy.spec.rules[0]
    return set(rule.values.allowed_values)


@pytest.fixture
def hierarchy(local_server: Any) -> None:
    local_server.set_ancestry(PROJECT, FOLDER)
    local_server.set_ancestry(FOLDER, ORG)


def test_crud(orgpolicy_client: Any) -> None:
    name = f"{PROJECT}/policies/{LOC}"
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.get_policy(name=name)
    created = _put(
        orgpolicy_client, PROJECT, LOC, {"rules": [{"values": {"allowed_values": ["us-east1"]}}]}
    )
    assert created.etag
    with pytest.raises(exceptions.AlreadyExists):
        _put(orgpolicy_client, PROJECT, LOC, {"rules": [{"allow_all": True}]})
    got = orgpolicy_client.get_policy(name=name)
    assert list(got.spec.rules[0].values.allowed_values) == ["us-east1"]
    listed = list(orgpolicy_client.list_policies(parent=PROJECT))
    assert [p.name for p in listed] == [name]
    updated = orgpolicy_client.update_policy(
        policy={"name": name, "spec": {"rules": [{"values": {"allowed_values": ["us-west1"]}}]}}
    )
    assert list(updated.spec.rules[0].values.allowed_values) == ["us-west1"]
    assert updated.etag != created.etag
    with pytest.raises(exceptions.Aborted, match="etag"):
        orgpolicy_client.delete_policy(request={"name": name, "etag": created.etag})
    orgpolicy_client.delete_policy(request={"name": name, "etag": updated.etag})
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.get_policy(name=name)
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.update_policy(policy={"name": name, "spec": {}})
    with pytest.raises(exceptions.InvalidArgument):
        orgpolicy_client.get_policy(name="nonsense")


def test_project_inherits_from_folder_and_organization(
    orgpolicy_client: Any, hierarchy: None
) -> None:
    _put(orgpolicy_client, ORG, LOC, {"rules": [{"values": {"allowed_values": ["us-east1"]}}]})
    assert "us-east1" in _allowed(orgpolicy_client, PROJECT)
    assert "europe-west1" not in _allowed(orgpolicy_client, PROJECT)
    # A folder policy without inheritFromParent replaces the organization's.
    _put(
        orgpolicy_client, FOLDER, LOC, {"rules": [{"values": {"allowed_values": ["europe-west1"]}}]}
    )
    allowed = _allowed(orgpolicy_client, PROJECT)
    assert "europe-west1" in allowed and "us-east1" not in allowed


def test_inherit_from_parent_merges(orgpolicy_client: Any, hierarchy: None) -> None:
    _put(orgpolicy_client, ORG, LOC, {"rules": [{"values": {"allowed_values": ["us-east1"]}}]})
    _put(
        orgpolicy_client,
        PROJECT,
        LOC,
        {
            "inherit_from_parent": True,
            "rules": [{"values": {"allowed_values": ["europe-west1"]}}],
        },
    )
    allowed = _allowed(orgpolicy_client, PROJECT)
    assert {"us-east1", "europe-west1"} <= allowed


def test_reset_restores_default(orgpolicy_client: Any, hierarchy: None) -> None:
    _put(orgpolicy_client, ORG, LOC, {"rules": [{"values": {"allowed_values": ["us-east1"]}}]})
    _put(orgpolicy_client, PROJECT, LOC, {"reset": True})
    effective = orgpolicy_client.get_effective_policy(name=f"{PROJECT}/policies/{LOC}")
    assert effective.spec.rules[0].allow_all is True


def test_value_groups_expanded_in_effective_policy(orgpolicy_client: Any) -> None:
    _put(
        orgpolicy_client,
        PROJECT,
        LOC,
        {"rules": [{"values": {"allowed_values": ["in:europe-west1-locations"]}}]},
    )
    assert "europe-west1" in _allowed(orgpolicy_client, PROJECT)
    # The stored policy itself keeps the group as written.
    stored = orgpolicy_client.get_policy(name=f"{PROJECT}/policies/{LOC}")
    assert list(stored.spec.rules[0].values.allowed_values) == ["in:europe-west1-locations"]


def test_boolean_constraint_effective(orgpolicy_client: Any, hierarchy: None) -> None:
    name = f"{PROJECT}/policies/pubsub.enforceInTransitRegions"
    assert orgpolicy_client.get_effective_policy(name=name).spec.rules[0].enforce is False
    _put(orgpolicy_client, FOLDER, "pubsub.enforceInTransitRegions", {"rules": [{"enforce": True}]})
    assert orgpolicy_client.get_effective_policy(name=name).spec.rules[0].enforce is True


def test_server_seeded_from_snapshot_file(tmp_path: Path) -> None:
    from reconciler.localserver import LocalServer
    from reconciler.orgpolicy.snapshot import load_snapshot

    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text(
        "---\n"
        f"name: {ORG}/policies/gcp.resourceLocations\n"
        "spec:\n"
        "  rules:\n"
        "    - values:\n"
        "        allowedValues: [us-central1]\n"
        "---\n"
        "ancestry:\n"
        f"  {PROJECT}: {ORG}\n"
    )
    with LocalServer(policy_store=load_snapshot(snapshot)) as server:
        orgpolicy = make_orgpolicy_client(server.address)
        assert "us-central1" in _allowed(orgpolicy, PROJECT)
        publisher = make_publisher_client(server.address)
        topic = publisher.create_topic(name=f"{PROJECT}/topics/orders")
        assert list(topic.message_storage_policy.allowed_persistence_regions) == ["us-central1"]
        assert server.counters.get("GetEffectivePolicy") == 1
