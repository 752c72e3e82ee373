"""A plan applies once (issue 21, item 3): apply leaves the plan's marker on each topic
it creates or updates, the fingerprints cover it, and a saved plan replayed later is
refused as "already applied" (this very plan ran) or "superseded" (another plan ran
since), even when the live topic otherwise looks as it did when the plan was made
(A -> B -> A). Through the CLI against the local server; every refusal before any call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apply_support import mutating_calls

from reconciler.ownership import PLAN_LABEL, plan_marker
from reconciler.plan.planfile import read_plan
from tests.specs_support import Tree

NONE = {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


def regions(name: str) -> dict[str, Any]:
    return {"labels": {"team": "pay"},
            "messageStoragePolicy": {"allowedPersistenceRegions": [name]}}


def live(client: Any, tree: Tree) -> tuple[list[str], dict[str, str]]:
    topic = client.get_topic(request={"topic": tree.address("orders")})
    return list(topic.message_storage_policy.allowed_persistence_regions), dict(topic.labels)


def test_a_saved_plan_replayed_is_already_applied_or_superseded(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    tree.write({"orders": regions("us-east1")})  # A
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == 0

    tree.write({"orders": regions("us-central1")})  # PR 1: A -> B
    made = run_cli("plan", "specs", *target, "--out", "pr1.json")
    assert made.exit_code == 0, made.stderr
    pr1 = Path("pr1.json")
    applied = run_cli("apply", str(pr1), *target)
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    marker = plan_marker(read_plan(pr1).digest)
    assert live(publisher_client, tree) == (
        ["us-central1"], {"team": "pay", "reconcile-managed": "true",
                          "reconcile-owner": "default", PLAN_LABEL: marker},
    )

    # The same plan twice: already applied, nothing sent.
    local_server.counters.reset()
    twice = run_cli("apply", str(pr1), *target)
    assert twice.exit_code == 4
    assert "the saved plan was already applied: the topics it changed carry its marker " \
        f"{PLAN_LABEL}={marker}" in twice.stderr
    assert "stale" not in twice.stderr.split("\n")[0]
    assert mutating_calls(local_server) == NONE

    # PR 2 reverts (B -> A), applied from the specs; PR 1's plan is then superseded,
    # though the topic's storage policy is again what PR 1's plan saw.
    tree.write({"orders": regions("us-east1")})
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == 0
    regions_now, labels_now = live(publisher_client, tree)
    assert regions_now == ["us-east1"] and labels_now[PLAN_LABEL] != marker
    local_server.counters.reset()
    replay = run_cli("apply", str(pr1), *target)
    assert replay.exit_code == 4
    assert "the saved plan was superseded: another plan was applied since it was made" \
        in replay.stderr
    assert f"another plan was applied to it since ({PLAN_LABEL}={labels_now[PLAN_LABEL]})" \
        in replay.stderr
    assert mutating_calls(local_server) == NONE
    assert live(publisher_client, tree)[0] == ["us-east1"]
    # The specs agree with the live state: nothing drifted.
    plan = run_cli("plan", "specs", *target, "--detailed-exitcode")
    assert plan.exit_code == 0, plan.stdout


def test_a_plan_that_only_changes_the_storage_policy_still_leaves_its_marker(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Tree
) -> None:
    target = ("--emulator", local_server.address)
    tree.write({"orders": regions("us-east1")})
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == 0
    tree.write({"orders": regions("us-west1")})
    made = run_cli("plan", "specs", *target, "--out", "p.json", "--format", "json")
    assert made.exit_code == 0, made.stderr
    plan = read_plan(Path("p.json"))
    [rc] = plan.resource_changes
    assert list(rc.update_mask) == ["message_storage_policy"]  # what the change sets
    # What apply sends, stated by the plan: labels too, for the marker, merged onto a
    # fresh read of the topic (no label changes of the plan's own).
    assert rc.request is not None
    assert list(rc.request.update_mask) == ["labels", "message_storage_policy"]
    assert rc.request.marker_label == PLAN_LABEL
    assert rc.request.label_merge is not None and not rc.request.label_merge.set
    shown = run_cli("show", "p.json")
    assert f'{PLAN_LABEL} = "{plan_marker(plan.digest)}"' in shown.stdout
    assert run_cli("apply", "p.json", *target).exit_code == 0
    assert live(publisher_client, tree)[1][PLAN_LABEL] == plan_marker(plan.digest)
    again = run_cli("apply", "p.json", *target)
    assert again.exit_code == 4 and "already applied" in again.stderr


def test_a_saved_plan_applied_in_part_is_not_applied_again(
    run_cli: Any, local_server: Any, publisher_client: Any, tree: Tree
) -> None:
    """One of two updates fails in a way a new plan can fix: the summary says to make
    one (this plan applies once), and the same plan again is refused, naming the part."""
    target = ("--emulator", local_server.address)
    tree.write({"orders": regions("us-east1"), "refunds": regions("us-east1")})
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == 0
    tree.write({"orders": regions("us-west1"), "refunds": regions("us-west1")})
    assert run_cli("plan", "specs", *target, "--out", "p.json").exit_code == 0
    local_server.faults.add(method="UpdateTopic", error="NOT_FOUND",
                            resource=tree.address("refunds"))
    part = run_cli("apply", "p.json", *target)
    assert part.exit_code == 3
    assert "1 applied" in part.stdout and "1 failed" in part.stdout
    assert "Make a new plan (`reconcile plan --out PLANFILE`) and apply it" in part.stdout
    assert "Run `reconcile apply` again" not in part.stdout
    local_server.faults.clear()
    local_server.counters.reset()
    again = run_cli("apply", "p.json", *target)
    assert again.exit_code == 4
    assert "the saved plan was already applied in part (1 of the 2 topics it creates or " \
        "updates carry its marker" in again.stderr
    assert mutating_calls(local_server) == NONE
    assert run_cli("apply", "specs", *target, "--auto-approve").exit_code == 0
    assert run_cli("plan", "specs", *target, "--detailed-exitcode").exit_code == 0
