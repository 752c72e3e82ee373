"""The local server's custom-constraint RPCs through the real OrgPolicyClient: the
constraint round-trips, the service's rules refuse a bad one with INVALID_ARGUMENT
naming the rule, and seeding from a snapshot stores what it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.orgpolicy.snapshot import load_snapshot

ORG = "organizations/4242"
NAME = f"{ORG}/customConstraints/custom.euOnly"
EU_ONLY = "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"


def _constraint(**overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": NAME,
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": EU_ONLY,
        "action_type": "ALLOW",
        "display_name": "EU only",
        "description": "Topics keep messages in Europe.",
    }
    out.update(overrides)
    return out


def test_create_get_list_update_delete(orgpolicy_client: Any) -> None:
    created = orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=_constraint()
    )
    assert created.name == NAME
    assert created.update_time.timestamp() > 0
    got = orgpolicy_client.get_custom_constraint(name=NAME)
    assert got.condition == EU_ONLY
    assert list(got.method_types) == [got.MethodType.CREATE, got.MethodType.UPDATE]
    assert got.action_type == got.ActionType.ALLOW

    with pytest.raises(exceptions.AlreadyExists):
        orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=_constraint())

    for i in range(3):
        orgpolicy_client.create_custom_constraint(
            parent=ORG,
            custom_constraint=_constraint(name=f"{ORG}/customConstraints/custom.more{i}"),
        )
    orgpolicy_client.create_custom_constraint(
        parent="organizations/1",
        custom_constraint=_constraint(name="organizations/1/customConstraints/custom.other"),
    )
    listed = orgpolicy_client.list_custom_constraints(
        request={"parent": ORG, "page_size": 2}
    )
    names = [c.name for c in listed]  # the pager follows next_page_token
    assert names == sorted(names) and len(names) == 4 and NAME in names

    updated = orgpolicy_client.update_custom_constraint(
        custom_constraint=_constraint(action_type="DENY", description="changed")
    )
    assert updated.action_type == updated.ActionType.DENY
    assert orgpolicy_client.get_custom_constraint(name=NAME).description == "changed"

    orgpolicy_client.delete_custom_constraint(name=NAME)
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.get_custom_constraint(name=NAME)
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.delete_custom_constraint(name=NAME)
    with pytest.raises(exceptions.NotFound):
        orgpolicy_client.update_custom_constraint(custom_constraint=_constraint())


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"method_types": ["UPDATE"]}, "UPDATE-only custom constraints are not supported"),
        ({"name": f"{ORG}/customConstraints/custom.bad-id"}, "only letters and digits"),
        ({"name": f"{ORG}/customConstraints/noprefix"}, "starts with 'custom.'"),
        ({"action_type": "ACTION_TYPE_UNSPECIFIED"}, "needs `actionType`"),
        ({"condition": "resource.name.startsWith("}, "the condition does not compile"),
        ({"condition": "x" * 1001}, "at most 1000"),
        ({"resource_types": []}, "needs `resourceTypes`"),
    ],
)
def test_invalid_constraints_are_refused(
    orgpolicy_client: Any, overrides: dict[str, Any], words: str
) -> None:
    with pytest.raises(exceptions.InvalidArgument) as info:
        orgpolicy_client.create_custom_constraint(
            parent=ORG, custom_constraint=_constraint(**overrides)
        )
    assert words in info.value.message


def test_parent_and_immutable_resource_types(orgpolicy_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument) as info:
        orgpolicy_client.create_custom_constraint(
            parent="organizations/9", custom_constraint=_constraint()
        )
    assert "is not under parent organizations/9" in info.value.message
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=_constraint())
    with pytest.raises(exceptions.InvalidArgument) as info:
        orgpolicy_client.update_custom_constraint(
            custom_constraint=_constraint(resource_types=["pubsub.googleapis.com/Schema"])
        )
    assert "resourceTypes is immutable" in info.value.message


def test_seeded_from_a_snapshot(orgpolicy_client: Any, local_server: Any, tmp_path: Path) -> None:
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text(
        f"name: {NAME}\n"
        "resourceTypes: [pubsub.googleapis.com/Topic]\n"
        "methodTypes: [CREATE]\n"
        "condition: has(resource.kmsKeyName)\n"
        "actionType: ALLOW\n"
        "---\n"
        "name: projects/seeded-proj/policies/custom.euOnly\n"
        "dryRunSpec: {rules: [{enforce: true}]}\n"
        "---\n"
        f"ancestry: {{projects/seeded-proj: {ORG}}}\n"
    )
    local_server.seed_org_policy(load_snapshot(snapshot))
    got = orgpolicy_client.get_custom_constraint(name=NAME)
    assert got.condition == "has(resource.kmsKeyName)"
    effective = orgpolicy_client.get_effective_policy(
        name="projects/seeded-proj/policies/custom.euOnly"
    )
    assert not effective.spec.rules[0].enforce
    assert effective.dry_run_spec.rules[0].enforce
