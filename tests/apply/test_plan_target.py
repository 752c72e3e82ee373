"""The plan records where it was made (issue 10, bullet 3): the service and the
org-policy source. `apply PLANFILE` goes there without a target flag, refuses another
target or another org-policy source naming both, and names a changed snapshot as such.
Refusals happen before any RPC."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from apply_support import mutating_calls

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import reconcile
from tests.specs_support import Tree

THREE = {
    "orders": {"labels": {"team": "payments"}},
    "refunds": {"labels": {"team": "payments"}, "messageStoragePolicy": "inherit"},
    "audit": {"labels": {"retention": "long"}},
}


def plan_with(local_server: Any, tree: Tree, *args: str) -> dict[str, Any]:
    local_server.seed_policies(load_snapshot(tree.policy))
    tree.write(THREE)
    made = reconcile(
        "plan", "specs", "--emulator", local_server.address, *args, "--out", "plan.json"
    )
    assert made.exit_code == 0, made.output
    local_server.counters.reset()
    data: dict[str, Any] = json.loads((tree.root / "plan.json").read_text())
    return data


def test_the_plan_records_its_target_and_snapshot(local_server: Any, tree: Tree) -> None:
    data = plan_with(local_server, tree, "--org-policy", str(tree.policy))
    assert data["target"] == {
        "kind": "emulator",
        "address": local_server.address,
        "org_policy": "snapshot",
        "snapshot": str(tree.policy),
        "snapshot_sha256": hashlib.sha256(tree.policy.read_bytes()).hexdigest(),
    }
    shown = reconcile("show", "plan.json")
    assert (
        f"Target: emulator {local_server.address}; org policy: snapshot {tree.policy}"
        in shown.stdout
    )


def test_without_a_target_flag_apply_goes_where_the_plan_was_made(
    local_server: Any, tree: Tree
) -> None:
    plan_with(local_server, tree, "--org-policy", str(tree.policy))
    run = reconcile("apply", "plan.json")  # no --emulator, no --org-policy
    assert run.exit_code == 0, run.output
    assert f"Applying to the plan's recorded target: emulator {local_server.address}." in run.stderr
    assert f"Org policy: the plan's recorded snapshot {tree.policy}." in run.stderr
    assert "org policy changed" not in run.output
    assert mutating_calls(local_server)["CreateTopic"] == 3


def test_another_target_flag_is_refused_naming_both(local_server: Any, tree: Tree) -> None:
    plan_with(local_server, tree)
    run = reconcile("apply", "plan.json", "--local")
    assert run.exit_code == 4, run.output
    assert (
        f"plan.json was made against emulator {local_server.address}, but this apply targets "
        "local (.reconcile/local) (--local); nothing was applied" in run.stderr
    )
    other = reconcile("apply", "plan.json", "--emulator", "127.0.0.1:1")
    assert other.exit_code == 4
    assert "but this apply targets emulator 127.0.0.1:1 (--emulator 127.0.0.1:1)" in other.stderr
    assert local_server.counters.total() == 0
    assert not (tree.root / ".reconcile").exists()


def test_a_snapshot_where_the_plan_used_the_api_is_refused_naming_both(
    local_server: Any, tree: Tree
) -> None:
    plan_with(local_server, tree)  # the Org Policy API decided
    run = reconcile("apply", "plan.json", "--org-policy", str(tree.policy))
    assert run.exit_code == 4, run.output
    assert (
        f"plan.json was made with the org policy read from the live Org Policy API, but "
        f"this apply passes "
        f"--org-policy {tree.policy}; nothing was applied" in run.stderr
    )
    assert "effective org policy changed" not in run.stderr
    assert local_server.counters.total() == 0
    # Without the flag it uses the API, as recorded, and applies.
    ok = reconcile("apply", "plan.json")
    assert ok.exit_code == 0, ok.output
    assert mutating_calls(local_server)["CreateTopic"] == 3


def test_the_same_snapshot_content_at_another_path_is_accepted(
    local_server: Any, tree: Tree
) -> None:
    plan_with(local_server, tree, "--org-policy", str(tree.policy))
    copy = tree.root / "elsewhere.yaml"
    copy.write_bytes(tree.policy.read_bytes())
    tree.policy.unlink()
    missing = reconcile("apply", "plan.json")
    assert missing.exit_code == 4
    assert f"plan.json was made with the org-policy snapshot {tree.policy}, which is not there" in (
        missing.stderr
    )
    ok = reconcile("apply", "plan.json", "--org-policy", str(copy))
    assert ok.exit_code == 0, ok.output


def test_a_changed_snapshot_is_named_as_such(local_server: Any, tree: Tree) -> None:
    plan_with(local_server, tree, "--org-policy", str(tree.policy))
    tree.set_allowed("in:us-locations, in:eu-locations")
    run = reconcile("apply", "plan.json")
    assert run.exit_code == 4, run.output
    assert f"the org-policy snapshot {tree.policy} changed since plan.json was made" in run.stderr
    assert "effective org policy changed" not in run.stderr
    assert local_server.counters.total() == 0
