"""`reconcile plan` judges each call it would make against the organization's custom
constraints, read live (the organization from the spec tree's snapshot's ancestry),
as the local server then answers: a refused create or update is an error and is not
planned; an update of a topic that already violates is refused unless it fixes the
violation; a condition on a field the specs do not manage is decided on a create, and
on an update with the live topic's value (its ingestion source and message
transforms, read ahead or not); a snapshot that no longer matches the live policy is
named, difference by difference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.orgpolicy.model import Policy
from tests.specs_support import topic_doc

ORG = "organizations/777"
PROJECT = "proj-a"
EU_ONLY = (
    "has(resource.messageStoragePolicy) && "
    "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"
)


def _constraint(name: str, condition: str, action: str = "ALLOW") -> dict[str, Any]:
    return {
        "name": f"{ORG}/customConstraints/{name}",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],
        "condition": condition,
        "action_type": action,
        "description": f"{name} says no.",
    }


def _enforce(server: Any, constraint: str, project: str = PROJECT) -> None:
    server.put_policy(Policy.from_dict({
        "name": f"projects/{project}/policies/{constraint}",
        "spec": {"rules": [{"enforce": True}]},
    }))


@pytest.fixture
def tree(tmp_path: Path) -> Any:
    """specs/ with the given topics and a snapshot holding only the ancestry (plus
    `extra` documents)."""

    def make(*docs: str, extra: str = "") -> Path:
        root = tmp_path / "specs"
        root.mkdir(exist_ok=True)
        (root / "topics.yaml").write_text("---\n".join(docs))
        (root / "org-policy.yaml").write_text(
            extra + f"ancestry:\n  projects/{PROJECT}: {ORG}\n"
        )
        return root

    return make


def _plan(run_cli: Any, server: Any, root: Path, *extra: str) -> Any:
    return run_cli("plan", str(root), "--emulator", server.address, *extra)


def test_a_refused_create_is_an_error_and_nothing_is_planned(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any
) -> None:
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=_constraint("custom.euOnly", EU_ONLY)
    )
    _enforce(local_server, "custom.euOnly")
    root = tree(topic_doc("orders", storage=(["us-east1"], None)))
    result = _plan(run_cli, local_server, root)
    assert result.exit_code == 1, result.stderr
    assert "error[org-custom-constraint]" in result.stderr
    assert (
        "the CreateTopic of projects/proj-a/topics/orders breaks custom constraint "
        'custom.euOnly: "custom.euOnly says no."'
    ) in result.stderr
    assert 'resource.messageStoragePolicy.allowedPersistenceRegions = ["us-east1"]' in (
        result.stderr
    )
    # What the service says to that call: the same.
    from reconciler.backends.clients import publisher_client

    with pytest.raises(exceptions.FailedPrecondition, match=r"custom\.euOnly"):
        publisher_client(local_server.address).create_topic(request={
            "name": f"projects/{PROJECT}/topics/orders",
            "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
        })


def test_update_of_an_already_violating_topic(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any, tree: Any
) -> None:
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/legacy",
        "labels": {"reconcile-managed": "true", "reconcile-owner": "default"},
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
    })
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=_constraint("custom.euOnly", EU_ONLY)
    )
    _enforce(local_server, "custom.euOnly")
    # Only a label: the topic keeps violating, so the service refuses the update.
    labels_only = tree(topic_doc("legacy", labels={"team": "pay"}))
    result = _plan(run_cli, local_server, labels_only)
    assert result.exit_code == 1, result.stderr
    assert (
        "topic projects/proj-a/topics/legacy already violates custom constraint "
        "custom.euOnly"
    ) in result.stderr
    assert "refuses changing a topic while it does unless the change fixes it" in result.stderr
    # The change that fixes it is planned, and the service takes it.
    fixed = tree(topic_doc("legacy", labels={"team": "pay"}, storage=(["europe-west1"], None)))
    result = run_cli("apply", str(fixed), "--emulator", local_server.address,
                     "--auto-approve")
    assert result.exit_code == 0, result.stderr
    live = publisher_client.get_topic(topic=f"projects/{PROJECT}/topics/legacy")
    assert list(live.message_storage_policy.allowed_persistence_regions) == ["europe-west1"]


def test_an_unmanaged_field_is_decided_on_create(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any
) -> None:
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=_constraint("custom.cmek", "has(resource.kmsKeyName)")
    )
    _enforce(local_server, "custom.cmek")
    root = tree(topic_doc("orders", storage=(["europe-west1"], None)))
    validated = run_cli("validate", str(root), "--org-policy", str(root / "org-policy.yaml"))
    assert validated.exit_code == 0  # the snapshot holds no custom constraint
    result = _plan(run_cli, local_server, root)
    assert result.exit_code == 1, result.stderr
    assert "the CreateTopic of projects/proj-a/topics/orders breaks custom constraint " \
        "custom.cmek" in result.stderr
    assert "resource.kmsKeyName = not set" in result.stderr


def test_validate_leaves_an_unmanaged_field_to_plan_and_plan_does_not_repeat_that(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any
) -> None:
    """Validate says a constraint on a field the specs do not manage is decided at plan
    time ("run `reconcile plan` to see its verdict"); the plan gives the verdict, and
    once said that note in its own output, pointing at the command being run."""
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    constraint = _constraint("custom.cmek", "has(resource.kmsKeyName)")
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=constraint)
    _enforce(local_server, "custom.cmek")
    root = tree(topic_doc("orders", storage=(["europe-west1"], None)), extra=(
        f"name: {constraint['name']}\nresourceTypes: [pubsub.googleapis.com/Topic]\n"
        "methodTypes: [CREATE, UPDATE]\ncondition: has(resource.kmsKeyName)\n"
        "actionType: ALLOW\ndescription: custom.cmek says no.\n---\n"
        f"name: projects/{PROJECT}/policies/custom.cmek\nspec: {{rules: [{{enforce: true}}]}}\n"
        "---\n"
    ))
    validated = run_cli("validate", str(root))
    assert validated.exit_code == 0, validated.stdout
    assert "warning[org-custom-at-plan]" in validated.stdout
    assert "run `reconcile plan` to see its verdict" in validated.stdout
    for fmt in ("text", "json"):
        result = _plan(run_cli, local_server, root, "--format", fmt)
        assert result.exit_code == 1, result.stderr
        said = result.stdout + result.stderr
        assert "org-custom-at-plan" not in said
        assert "reconcile plan` to see" not in said
        assert "custom.cmek" in said and "resource.kmsKeyName = not set" in said


def test_a_verdict_from_a_stale_snapshot_gives_way_to_the_live_one(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any,
    tree: Any,
) -> None:
    """The snapshot has the constraint in dry run ("the service would log the violation
    and create the topic"); live it is enforced. The plan once said both of an existing
    topic; it says the live verdict, and that the snapshot is stale."""
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/orders-test",
        "labels": {"reconcile-managed": "true", "reconcile-owner": "default"},
        "message_storage_policy": {"allowed_persistence_regions": ["europe-west1"]},
    })
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    condition = "resource.name.endsWith('-test')"
    constraint = _constraint("custom.noTest", condition, "DENY")
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=constraint)
    _enforce(local_server, "custom.noTest")
    root = tree(topic_doc("orders-test", storage=(["europe-west1"], None)), extra=(
        f"name: {constraint['name']}\nresourceTypes: [pubsub.googleapis.com/Topic]\n"
        f'methodTypes: [CREATE, UPDATE]\ncondition: "{condition}"\n'
        "actionType: DENY\ndescription: custom.noTest says no.\n---\n"
        f"name: projects/{PROJECT}/policies/custom.noTest\n"
        "dryRunSpec: {rules: [{enforce: true}]}\n---\n"
    ))
    validated = run_cli("validate", str(root))
    assert "the constraint is in dry run" in validated.stdout, validated.stdout
    result = _plan(run_cli, local_server, root, "--format", "json")
    codes = [(d["code"], d["message"]) for d in json.loads(result.stdout)["diagnostics"]]
    assert not [m for _, m in codes if "in dry run" in m], codes
    assert any(c == "existing-custom-constraint" for c, _ in codes), codes
    assert any(c == "org-policy-stale" for c, _ in codes), codes


@pytest.mark.parametrize("read_ahead", ["0", "off"])
def test_an_update_is_judged_with_the_live_ingestion_source_and_transforms(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any,
    tree: Any, monkeypatch: pytest.MonkeyPatch, read_ahead: str,
) -> None:
    # Set by another tool: reconcile manages neither, and its update leaves both.
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/orders",
        "labels": {"reconcile-managed": "true", "reconcile-owner": "default"},
        "ingestion_data_source_settings": {"cloud_storage": {
            "bucket": "landing", "text_format": {}}},
        "message_transforms": [{"javascript_udf": {
            "function_name": "redact", "code": "function redact(m, a) { return m; }"}}],
    })
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    snapshot = ""  # the read-ahead process takes the constraints from the snapshot
    for name, condition in (
        ("custom.noUdf", "has(resource.messageTransforms) && resource.messageTransforms"
                         ".exists(t, t.javascriptUdf.functionName == 'redact')"),
        ("custom.noGcs", "has(resource.ingestionDataSourceSettings.cloudStorage)"),
    ):
        constraint = _constraint(name, condition, "DENY")
        orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=constraint)
        _enforce(local_server, name)
        snapshot += (
            f"name: {constraint['name']}\nresourceTypes: [pubsub.googleapis.com/Topic]\n"
            f"methodTypes: [CREATE, UPDATE]\ncondition: \"{condition}\"\n"
            f"actionType: DENY\ndescription: {name} says no.\n---\n"
            f"name: projects/{PROJECT}/policies/{name}\nspec: {{rules: [{{enforce: true}}]}}\n"
            "---\n"
        )
    root = tree(topic_doc("orders", labels={"team": "pay"}), extra=snapshot)
    monkeypatch.setenv("RECONCILE_READ_AHEAD_FROM", read_ahead)  # the second process, or not
    result = _plan(run_cli, local_server, root)
    assert result.exit_code == 1, result.stderr
    assert "org-custom-not-checked" not in result.stderr
    for name in ("custom.noGcs", "custom.noUdf"):
        assert f"topic projects/proj-a/topics/orders already violates custom constraint " \
            f"{name}" in result.stderr
    assert 'resource.messageTransforms = [{"javascriptUdf": {"code": ' in result.stderr
    # As the local server answers the update the plan would have made.
    with pytest.raises(exceptions.FailedPrecondition, match=r"custom\.noGcs.*custom\.noUdf"):
        publisher_client.update_topic(request={
            "topic": {"name": f"projects/{PROJECT}/topics/orders", "labels": {
                "reconcile-managed": "true", "reconcile-owner": "default", "team": "pay"}},
            "update_mask": {"paths": ["labels"]},
        })


def test_a_stale_snapshot_is_named(
    run_cli: Any, local_server: Any, tree: Any
) -> None:
    local_server.put_policy(Policy.from_dict({
        "name": f"projects/{PROJECT}/policies/gcp.resourceLocations",
        "spec": {"rules": [{"values": {"allowedValues": ["europe-west1", "us-east1"]}}]},
    }))
    snapshot_policy = (
        f"name: projects/{PROJECT}/policies/gcp.resourceLocations\n"
        "spec: {rules: [{values: {allowedValues: [europe-west1]}}]}\n---\n"
        f"name: projects/{PROJECT}/policies/pubsub.enforceInTransitRegions\n"
        "spec: {rules: [{enforce: true}]}\n---\n"
    )
    root = tree(topic_doc("orders", storage=(["europe-west1"], None)), extra=snapshot_policy)
    result = _plan(run_cli, local_server, root)
    assert result.exit_code == 0, result.stderr
    out = result.stdout  # the plan's warnings are part of the plan
    assert "warning[org-policy-stale]" in out
    assert "no longer matches the live effective policy of project proj-a" in out
    assert "constraints/gcp.resourceLocations: the live policy now also allows us-east1" in out
    assert "constraints/pubsub.enforceInTransitRegions: not enforced now, enforced in the " \
        "snapshot" in out
    assert "reconcile policy pull --project proj-a" in out


def test_a_live_topic_in_a_region_no_longer_allowed_gets_its_labels(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Any
) -> None:
    """Adopting existing topics: one already stored in a region the org policy no
    longer allows is described as such, and a plan that leaves its storage policy as
    it is still changes its labels (the service checks the policy only when set)."""
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/old",
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1"]},
    })
    local_server.put_policy(Policy.from_dict({
        "name": f"projects/{PROJECT}/policies/gcp.resourceLocations",
        "spec": {"rules": [{"values": {"allowedValues": ["europe-west1"]}}]},
    }))
    root = tree(topic_doc("old", labels={"team": "pay"}, storage=(["us-east1"], None)))
    result = run_cli("apply", str(root), "--emulator", local_server.address, "--auto-approve")
    assert result.exit_code == 0, result.stderr
    out = result.stdout + result.stderr
    assert out.count("warning[existing-location-denied]") == 1, out  # said once
    assert "org-location-denied" not in out
    assert (
        "topic projects/proj-a/topics/old exists with region 'us-east1' in its storage "
        "policy, which the effective constraints/gcp.resourceLocations of project proj-a "
        "does not allow (allowed: europe-west1); the plan leaves the policy as it is"
    ) in out
    assert "the service would refuse creating" not in out
    live = publisher_client.get_topic(topic=f"projects/{PROJECT}/topics/old")
    assert live.labels["team"] == "pay"
