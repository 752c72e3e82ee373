"""docs/plan.schema.json is the one the plan model generates, describes the plan files
`reconcile plan --out` really writes (creates, updates, no-ops, drift), and rejects a
plan without the contract's keys."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.gitops.workflow_lines import ROOT

SCHEMA = json.loads((ROOT / "docs" / "plan.schema.json").read_text())


def errors(plan: dict[str, Any]) -> list[str]:
    validator = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(plan)]


def test_the_checked_in_schema_is_the_generated_one() -> None:
    from reconciler.plan.planschema import COMMAND, plan_schema_text

    checked_in = (ROOT / "docs" / "plan.schema.json").read_text()
    assert checked_in == plan_schema_text(), f"docs/plan.schema.json is stale: run `{COMMAND}`"


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


@pytest.fixture
def local_plan(run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A plan made with `--local` on a copy of the reference specs after an apply and an
    edit: one topic updated, one created, the others no-op."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    applied = run_cli("apply", "specs", "--local", "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    topics = tmp_path / "specs" / "acme-platform" / "topics.yaml"
    text = topics.read_text()
    topics.write_text(
        text + "\n---\napiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: acme-platform, name: audit-trail}\n"
    )
    defaults = tmp_path / "specs" / "acme-payments" / "defaults.yaml"
    defaults.write_text(defaults.read_text().replace("team: payments", "team: payments-core"))
    made = run_cli("plan", "specs", "--local", "--out", "plan.json", "--detailed-exitcode")
    assert made.exit_code == 2, made.stderr
    data: dict[str, Any] = json.loads((tmp_path / "plan.json").read_text())
    return data


def test_a_local_plan_file_validates(local_plan: dict[str, Any]) -> None:
    assert errors(local_plan) == []
    actions = {rc["change"]["actions"][0] for rc in local_plan["resource_changes"]}
    assert actions == {"create", "update", "no-op"}
    updated = [rc for rc in local_plan["resource_changes"] if rc["change"]["actions"] == ["update"]]
    assert {tuple(rc["update_mask"]) for rc in updated} == {("labels",)}


def test_a_plan_with_drift_validates(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.pubsub_v1.types import MessageStoragePolicy, Topic

    monkeypatch.chdir(tmp_path)
    publisher_client.create_topic(
        request=Topic(
            name="projects/proj-a/topics/too-wide",
            message_storage_policy=MessageStoragePolicy(
                allowed_persistence_regions=["us-central1", "asia-east1"]
            ),
        )
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: proj-a, name: too-wide}\n"
    )
    (tmp_path / "org-policy.yaml").write_text(
        "name: projects/proj-a/policies/gcp.resourceLocations\n"
        "spec:\n  rules:\n    - values:\n        allowedValues: [us-central1]\n"
    )
    made = run_cli(
        "plan", "specs", "--emulator", local_server.address,
        "--org-policy", "org-policy.yaml", "--out", "plan.json",
    )
    assert made.exit_code == 0, made.stderr
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["drift"][0]["category"] == "allows-disallowed-locations"
    assert errors(data) == []


@pytest.mark.parametrize(
    ("break_it", "complaint"),
    [
        (lambda p: p.pop("format_version"), "'format_version' is a required property"),
        (lambda p: p["resource_changes"][0].pop("update_mask"),
         "'update_mask' is a required property"),
        (lambda p: p["resource_changes"][0]["change"].update(actions=["replace"]),
         "'replace' is not one of"),
        (lambda p: p["resource_changes"][0].update(address="orders"), "does not match"),
        (lambda p: p.update(digest="md5:abc"), "does not match"),
    ],
    ids=["format_version", "update_mask", "action", "address", "digest"],
)
def test_a_plan_missing_the_contract_is_rejected(
    local_plan: dict[str, Any], break_it: Any, complaint: str
) -> None:
    broken = copy.deepcopy(local_plan)
    break_it(broken)
    found = errors(broken)
    assert any(complaint in e for e in found), found


def test_fields_added_later_keep_validating(local_plan: dict[str, Any]) -> None:
    extended = copy.deepcopy(local_plan)
    extended["some_future_field"] = {"x": 1}
    extended["resource_changes"][0]["change"]["some_future_field"] = True
    assert errors(extended) == []
