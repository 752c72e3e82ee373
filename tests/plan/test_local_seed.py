"""`--local` on a fresh state models the organisation the specs were validated
against: the embedded server starts with the spec tree's org-policy snapshot, and
never has an existing state overwritten by it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _refunds_after(run_cli) -> dict:
    result = run_cli("plan", "specs", "--local", "--format", "json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    (refunds,) = [
        rc for rc in plan["resource_changes"]
        if rc["address"] == "projects/acme-payments/topics/refunds"
    ]
    return refunds


def test_fresh_local_state_takes_the_snapshot_org_policy(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    refunds = _refunds_after(run_cli)
    assert refunds["change"]["actions"] == ["create"]
    policy = refunds["change"]["after"]["message_storage_policy"]
    # org 1001 allows in:us-locations and in:eu-locations; acme-payments enforces
    # in-transit regions: what the service computes for an `inherit` topic.
    assert "us-east1" in policy["allowed_persistence_regions"]
    assert "europe-west1" in policy["allowed_persistence_regions"]
    assert "asia-east1" not in policy["allowed_persistence_regions"]
    assert policy["enforce_in_transit"] is True

    assert run_cli("apply", "specs", "--local", "--auto-approve").exit_code == 0
    # The snapshot changes later: the existing local state keeps the policy it had,
    # so the topic is not planned again.
    (tmp_path / "specs" / "org-policy.yaml").write_text(
        "name: organizations/1001/policies/gcp.resourceLocations\n"
        "spec: {rules: [{values: {allowedValues: [in:asia-locations]}}]}\n"
    )
    result = run_cli("plan", "specs", "--local", "--detailed-exitcode")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "No changes." in result.stdout
