"""`apply` reads the org's constraints live, as `plan` does: without a plan file it
plans against the live custom and CMEK constraints (through the guarded backend it
then applies with) and refuses before any mutating call; with a plan file it reads
them again, for the organization Resource Manager places the project in, and a
change to any of them
since the plan (a custom constraint added, its enforcement changed, a CMEK policy
set) refuses the plan as stale, naming the project, before any mutating call. All
through the real Pub/Sub and Org Policy clients against the local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from apply_support import mutating_calls
from google.api_core import exceptions

from tests.specs_support import EU_ONLY, custom_constraint, custom_refusal, topic_doc

ORG = "organizations/777"
PROJECT = "proj-a"
NONE_MUTATED = {"CreateTopic": 0, "UpdateTopic": 0, "DeleteTopic": 0}


@pytest.fixture
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """specs/ with the given topics and a snapshot holding only the project's
    organization (its ancestry): no custom or CMEK constraint."""
    monkeypatch.chdir(tmp_path)

    def make(*docs: str) -> Path:
        root = tmp_path / "specs"
        root.mkdir(exist_ok=True)
        (root / "topics.yaml").write_text("---\n".join(docs))
        (root / "org-policy.yaml").write_text(f"ancestry:\n  projects/{PROJECT}: {ORG}\n")
        return root

    return make


def add_constraint(local_server: Any, orgpolicy_client: Any, name: str, condition: str) -> None:
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=custom_constraint(ORG, name, condition)
    )


def set_policy(orgpolicy_client: Any, constraint: str, spec: dict[str, Any]) -> None:
    """Create or replace the project's policy, through the real Org Policy client."""
    name = f"projects/{PROJECT}/policies/{constraint}"
    try:
        orgpolicy_client.create_policy(
            parent=f"projects/{PROJECT}", policy={"name": name, "spec": spec}
        )
    except exceptions.AlreadyExists:
        orgpolicy_client.update_policy(policy={"name": name, "spec": spec})


ENFORCED = {"rules": [{"enforce": True}]}
CMEK_REQUIRED = {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]}


def apply_specs(run_cli: Any, local_server: Any, root: Path) -> Any:
    return run_cli("apply", str(root), "--emulator", local_server.address, "--auto-approve")


def test_apply_without_a_plan_file_refuses_what_a_live_custom_constraint_refuses(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, specs: Any
) -> None:
    add_constraint(local_server, orgpolicy_client, "custom.euOnly", EU_ONLY)
    set_policy(orgpolicy_client, "custom.euOnly", ENFORCED)
    root = specs(topic_doc("orders", storage=(["us-east1"], None)))
    local_server.counters.reset()
    result = apply_specs(run_cli, local_server, root)
    assert result.exit_code == 1, result.stderr
    assert "error[org-custom-constraint]" in result.stderr
    assert custom_refusal(f"projects/{PROJECT}/topics/orders", "custom.euOnly") in result.stderr
    assert "nothing was applied" in result.stderr
    assert mutating_calls(local_server) == NONE_MUTATED
    assert local_server.counters.get("ListCustomConstraints") == 1


def test_apply_without_a_plan_file_refuses_a_topic_without_the_key_cmek_requires(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, specs: Any
) -> None:
    set_policy(orgpolicy_client, "gcp.restrictNonCmekServices", CMEK_REQUIRED)
    root = specs(topic_doc("orders", storage=(["europe-west1"], None)))
    local_server.counters.reset()
    result = apply_specs(run_cli, local_server, root)
    assert result.exit_code == 1, result.stderr
    assert f"{root / 'topics.yaml'}:3:35: error[org-cmek-required]" in result.stderr  # the name
    assert "nothing was applied" in result.stderr
    assert mutating_calls(local_server) == NONE_MUTATED


def saved_plan(run_cli: Any, local_server: Any, root: Path, out: Path) -> dict[str, Any]:
    result = run_cli("plan", str(root), "--emulator", local_server.address, "--out", str(out))
    assert result.exit_code == 0, result.stderr
    saved: dict[str, Any] = json.loads(out.read_text())
    return saved


