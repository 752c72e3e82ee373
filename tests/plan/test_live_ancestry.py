"""Where each project sits comes from Cloud Resource Manager: `plan` (in this process
or through the read-ahead's second process) reads each project's ancestry (one
GetProject a project, one GetFolder a distinct folder) and then the custom
constraints of its organization, with no snapshot anywhere; an ancestry it cannot
read is recorded with why, and the plan goes on; a snapshot that places a project
elsewhere is named at its line; a saved plan whose project moved is stale. All
through the real Resource Manager, Org Policy and Pub/Sub clients against the local
server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.base import TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.plan.observe import observe
from reconciler.plan.readahead import START_ENV
from reconciler.spec.validate import validate_paths
from tests.server_support import ResourceManager
from tests.specs_support import custom_constraint, custom_refusal, topic_doc

ORG = "organizations/8080"
PROJECT, OTHER = "proj-live", "proj-live-two"
NO_CALLS = {"CreateTopic": 0, "UpdateTopic": 0}


def no_tmp_label(orgpolicy_client: Any, parent: str = ORG) -> None:
    """A DENY custom constraint on the organization, enforced there, set through the
    real Org Policy client: no topic labelled `tmp`."""
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
        **custom_constraint(ORG, "custom.noTmp", "'tmp' in resource.labels"),
        "action_type": "DENY",
    })
    orgpolicy_client.create_policy(parent=parent, policy={
        "name": f"{parent}/policies/custom.noTmp", "spec": {"rules": [{"enforce": True}]},
    })


def tree(tmp_path: Path, *docs: str, snapshot: str | None = None) -> Path:
    root = tmp_path / "specs"
    root.mkdir(exist_ok=True)
    (root / "topics.yaml").write_text("---\n".join(docs))
    if snapshot is not None:
        (root / "org-policy.yaml").write_text(snapshot)
    return root


def calls(local_server: Any) -> dict[str, int]:
    return {m: local_server.counters.get(m) for m in NO_CALLS}


@pytest.mark.parametrize("setting", ["0", "off"])
def test_a_deny_constraint_set_on_the_organization_refuses_the_plan_with_no_snapshot(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, hierarchy: ResourceManager,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str,
) -> None:
    """The hierarchy built through Resource Manager, the constraint through the Org
    Policy API: nothing in the tree names the organization. "0": the read-ahead's
    second process reads; "off": this process."""
    monkeypatch.setenv(START_ENV, setting)
    team = hierarchy.folder(hierarchy.folder(ORG, "Engineering"), "Payments")
    hierarchy.project(PROJECT, team)
    no_tmp_label(orgpolicy_client)
    root = tree(tmp_path, topic_doc("orders", PROJECT, labels={"tmp": "x"}))
    local_server.counters.reset()
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    assert "error[org-custom-constraint]" in result.stderr
    assert custom_refusal(f"projects/{PROJECT}/topics/orders", "custom.noTmp") in result.stderr
    assert "no plan made, nothing changed" in result.stderr
    assert calls(local_server) == NO_CALLS
    # One GetProject, then one GetFolder a folder up to the organization.
    assert local_server.counters.get("GetProject") == 1
    assert local_server.counters.get("GetFolder") == 2


def test_one_read_per_project_and_per_distinct_folder(
    local_server: Any, hierarchy: ResourceManager, orgpolicy_client: Any, tmp_path: Path,
) -> None:
    team = hierarchy.folder(ORG, "Engineering")
    hierarchy.project(PROJECT, team)
    hierarchy.project(OTHER, team)
    no_tmp_label(orgpolicy_client, team)  # enforced at the folder: both obey it
    root = tree(tmp_path, topic_doc("alpha", PROJECT), topic_doc("bravo", OTHER),
                topic_doc("charlie", "proj-nowhere"))
    desired = validate_paths([root]).desired
    local_server.counters.reset()
    backend = open_backend(TargetOptions(emulator=local_server.address))
    try:
        seen = observe(backend, desired)
    finally:
        backend.close()
    assert seen.hierarchy == {PROJECT: (team, ORG), OTHER: (team, ORG), "proj-nowhere": ()}
    assert seen.organizations == {PROJECT: ORG, OTHER: ORG}
    assert not seen.hierarchy_unavailable
    assert {p: [c.constraint_id for c, _ in found] for p, found in seen.custom.items()} == {
        PROJECT: ["custom.noTmp"], OTHER: ["custom.noTmp"], "proj-nowhere": [],
    }
    assert local_server.counters.get("GetProject") == 3
    assert local_server.counters.get("GetFolder") == 1


def test_an_ancestry_that_cannot_be_read_is_recorded_and_named_as_not_judged(
    run_cli: Any, local_server: Any, hierarchy: ResourceManager, tmp_path: Path,
) -> None:
    """The plan's account may not read the project (the service answers alike for a
    project that does not exist): why is recorded for it, the plan names its custom
    constraints as not judged, with that reason, and fails before any call unless
    told to let them through."""
    hierarchy.project(OTHER, hierarchy.folder(ORG, "Engineering"))
    local_server.faults.add("GetProject", error="PERMISSION_DENIED",
                            resource=f"projects/{PROJECT}")
    root = tree(tmp_path, topic_doc("alpha", PROJECT), topic_doc("bravo", OTHER))
    backend = open_backend(TargetOptions(emulator=local_server.address))
    try:
        seen = observe(backend, validate_paths([root]).desired)
    finally:
        backend.close()
    why = seen.hierarchy_unavailable[PROJECT]
    assert f"projects/{PROJECT}" in why
    assert "resourcemanager.projects.get" in why and "roles/browser" in why
    assert PROJECT not in seen.hierarchy and PROJECT not in seen.organizations
    assert seen.organizations == {OTHER: ORG}  # the other project is read all the same
    local_server.counters.reset()
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    (row,) = [r for r in result.stderr.splitlines() if "org-custom-no-ancestry" in r]
    assert f"custom constraints not judged for project {PROJECT}: its organization is " \
           "unknown" in row and "resourcemanager.projects.get" in row, row
    assert "Traceback" not in result.stderr
    assert local_server.counters.get("CreateTopic") == 0
    let_through = run_cli("plan", str(root), "--emulator", local_server.address,
                          "--allow-unjudged", "all")
    assert let_through.exit_code == 0, let_through.stderr
    assert "warning[org-custom-unjudged-allowed]" in let_through.stdout + let_through.stderr


def test_a_snapshot_that_places_a_project_elsewhere_is_named_at_its_line(
    run_cli: Any, local_server: Any, hierarchy: ResourceManager, tmp_path: Path,
) -> None:
    team = hierarchy.folder(ORG, "Engineering")
    hierarchy.project(PROJECT, team)
    snapshot = f"ancestry:\n  projects/{OTHER}: {ORG}\n  projects/{PROJECT}: organizations/1\n"
    root = tree(tmp_path, topic_doc("orders", PROJECT), snapshot=snapshot)
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    where = root / "org-policy.yaml"
    [line] = [x.strip() for x in result.stdout.splitlines() if "[org-policy-stale]" in x]
    assert line.startswith(f"{where}:3:1: warning[org-policy-stale]: "), line
    assert (
        f"the org-policy snapshot places projects/{PROJECT} under organizations/1; Resource "
        f"Manager places it under {team} under {ORG}"
    ) in line


def test_the_stale_snapshot_finding_is_placed_at_the_repository_path(
    run_cli: Any, local_server: Any, hierarchy: ResourceManager, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 46: `org-policy-stale` carried the snapshot's absolute path (it is found by
    resolved path), which GitHub cannot place; in `github` and `sarif` every path is
    relative to the repository root, here run from a folder below it."""
    import json

    from tests.plan.test_ci_reporters import valid_sarif

    team = hierarchy.folder(ORG, "Engineering")
    hierarchy.project(PROJECT, team)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # the work tree's root, as git marks it
    (repo / "teams").mkdir()
    root = tree(repo / "teams", topic_doc("orders", PROJECT),
                snapshot=f"ancestry:\n  projects/{PROJECT}: organizations/1\n")
    monkeypatch.chdir(repo / "teams")
    target = ("--emulator", local_server.address)
    github = run_cli("plan", "specs", *target, "--format", "github")
    assert github.exit_code == 0, github.stderr
    [line] = [x for x in github.stdout.splitlines() if "org-policy-stale" in x]
    assert line.startswith(
        "::warning file=teams/specs/org-policy.yaml,line=2,col=1,title=reconcile "
        "org-policy-stale::"
    ), line
    assert str(tmp_path) not in github.stdout.split("::")[1]
    sarif = run_cli("plan", "specs", *target, "--format", "sarif")
    results = valid_sarif(sarif.stdout)["runs"][0]["results"]
    uris = {r["ruleId"]: r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in results}
    assert uris["org-policy-stale"] == "teams/specs/org-policy.yaml"
    assert all(not u.startswith("/") for u in uris.values()), uris
    # The text and JSON keep the path as the finding has it (a terminal's is fine).
    text = run_cli("plan", "specs", *target)
    assert f"{root / 'org-policy.yaml'}:2:1: warning[org-policy-stale]" in text.stdout
    data = json.loads(run_cli("plan", "specs", *target, "--format", "json").stdout)
    assert any(d["file"] == str(root / "org-policy.yaml") for d in data["diagnostics"])


