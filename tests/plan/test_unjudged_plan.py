"""`plan` and `apply` fail, before any call, on a custom constraint they could not
judge, each said once per project (and constraint), not once per topic: a project
whose organization is unknown (no snapshot in the tree, and Resource Manager does
not let the plan's account read the project; a DENY constraint set through the real
Org Policy client on its organization), a live condition reconcile's
CEL library cannot compile (which the Org Policy API accepted), a read that failed.
`--allow-unjudged` lets them through as warnings that say so, and its use is
reported; the service then decides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from tests.specs_support import topic_doc

ORG = "organizations/4455"
PROJECT = "gate-proj"
NO_TEAM = {
    "name": f"{ORG}/customConstraints/custom.noTeamLabel",
    "resource_types": ["pubsub.googleapis.com/Topic"],
    "method_types": ["CREATE", "UPDATE"],
    "condition": "'team' in resource.labels",
    "action_type": "DENY",
    "description": "Teams are not labels here.",
}
LOWER = {
    **NO_TEAM,
    "name": f"{ORG}/customConstraints/custom.lower",
    "condition": "resource.name.lowerAscii().endsWith('-tmp')",
    "description": "No temporary topics.",
}
CALLS = ("CreateTopic", "UpdateTopic")


def _enforce(orgpolicy: Any, parent: str, constraint: str, dry_run: bool = False) -> None:
    """The policy, through the real Org Policy client."""
    spec = {"rules": [{"enforce": True}]}
    orgpolicy.create_policy(parent=parent, policy={
        "name": f"{parent}/policies/{constraint}",
        ("dry_run_spec" if dry_run else "spec"): spec,
    })


def _specs(tmp_path: Path, ancestry: bool) -> Path:
    """Three topics of the project, each with a team label; one exists already."""
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text("---\n".join(
        topic_doc(name, project=PROJECT, labels={"team": "pay"})
        for name in ("orders", "audit", "billing")
    ))
    if ancestry:
        (root / "org-policy.yaml").write_text(f"ancestry:\n  projects/{PROJECT}: {ORG}\n")
    return root


@pytest.fixture
def org(local_server: Any, orgpolicy_client: Any, publisher_client: Any) -> Any:
    """The organization as the service knows it: the project under it, a live topic
    without labels, and the DENY constraint enforced on the organization."""
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/orders",
        "labels": {"reconcile-managed": "true", "reconcile-owner": "default"},
    })
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=NO_TEAM)
    _enforce(orgpolicy_client, ORG, "custom.noTeamLabel")
    local_server.counters.reset()
    return local_server


def _calls(server: Any) -> dict[str, int]:
    return {m: server.counters.get(m) for m in CALLS}


def _unreadable(server: Any) -> None:
    """The plan's account may not read the project in Resource Manager."""
    server.faults.add("GetProject", error="PERMISSION_DENIED", resource=f"projects/{PROJECT}")


def test_no_snapshot_no_ancestry_plan_and_apply_fail_before_any_call(
    run_cli: Any, org: Any, tmp_path: Path
) -> None:
    root = _specs(tmp_path, ancestry=False)
    _unreadable(org)
    result = run_cli("plan", str(root), "--emulator", org.address)
    assert result.exit_code == 1, result.stderr
    rows = [r for r in result.stderr.splitlines() if "org-custom-no-ancestry" in r]
    assert len(rows) == 1, result.stderr  # once for the project, not once per topic
    (row,) = rows
    assert row.startswith(f"{root}/topics.yaml:")
    assert f"error[org-custom-no-ancestry]: custom constraints not judged for project " \
           f"{PROJECT}: its organization is unknown (" in row
    assert "resourcemanager.projects.get" in row
    assert "3 calls (projects/gate-proj/topics/audit, projects/gate-proj/topics/billing, " \
           "projects/gate-proj/topics/orders)" in row
    assert "no plan made, nothing changed" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    applied = run_cli("apply", str(root), "--emulator", org.address, "--auto-approve")
    assert applied.exit_code == 1, applied.stderr
    assert "error[org-custom-no-ancestry]" in applied.stderr
    assert _calls(org) == {"CreateTopic": 0, "UpdateTopic": 0}