def test_a_plan_whose_constraints_hold_is_applied(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any,
    specs: Any, tmp_path: Path,
) -> None:
    """The custom constraints are read again for the project's organization:
    unchanged, the plan applies."""
    add_constraint(local_server, orgpolicy_client, "custom.euOnly", EU_ONLY)
    set_policy(orgpolicy_client, "custom.euOnly", ENFORCED)
    root = specs(topic_doc("orders", storage=(["europe-west1"], None)))
    saved = saved_plan(run_cli, local_server, root, tmp_path / "plan.json")
    assert saved["fingerprints"]["organizations"] == {PROJECT: ORG}
    local_server.counters.reset()
    result = run_cli("apply", str(tmp_path / "plan.json"))
    assert result.exit_code == 0, result.stderr
    assert local_server.counters.get("ListCustomConstraints") == 1
    assert publisher_client.get_topic(topic=f"projects/{PROJECT}/topics/orders")


@pytest.mark.parametrize("change", ["custom constraint added", "enforcement to dry run",
                                    "CMEK required", "key projects restricted"])
def test_a_constraint_changed_since_the_plan_makes_it_stale(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, specs: Any, tmp_path: Path,
    change: str,
) -> None:
    add_constraint(local_server, orgpolicy_client, "custom.euOnly", EU_ONLY)
    set_policy(orgpolicy_client, "custom.euOnly", ENFORCED)
    root = specs(topic_doc("orders", storage=(["europe-west1"], None)))
    plan_file = tmp_path / "plan.json"
    saved_plan(run_cli, local_server, root, plan_file)
    if change == "custom constraint added":
        add_constraint(local_server, orgpolicy_client, "custom.labelled", "has(resource.labels)")
        set_policy(orgpolicy_client, "custom.labelled", ENFORCED)
    elif change == "enforcement to dry run":
        orgpolicy_client.update_policy(policy={
            "name": f"projects/{PROJECT}/policies/custom.euOnly",
            "spec": {"rules": [{"enforce": False}]}, "dry_run_spec": ENFORCED,
        })
    elif change == "CMEK required":
        set_policy(orgpolicy_client, "gcp.restrictNonCmekServices", CMEK_REQUIRED)
    else:
        set_policy(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects",
                   {"rules": [{"values": {"allowed_values": ["projects/keys-ok"]}}]})
    local_server.counters.reset()
    result = run_cli("apply", str(plan_file))
    assert result.exit_code == 4, result.stderr
    assert "the saved plan is stale; nothing was applied" in result.stderr
    # Issue 46: the input that changed is named, alone.
    named = {
        "custom constraint added": "the custom constraints on topics or their enforcement",
        "enforcement to dry run": "the custom constraints on topics or their enforcement",
        "CMEK required": "constraints/gcp.restrictNonCmekServices",
        "key projects restricted": "constraints/gcp.restrictCmekCryptoKeyProjects",
    }[change]
    assert (
        f"projects/{PROJECT}: effective org policy changed since the plan ({named} changed)"
    ) in result.stderr
    assert mutating_calls(local_server) == NONE_MUTATED


def test_a_cmek_policy_that_asks_nothing_of_topics_leaves_the_plan_fresh(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, specs: Any, tmp_path: Path,
) -> None:
    """The fingerprint covers what a constraint means for topics: another service
    added to restrictNonCmekServices changes nothing for this plan."""
    root = specs(topic_doc("orders", storage=(["europe-west1"], None)))
    plan_file = tmp_path / "plan.json"
    saved_plan(run_cli, local_server, root, plan_file)
    set_policy(orgpolicy_client, "gcp.restrictNonCmekServices",
               {"rules": [{"values": {"denied_values": ["bigquery.googleapis.com"]}}]})
    result = run_cli("apply", str(plan_file))
    assert result.exit_code == 0, result.stderr