def test_a_snapshot_that_places_a_project_in_no_organization(
    run_cli: Any, local_server: Any, hierarchy: ResourceManager, tmp_path: Path,
) -> None:
    """`projects/P: none` is a place like any other: compared with Resource Manager's
    by a live plan, and, as an --org-policy target, a project known to obey no custom
    constraint (where a project left out is unknown)."""
    team = hierarchy.folder(ORG, "Engineering")
    hierarchy.project(PROJECT, team)
    root = tree(tmp_path, topic_doc("orders", PROJECT),
                snapshot=f"ancestry:\n  projects/{PROJECT}: none\n")
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    [line] = [x.strip() for x in result.stdout.splitlines() if "[org-policy-stale]" in x]
    assert line.startswith(f"{root / 'org-policy.yaml'}:2:1: warning[org-policy-stale]: "
                           f"the org-policy snapshot places projects/{PROJECT} outside any "
                           f"folder or organization; Resource Manager places it under {team} "
                           f"under {ORG}"), line
    # The snapshot as the target: its custom constraint is another organization's.
    target = tmp_path / "target.yaml"
    enforced = (
        f"name: {ORG}/customConstraints/custom.noTmp\n"
        "resourceTypes: [pubsub.googleapis.com/Topic]\nmethodTypes: [CREATE]\n"
        "condition: \"'tmp' in resource.labels\"\nactionType: DENY\n"
        f"---\nname: {ORG}/policies/custom.noTmp\nspec: {{rules: [{{enforce: true}}]}}\n"
    )
    target.write_text(enforced + f"---\nancestry:\n  projects/{PROJECT}: none\n")
    planned = run_cli("plan", str(root), "--org-policy", str(target), "--emulator",
                      local_server.address)
    assert planned.exit_code == 0, planned.stderr
    assert "org-custom-no-ancestry" not in planned.stdout + planned.stderr
    target.write_text(enforced)
    unknown = run_cli("plan", str(root), "--org-policy", str(target), "--emulator",
                      local_server.address)
    assert unknown.exit_code == 1
    assert "error[org-custom-no-ancestry]" in unknown.stderr
    assert f"`projects/{PROJECT}: none` for one in no organization" in unknown.stderr


def test_a_saved_plan_whose_project_moved_is_stale(
    run_cli: Any, local_server: Any, hierarchy: ResourceManager, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Moved to another folder with the same policies: where it sits is part of what
    the plan was made against."""
    monkeypatch.chdir(tmp_path)
    hierarchy.project(PROJECT, hierarchy.folder(ORG, "Engineering"))
    root = tree(tmp_path, topic_doc("orders", PROJECT))
    plan_file = tmp_path / "plan.json"
    made = run_cli("plan", str(root), "--emulator", local_server.address, "--out",
                   str(plan_file))
    assert made.exit_code == 0, made.stderr
    hierarchy.projects.move_project(
        name=f"projects/{PROJECT}", destination_parent=hierarchy.folder(ORG, "Platform")
    ).result()
    local_server.counters.reset()
    result = run_cli("apply", str(plan_file))
    assert result.exit_code == 4, result.stderr
    assert "the saved plan is stale; nothing was applied" in result.stderr
    assert (
        f"projects/{PROJECT}: effective org policy changed since the plan (the project's "
        "folders or organization changed)"
    ) in result.stderr
    assert calls(local_server) == NO_CALLS