def test_the_opt_out_plans_says_so_and_the_service_decides(
    run_cli: Any, org: Any, tmp_path: Path
) -> None:
    root = _specs(tmp_path, ancestry=False)
    _unreadable(org)
    result = run_cli("plan", str(root), "--emulator", org.address, "--format", "json",
                     "--allow-unjudged", "all")
    assert result.exit_code == 0, result.stderr
    planned = json.loads(result.stdout)
    (why,) = planned["custom_constraints"][PROJECT]["not_judged"]
    assert why.startswith("all: its organization is unknown"), planned["custom_constraints"]
    said = {d["code"]: d for d in planned["diagnostics"]}
    assert said["org-custom-no-ancestry"]["severity"] == "warning"
    assert "let through by --allow-unjudged all" in said["org-custom-no-ancestry"]["message"]
    report = said["org-custom-unjudged-allowed"]
    assert report["severity"] == "warning" and report["file"] == str(root)
    assert "did not stop this run (the custom constraints of project gate-proj)" in (
        report["message"])
    # A named constraint does not cover constraints that were never read.
    named = run_cli("plan", str(root), "--emulator", org.address, "--allow-unjudged",
                    "custom.noTeamLabel")
    assert named.exit_code == 1 and "error[org-custom-no-ancestry]" in named.stderr
    # Applied: the service refuses what reconcile could not judge.
    applied = run_cli("apply", str(root), "--emulator", org.address, "--auto-approve",
                      "--allow-unjudged", "all")
    assert applied.exit_code != 0
    assert "Operation denied by custom org policy" in applied.stdout + applied.stderr
    assert org.counters.get("CreateTopic") + org.counters.get("UpdateTopic") > 0
    # A saved plan is already made: the option is refused there.
    out = tmp_path / "plan.json"
    assert run_cli("plan", str(root), "--emulator", org.address, "--allow-unjudged", "all",
                   "--out", str(out)).exit_code == 0
    saved = run_cli("apply", str(out), "--emulator", org.address, "--allow-unjudged", "all")
    assert saved.exit_code == 1
    assert "--allow-unjudged decides how a plan is made" in saved.stderr


def test_with_the_ancestry_the_constraint_is_judged(
    run_cli: Any, org: Any, tmp_path: Path
) -> None:
    root = _specs(tmp_path, ancestry=True)
    result = run_cli("plan", str(root), "--emulator", org.address)
    assert result.exit_code == 1, result.stderr
    assert "org-custom-no-ancestry" not in result.stderr
    # Text groups the two CreateTopic refusals (one finding, each topic at its line),
    # the UpdateTopic's is its own.
    refused = [r for r in result.stderr.splitlines() if "error[org-custom-constraint]" in r]
    assert len(refused) == 2, result.stderr
    assert "the CreateTopic of each of these 2 topics breaks" in refused[0], refused
    for name in ("audit", "billing"):
        assert f": projects/{PROJECT}/topics/{name}\n" in result.stderr
    assert f"the UpdateTopic of projects/{PROJECT}/topics/orders breaks" in refused[1]
    # Which constraints the plan judged, per project.
    assert f"Custom constraints in {PROJECT}: judged custom.noTeamLabel (enforced)\n" in (
        result.stderr)
    as_json = run_cli("plan", str(root), "--emulator", org.address, "--format", "json")
    planned = json.loads(as_json.stdout)
    assert planned["custom_constraints"] == {
        PROJECT: {"judged": ["custom.noTeamLabel (enforced)"]}}
    # One per topic in json.
    assert sorted(d["topic"] for d in planned["diagnostics"]
                  if d["code"] == "org-custom-constraint") == [
        f"projects/{PROJECT}/topics/{name}" for name in ("audit", "billing", "orders")]
    assert _calls(org) == {"CreateTopic": 0, "UpdateTopic": 0}


def test_a_misspelt_opt_out_is_said_to_name_no_constraint_in_effect(
    run_cli: Any, org: Any, tmp_path: Path
) -> None:
    root = _specs(tmp_path, ancestry=True)
    result = run_cli("plan", str(root), "--emulator", org.address, "--format", "json",
                     "--allow-unjudged", "custom.noTeamLabl")
    (report,) = [d for d in json.loads(result.stdout)["diagnostics"]
                 if d["code"] == "org-custom-unjudged-allowed"]
    assert report["message"] == (
        "--allow-unjudged custom.noTeamLabl was given, and let nothing through: "
        "custom.noTeamLabl (did you mean custom.noTeamLabel?) is not a custom constraint "
        "in effect for the projects planned"
    )


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_live_condition_the_library_cannot_compile(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any,
    tmp_path: Path, dry_run: bool,
) -> None:
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    # The Org Policy API accepts it (the service's CEL environment may have lowerAscii).
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint=LOWER)
    _enforce(orgpolicy_client, f"projects/{PROJECT}", "custom.lower", dry_run)
    root = _specs(tmp_path, ancestry=True)
    local_server.counters.reset()
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    shown = result.stdout + result.stderr  # warnings with the plan, errors on stderr
    rows = [r for r in shown.splitlines() if "org-custom-uncompilable" in r]
    assert len(rows) == 1, shown
    state = "dry-run" if dry_run else "enforced"
    assert (
        f"custom constraint custom.lower ({state} in project {PROJECT}) was not judged on "
        "the 3 calls (" in rows[0]
    )
    assert (
        "its condition uses what reconcile's CEL library does not have (undeclared "
        "reference to 'lowerAscii'"
    ) in rows[0]
    assert "docs/custom-constraints.md#the-cel-that-conditions-use" in rows[0]
    assert (f"Custom constraints in {PROJECT}: not judged custom.lower ({state}) (the "
            "diagnostics say why)") in shown
    if dry_run:
        assert result.exit_code == 0, result.stderr
        assert "warning[org-custom-uncompilable]" in rows[0]
        return
    assert result.exit_code == 1
    assert "error[org-custom-uncompilable]" in rows[0]
    assert _calls(local_server) == {"CreateTopic": 0, "UpdateTopic": 0}
    # The local server answers the call honestly: it cannot evaluate it either.
    with pytest.raises(exceptions.FailedPrecondition, match=(
        r"could not evaluate the condition of custom constraint customConstraints/"
        r"custom\.lower .*does not compile with the local server's CEL library"
    )):
        publisher_client.create_topic(request={"name": f"projects/{PROJECT}/topics/x-tmp"})


def test_a_condition_that_is_not_cel_is_refused_by_the_api(orgpolicy_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument, match="the condition does not compile"):
        orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
            **LOWER, "condition": "resource.name.startsWith(",
        })


def test_an_unreadable_read_is_named_once_per_project(
    run_cli: Any, org: Any, tmp_path: Path
) -> None:
    org.faults.add("ListCustomConstraints", error="PERMISSION_DENIED")
    root = _specs(tmp_path, ancestry=True)
    result = run_cli("plan", str(root), "--emulator", org.address)
    assert result.exit_code == 1, result.stderr
    rows = [r for r in result.stderr.splitlines() if "org-custom-unreadable" in r]
    assert len(rows) == 1, result.stderr
    assert f"custom constraints not judged for project {PROJECT}: reading them failed" in (
        rows[0])
    assert "roles/orgpolicy.policyViewer" in rows[0]
    assert _calls(org) == {"CreateTopic": 0, "UpdateTopic": 0}
