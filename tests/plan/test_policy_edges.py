"""Edges of the storage-policy model (issue 13): a live policy that lists no region
allows none (never "every region"), and in-transit enforcement without a location
constraint leaves `inherit` topics alone. Live topics are stored as the service
would return them; plans go through the CLI and the real client library."""

from __future__ import annotations

import json
from typing import Any

from reconciler.localserver.api import protos
from reconciler.orgpolicy.snapshot import load_snapshot
from tests.specs_support import topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}


def store(local_server: Any, name: str, policy: Any) -> None:
    """A live topic with exactly this policy (set, even when empty), as GetTopic and
    ListTopics will return it."""
    topic = protos.Topic(name=f"projects/proj-a/topics/{name}", labels=OWN)
    topic.message_storage_policy.CopyFrom(policy)
    assert topic.HasField("message_storage_policy")
    local_server.state.create_topics([topic])


def plan(run_cli: Any, local_server: Any, root: Any, policy: Any, *extra: str) -> Any:
    return run_cli(
        "plan", str(root), "--emulator", local_server.address, "--org-policy", str(policy), *extra
    )


def test_an_empty_region_list_is_no_region_allowed_and_drift(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    store(local_server, "unmanaged", protos.MessageStoragePolicy())
    root = specs(topic_doc("unmanaged"))
    result = plan(run_cli, local_server, root, org_policy_file(), "--detailed-exitcode")
    assert result.exit_code == 0, result.stdout + result.stderr  # drift is a warning
    assert "no region allowed (invalid)" in result.stdout
    assert "(every region)" not in result.stdout and "allows every region" not in result.stdout
    data = json.loads(
        plan(run_cli, local_server, root, org_policy_file(), "--format", "json").stdout
    )
    (drift,) = data["drift"]
    assert drift["address"] == "projects/proj-a/topics/unmanaged"
    assert drift["message"].startswith("no region allowed (invalid)")
    assert "us-central1" in drift["missing"]


def test_a_managed_topic_with_an_empty_region_list_is_updated_and_shown_so(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    store(local_server, "orders", protos.MessageStoragePolicy(enforce_in_transit=True))
    root = specs(topic_doc("orders", storage=(["us-east1"], True)))
    result = plan(run_cli, local_server, root, org_policy_file(), "--detailed-exitcode")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        '~ allowed_persistence_regions = (no region allowed: invalid) -> ["us-east1"]'
        in result.stdout
    )
    assert "no region allowed (invalid) on the live topic" in result.stdout
    assert "(every region)" not in result.stdout and "allows every region" not in result.stdout


def test_in_transit_enforcement_without_locations_leaves_inherit_alone(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    # The service keeps enforceInTransit on a topic with no region list: no diff.
    store(local_server, "kept", protos.MessageStoragePolicy(enforce_in_transit=True))
    root = specs(topic_doc("kept", storage="inherit"))
    policy = org_policy_file(None, enforce=True)
    result = plan(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "No changes" in result.stdout
    assert "no region allowed" not in result.stdout
    # ... and created through the server it matches on the next plan too.
    root = specs(topic_doc("kept", storage="inherit"), topic_doc("fresh", storage="inherit"))
    assert (
        run_cli(
            "apply",
            str(root),
            "--emulator",
            local_server.address,
            "--org-policy",
            str(policy),
            "--auto-approve",
        ).exit_code
        == 0
    )
    again = plan(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr


def test_explicit_false_under_enforcement_is_forced_true_by_both(
    run_cli: Any, local_server: Any, publisher_client: Any, specs: Any, org_policy_file: Any
) -> None:
    """One rule for validate and the server: the enforcing org policy wins, the spec's
    `false` gets a warning, the topic carries true, and no diff remains."""
    policy = org_policy_file(["us-east1"], enforce=True)
    local_server.seed_policies(load_snapshot(policy))
    root = specs(topic_doc("orders", storage=(["us-east1"], False)))
    checked = run_cli("validate", str(root), "--org-policy", str(policy))
    assert checked.exit_code == 0
    assert "warning[org-in-transit]" in checked.stdout
    assert (
        "stores enforceInTransit: true on topic projects/proj-a/topics/orders whatever the "
        "spec says"
    ) in checked.stdout
    applied = run_cli(
        "apply",
        str(root),
        "--emulator",
        local_server.address,
        "--org-policy",
        str(policy),
        "--auto-approve",
    )
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    live = publisher_client.get_topic(request={"topic": "projects/proj-a/topics/orders"})
    assert live.message_storage_policy.enforce_in_transit is True
    again = plan(run_cli, local_server, root, policy, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr
