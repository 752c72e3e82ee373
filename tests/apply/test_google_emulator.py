"""Against Google's own Pub/Sub emulator (issue 13): it cannot update labels or storage
policies and computes no storage policy. Apply must say so instead of advising a rerun,
and `inherit` topics must get one warning instead of a perpetual update.

The emulator is the suite's `google_emulator` fixture (tests/conftest.py); the tests are
skipped, with the reason printed, only where gcloud (or its Pub/Sub emulator component)
is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import reconcile
from tests.specs_support import Tree


@pytest.fixture
def emu_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any) -> Tree:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    # A project of its own per test: the emulator is shared by the module.
    return Tree(tmp_path, f"emu-{request.node.name[5:19].replace('_', '-')}".rstrip("-"))


def args(address: str, tree: Tree) -> list[str]:
    return ["--emulator", address, "--org-policy", str(tree.policy)]


US = {"allowedPersistenceRegions": ["us-east1"]}


def test_inherit_topics_get_one_warning_instead_of_a_perpetual_update(
    google_emulator: str, emu_tree: Tree
) -> None:
    emu_tree.write(
        {
            "inherits-a": {"messageStoragePolicy": "inherit"},
            "inherits-b": {"messageStoragePolicy": "inherit"},
            "explicit": {"messageStoragePolicy": US},
        }
    )
    first = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert first.exit_code == 0, first.output
    assert "3 applied (3 created" in first.output
    plan = reconcile("plan", "specs", *args(google_emulator, emu_tree), "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output  # no perpetual update
    warnings = [line for line in plan.output.splitlines() if "emulator-no-storage-policy" in line]
    assert len(warnings) == 1, plan.output
    assert "computes no message storage policy" in warnings[0]
    assert "inherits-a" in warnings[0] and "inherits-b" in warnings[0]


def test_label_update_refused_says_why_and_does_not_advise_a_rerun(
    google_emulator: str, emu_tree: Tree
) -> None:
    emu_tree.write({"orders": {"labels": {"team": "a"}}})
    assert (
        reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve").exit_code
        == 0
    )
    emu_tree.write({"orders": {"labels": {"team": "b"}}})
    run = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert run.exit_code == 3, run.output
    failed = [line for line in run.output.splitlines() if "update FAILED" in line]
    assert len(failed) == 1, run.output
    assert "Google's Pub/Sub emulator cannot update labels of a topic" in failed[0]
    assert "--local" in failed[0]
    assert "Run `reconcile apply` again" not in run.output
    assert "Running apply again will not fix these failures" in run.output


def test_storage_policy_update_refused_says_why(google_emulator: str, emu_tree: Tree) -> None:
    emu_tree.set_allowed("us-east1, us-central1")
    emu_tree.write({"orders": {"messageStoragePolicy": US}})
    assert (
        reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve").exit_code
        == 0
    )
    emu_tree.write(
        {"orders": {"messageStoragePolicy": {"allowedPersistenceRegions": ["us-central1"]}}}
    )
    run = reconcile("apply", "specs", *args(google_emulator, emu_tree), "--auto-approve")
    assert run.exit_code == 3, run.output
    assert "cannot update message storage policies of a topic" in run.output
    assert "Run `reconcile apply` again" not in run.output


def test_without_org_policy_the_spec_trees_snapshot_answers_and_it_says_so(
    google_emulator: str, emu_tree: Tree
) -> None:
    """Google's emulator serves no Org Policy API: the snapshot at the spec root is
    used (as `validate` uses it), said on stderr, and recorded in the plan."""
    snapshot = emu_tree.specs / "org-policy.yaml"
    snapshot.write_bytes(emu_tree.policy.read_bytes())
    emu_tree.policy.unlink()
    emu_tree.write({"orders": {"messageStoragePolicy": US}})
    plan = reconcile("plan", "specs", "--emulator", google_emulator, "--out", "plan.json")
    assert plan.exit_code == 0, plan.output
    assert f"Org policy and ancestry: the spec tree's snapshot {snapshot}" in plan.stderr
    assert "serves neither the Org Policy nor the Resource Manager API" in plan.stderr
    assert "--org-policy" not in plan.stderr.replace("--org-policy FILE names another", "")
    recorded = json.loads((emu_tree.root / "plan.json").read_text())["target"]
    assert (recorded["org_policy"], recorded["snapshot"]) == ("snapshot", str(snapshot))
    run = reconcile("apply", "plan.json")
    assert run.exit_code == 0, run.output
