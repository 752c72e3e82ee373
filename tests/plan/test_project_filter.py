"""`--project P` on plan and apply, through the CLI against the local server: only
P's declared topics are planned and applied, only P is read (ListTopics and the org
policy, counted per project by the server), --prune deletes only in P, the plan
records the filter (in its digest) and `apply PLANFILE --project` must match it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.ownership import PLAN_LABEL
from tests.specs_support import owner_doc, topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
TEAM_A = {"reconcile-managed": "true", "reconcile-owner": "team-a"}  # prune needs an owner
TWO = (
    topic_doc("orders", project="proj-a", labels={"team": "pay"}),
    topic_doc("events", project="proj-b", labels={"team": "data"}),
)


def live(client: Any, project: str) -> dict[str, dict[str, str]]:
    """The live topics of `project` by short name, with their labels."""
    return {
        t.name.rsplit("/", 1)[1]: dict(t.labels)
        for t in client.list_topics(request={"project": f"projects/{project}"})
    }


def test_plan_reads_and_plans_only_the_named_project(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path
) -> None:
    root = specs(*TWO)
    out = tmp_path / "plan.json"
    result = run_cli(
        "plan", str(root), "--emulator", local_server.address, "--project", "proj-a",
        "--out", str(out), "--detailed-exitcode",
    )
    assert result.exit_code == 2, result.stderr
    assert '+ topic "projects/proj-a/topics/orders"' in result.stdout
    assert "proj-b" not in result.stdout.replace("Projects: proj-a only", "")
    assert "Projects: proj-a only (--project)" in result.stdout
    assert "Plan: 1 to create, 0 to update, 0 to delete." in result.stdout
    counters = local_server.counters
    assert counters.projects("ListTopics") == {"proj-a"}
    assert counters.for_project("ListTopics", "proj-a") == 1
    assert counters.projects("GetEffectivePolicy") == {"proj-a"}
    data = json.loads(out.read_text())
    assert data["projects"] == ["proj-a"]
    assert [rc["address"] for rc in data["resource_changes"]] == ["projects/proj-a/topics/orders"]
    assert set(data["fingerprints"]["org_policy"]) == {"proj-a"}
    # Without --project both projects are read and the key is left out of the plan.
    local_server.counters.reset()
    every = run_cli("plan", str(root), "--emulator", local_server.address, "--format", "json")
    assert every.exit_code == 0, every.stderr
    assert "projects" not in json.loads(every.stdout)
    assert counters.projects("ListTopics") == {"proj-a", "proj-b"}


def test_the_filter_is_part_of_the_digest(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path
) -> None:
    root = specs(*TWO)
    made = run_cli(
        "plan", str(root), "--emulator", local_server.address, "--project", "proj-a",
        "--project", "proj-b", "--out", str(tmp_path / "plan.json"),
    )
    assert made.exit_code == 0, made.stderr
    path = tmp_path / "plan.json"
    data = json.loads(path.read_text())
    assert data["projects"] == ["proj-a", "proj-b"]
    data["projects"] = ["proj-a"]  # an edit that would narrow what apply does
    path.write_text(json.dumps(data))
    run = run_cli("apply", str(path))
    assert run.exit_code == 4
    assert "the plan's content does not match its digest" in run.stderr


def test_a_project_no_spec_declares_is_refused_with_a_suggestion(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    root = specs(*TWO)
    local_server.counters.reset()
    for extra in ((), ("--prune",)):
        result = run_cli(
            "plan", str(root), "--emulator", local_server.address, "--project", "porj-a", *extra
        )
        assert result.exit_code == 1
        assert (
            "Error: --project porj-a: no spec declares a topic in this project; "
            "did you mean 'proj-a'?" in result.stderr
        )
        assert "(the specs declare: proj-a, proj-b)" in result.stderr
        assert "Traceback" not in result.stderr
    assert "--prune deletes only in projects the specs declare" in result.stderr
    applied = run_cli(
        "apply", str(root), "--emulator", local_server.address, "--project", "nowhere-1",
        "--auto-approve",
    )
    assert applied.exit_code == 1
    assert "--project nowhere-1: no spec declares a topic in this project" in applied.stderr
    assert "did you mean" not in applied.stderr
    assert local_server.counters.total() == 0  # refused before any call


def test_prune_only_touches_the_named_project(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, tmp_path: Path,
    publisher_client: Any,
) -> None:
    seed("old-a", TEAM_A, project="proj-a")
    seed("old-b", TEAM_A, project="proj-b")
    seed("orders", TEAM_A, project="proj-a")
    root = specs(*TWO, owner_doc("team-a"))
    out = tmp_path / "plan.json"
    made = run_cli(
        "plan", str(root), "--emulator", local_server.address, "--project", "proj-a",
        "--prune", "--out", str(out),
    )
    assert made.exit_code == 0, made.stderr
    assert '- topic "projects/proj-a/topics/old-a"' in made.stdout
    assert "old-b" not in made.stdout
    applied = run_cli("apply", str(out))
    assert applied.exit_code == 0, applied.stderr
    assert set(live(publisher_client, "proj-a")) == {"orders"}
    assert set(live(publisher_client, "proj-b")) == {"old-b"}  # untouched, not created


def test_apply_planfile_with_another_project_filter_is_refused(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path, publisher_client: Any
) -> None:
    root = specs(*TWO)
    out = tmp_path / "plan.json"
    made = run_cli(
        "plan", str(root), "--emulator", local_server.address, "--project", "proj-a",
        "--out", str(out),
    )
    assert made.exit_code == 0, made.stderr
    local_server.counters.reset()
    other = run_cli("apply", str(out), "--project", "proj-b")
    assert other.exit_code == 4
    assert (
        f"{out} was made for the projects proj-a (--project), but this apply names "
        "--project proj-b; nothing was applied" in other.stderr
    )
    wider = run_cli("apply", str(out), "--project", "proj-a", "--project", "proj-b")
    assert wider.exit_code == 4
    assert "this apply names --project proj-a, proj-b" in wider.stderr
    assert local_server.counters.total() == 0
    same = run_cli("apply", str(out), "--project", "proj-a")
    assert same.exit_code == 0, same.stderr
    assert local_server.counters.projects("ListTopics") == {"proj-a"}
    assert set(live(publisher_client, "proj-a")) == {"orders"}
    assert live(publisher_client, "proj-b") == {}


def test_apply_planfile_without_a_filter_refuses_a_project_flag(
    run_cli: Any, local_server: Any, specs: Any, tmp_path: Path
) -> None:
    root = specs(*TWO)
    out = tmp_path / "plan.json"
    assert run_cli(
        "plan", str(root), "--emulator", local_server.address, "--out", str(out)
    ).exit_code == 0
    run = run_cli("apply", str(out), "--project", "proj-a")
    assert run.exit_code == 4
    assert "was made for every declared project (no --project)" in run.stderr


def test_apply_specs_with_a_project_applies_only_that_project(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any
) -> None:
    root = specs(*TWO)
    run = run_cli(
        "apply", str(root), "--emulator", local_server.address, "--project", "proj-b",
        "--auto-approve",
    )
    assert run.exit_code == 0, run.stderr
    assert local_server.counters.projects("ListTopics") == {"proj-b"}
    assert local_server.counters.projects("CreateTopic") == {"proj-b"}
    labels = live(publisher_client, "proj-b")["events"]
    assert labels.pop(PLAN_LABEL)  # the marker of the plan apply made and applied
    assert labels == {"team": "data", "reconcile-managed": "true", "reconcile-owner": "default"}
    assert live(publisher_client, "proj-a") == {}


def test_narrowing_keeps_the_trees_owner_in_plan_and_apply(
    run_cli: Any, local_server: Any, specs: Any, publisher_client: Any
) -> None:
    """A tree with an Owner document, converged: `--project` plans nothing, under its
    owner, and `apply --project` (specs or its saved plan) is no takeover."""
    from tests.specs_support import owner_doc

    root = specs(*TWO, owner_doc("team-payments"))
    target = ("--emulator", local_server.address)
    assert run_cli("apply", str(root), *target, "--auto-approve").exit_code == 0
    narrowed = run_cli("plan", str(root), *target, "--project", "proj-a",
                       "--detailed-exitcode")
    assert narrowed.exit_code == 0, narrowed.stdout + narrowed.stderr
    assert "Owner: team-payments\n" in narrowed.stdout
    assert "No changes. The live topics match the specs." in narrowed.stdout
    applied = run_cli("apply", str(root), *target, "--project", "proj-b", "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    assert live(publisher_client, "proj-b")["events"]["reconcile-owner"] == "team-payments"
