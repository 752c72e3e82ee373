"""`reconcile plan` / `reconcile show` end to end: the CLI against the local server,
seeded with topics created by the real PublisherClient. Each test checks what a user
sees (output lines, exit code) and, where it matters, what reached the server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.plan.model import FORMAT_VERSION
from tests.specs_support import location_policy, owner_doc, topic_doc

OWN = {"reconcile-managed": "true", "reconcile-owner": "default"}
TEAM_A = {"reconcile-managed": "true", "reconcile-owner": "team-a"}  # prune needs an owner


def plan(run_cli: Any, local_server: Any, root: Path, *extra: str) -> Any:
    return run_cli("plan", str(root), "--emulator", local_server.address, *extra)


def as_json(run_cli: Any, local_server: Any, root: Path, *extra: str) -> dict[str, Any]:
    result = plan(run_cli, local_server, root, "--format", "json", *extra)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def change(data: dict[str, Any], topic: str, project: str = "proj-a") -> dict[str, Any]:
    address = f"projects/{project}/topics/{topic}"
    (rc,) = [rc for rc in data["resource_changes"] if rc["address"] == address]
    return rc


# -- create / no-op --------------------------------------------------------------------


def test_creates_are_shown_and_detailed_exitcode_is_2(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    root = specs(
        topic_doc("orders", labels={"team": "pay"}, storage=(["us-east1", "us-central1"], True)),
        topic_doc("events", storage="inherit"),
    )
    policy = org_policy_file(["us-central1", "us-east1"])
    result = plan(run_cli, local_server, root, "--org-policy", str(policy), "--detailed-exitcode")
    assert result.exit_code == 2, result.stderr
    out = result.stdout
    assert '  + topic "projects/proj-a/topics/orders" {' in out
    assert '          + "reconcile-managed" = "true"' in out
    assert '          + "team"              = "pay"' in out
    assert '+ allowed_persistence_regions = ["us-central1", "us-east1"]' in out
    assert "computed by the service from the effective org policy" in out
    assert out.rstrip().endswith("Plan: 2 to create, 0 to update, 0 to delete.")
    assert "\x1b[" not in out  # piped: no colour
    # Without --detailed-exitcode a plan with changes still succeeds.
    assert plan(run_cli, local_server, root, "--org-policy", str(policy)).exit_code == 0


def test_matching_topic_is_no_op_whatever_the_region_order(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("orders", {**OWN, "team": "pay", "owner": "someone-else"},
         ["us-east1", "us-central1", "us-east1"], True)
    root = specs(
        topic_doc("orders", labels={"team": "pay"}, storage=(["us-central1", "us-east1"], True))
    )
    local_server.counters.reset()
    result = plan(run_cli, local_server, root, "--org-policy", str(org_policy_file()),
                  "--detailed-exitcode")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("No changes. The live topics match the specs.")
    counts = local_server.counters.snapshot()
    assert counts.get("ListTopics") == 1
    assert counts.get("GetTopic", 0) == 0
    assert counts.get("GetEffectivePolicy", 0) == 0  # --org-policy wins over the API


# -- updates -----------------------------------------------------------------------------


def test_region_update_is_a_set_change_with_a_narrowing_warning(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("orders", OWN, ["us-east1", "europe-west1"])
    root = specs(topic_doc("orders", storage=(["us-central1", "us-east1"], None)))
    policy = str(org_policy_file())
    result = plan(run_cli, local_server, root, "--org-policy", policy)
    out = result.stdout
    assert '  ~ topic "projects/proj-a/topics/orders" {' in out
    assert '              + "us-central1",' in out
    assert '              - "europe-west1",' in out
    assert "# unchanged: us-east1" in out
    assert "no longer allowed: europe-west1" in out
    assert "messages already stored elsewhere are not moved" in out
    assert "labels" not in out.split("topics/orders")[2].split("}")[0]
    rc = change(as_json(run_cli, local_server, root, "--org-policy", policy), "orders")
    assert rc["change"]["actions"] == ["update"]
    assert rc["update_mask"] == ["message_storage_policy"]
    assert rc["request"]["topic"] == {
        "name": "projects/proj-a/topics/orders",
        "message_storage_policy": {
            "allowed_persistence_regions": ["us-central1", "us-east1"],
            "enforce_in_transit": False,
        },
    }


def test_enforce_in_transit_change(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("orders", OWN, ["us-east1"], False)
    seed("quiet", OWN, ["us-east1"])  # absent == false
    root = specs(
        topic_doc("orders", storage=(["us-east1"], True)),
        topic_doc("quiet", storage=(["us-east1"], False)),
    )
    result = plan(run_cli, local_server, root, "--org-policy", str(org_policy_file()))
    assert "~ enforce_in_transit = false -> true" in result.stdout
    assert "topics/quiet" not in result.stdout
    assert "Plan: 0 to create, 1 to update, 0 to delete." in result.stdout


def test_labels_hedging_labels_and_adoption_keep_foreign_labels(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("orders", {"team": "old", "owner": "ops", "reconcile-stale": "x"})
    root = specs(topic_doc("orders", labels={"team": "pay"}, hedging="300ms"))
    policy = str(org_policy_file())
    out = plan(run_cli, local_server, root, "--org-policy", policy).stdout
    assert (
        "# projects/proj-a/topics/orders will be updated in-place (adopted: this tree's "
        "owner label is added)"
    ) in out
    assert '~ "team"                       = "old" -> "pay"' in out
    assert '+ "reconcile-hedge-delay-ms"   = "300"' in out
    assert '+ "reconcile-managed"          = "true"' in out
    assert '- "reconcile-stale"            = "x"' in out
    assert '"owner"' not in out  # foreign labels are neither shown nor touched
    rc = change(as_json(run_cli, local_server, root, "--org-policy", policy), "orders")
    assert rc["update_mask"] == ["labels"]
    assert rc["reasons"] == ["adopt"]
    request = rc["request"]
    assert request["update_mask"] == ["labels"] and request["marker_label"] == "reconcile-plan"
    merge = request["label_merge"]  # onto the labels read right before the call
    assert merge["set"]["team"] == "pay" and merge["remove"] == ["reconcile-stale"]
    assert "owner" not in merge["set"] and "owner" not in merge["remove"]  # kept as read
    assert merge["set"]["reconcile-hedge-max-tokens"] == "20"
    assert "labels" not in request["topic"]
    assert "# sends UpdateTopic (update mask: labels)" in out
    assert "#   labels: as read right before the call, with the changes above, and " \
        'reconcile-plan = "' in out


# -- inherit and drift -------------------------------------------------------------------


def test_inherit_topic_out_of_step_is_a_recompute_update(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("events", OWN, ["us-east1", "asia-east1"])
    seed("fine", OWN, ["us-central1", "us-east1"])
    root = specs(topic_doc("events", storage="inherit"), topic_doc("fine", storage="inherit"))
    policy = str(org_policy_file(["us-central1", "us-east1"]))
    result = plan(run_cli, local_server, root, "--org-policy", policy, "--detailed-exitcode")
    assert result.exit_code == 2
    out = result.stdout
    assert (
        "topics/events will be updated in-place (its storage policy is recomputed: it allows "
        "locations the org policy does not and misses some it allows)"
    ) in out
    assert "# recomputed from the effective org policy" in out
    assert "topics/fine" not in out
    rc = change(as_json(run_cli, local_server, root, "--org-policy", policy), "events")
    assert rc["update_mask"] == ["message_storage_policy"]
    assert rc["request"]["topic"] == {"name": "projects/proj-a/topics/events"}  # unset
    assert rc["change"]["after"]["message_storage_policy"]["allowed_persistence_regions"] == [
        "us-central1", "us-east1"
    ]


def test_unmanaged_drift_all_three_categories_are_warnings_not_changes(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("too-wide", OWN, ["us-central1", "us-east1", "asia-east1"])
    seed("too-narrow", OWN, ["us-east1"])
    seed("both", OWN, ["us-east1", "asia-east1"])
    seed("fine", OWN, ["us-east1", "us-central1"])
    root = specs(*(topic_doc(t) for t in ("too-wide", "too-narrow", "both", "fine")))
    policy = str(org_policy_file(["us-central1", "us-east1"]))
    result = plan(run_cli, local_server, root, "--org-policy", policy, "--detailed-exitcode")
    assert result.exit_code == 0, result.stderr  # drift never counts as a change
    out = result.stdout
    # One line per topic: where it is declared and the mismatch in words; then a sum.
    file = f"{root}/topics.yaml"
    drift = [line for line in out.splitlines() if line.startswith("  ! ")]
    assert drift == [
        f"  ! projects/proj-a/topics/both ({file}:11): the topic's allowed and disallowed "
        "locations are both stale: it allows asia-east1 which the org policy does not "
        "allow; it does not allow us-central1, which the org policy allows",
        f"  ! projects/proj-a/topics/too-narrow ({file}:6): the topic does not allow some "
        "locations the org policy allows: it does not allow us-central1, which the org "
        "policy allows",
        f"  ! projects/proj-a/topics/too-wide ({file}:1): the topic allows locations the org "
        "policy does not allow: it allows asia-east1 which the org policy does not allow",
    ], drift
    assert (
        "  3 topics drift from the org policy (1 allow locations the org policy does not, 1 "
        "miss locations the org policy allows, 1 both); drift is reported, never applied: "
        "for each topic set `messageStoragePolicy: inherit` in its spec, or run `gcloud "
        "pubsub topics update TOPIC --project PROJECT --recompute-message-storage-policy`."
    ) in out
    assert "topics/fine" not in out and "[allows-disallowed-locations]" not in out
    assert out.rstrip().endswith("No changes. The live topics match the specs.")
    data = as_json(run_cli, local_server, root, "--org-policy", policy)
    assert {d["address"].rsplit("/", 1)[1]: d["category"] for d in data["drift"]} == {
        "too-wide": "allows-disallowed-locations",
        "too-narrow": "misses-allowed-locations",
        "both": "allowed-and-disallowed-stale",
    }
    assert all(rc["change"]["actions"] == ["no-op"] for rc in data["resource_changes"])


def publishers_doc(name: str, policy: str, regions: str, ordering: str) -> str:
    return topic_doc(
        name, storage=policy, publishers=f"{{regions: [{regions}], messageOrdering: {ordering}}}"
    )


def test_publishers_are_checked_against_the_live_org_policy(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    """No snapshot at all: the org-policy rules for publishers come from the live
    effective policy, the same rules `validate` applies to a snapshot."""
    from reconciler.orgpolicy.model import Policy

    local_server.put_policy(
        Policy.from_dict(location_policy("projects/proj-a", ["in:us-locations"]))
    )
    rerouted = publishers_doc(
        name="rerouted", policy="{allowedPersistenceRegions: [us-central1]}",
        regions="us-east1", ordering="false",
    )
    root = specs(rerouted)
    data = as_json(run_cli, local_server, root)
    assert change(data, "rerouted")["change"]["actions"] == ["create"]
    (warning,) = data["diagnostics"]
    assert (warning["severity"], warning["code"]) == ("warning", "publisher-region-rerouted")
    # At the publishers' region, where validate places it (not the document's start).
    text = Path(warning["file"]).read_text().splitlines()
    assert warning["file"].endswith("topics.yaml") and "us-east1" in text[warning["line"] - 1]
    assert warning["line"] > 1

    ordered = publishers_doc(
        name="ordered", policy="inherit", regions="europe-west1", ordering="true"
    )
    local_server.counters.reset()
    # in:us-locations is an inferred group, but only of us-* regions: refusing
    # europe-west1 is certain, an error without --strict-groups.
    result = plan(run_cli, local_server, specs(rerouted, ordered))
    assert result.exit_code == 1
    assert (
        "error[publisher-ordering-region]: publishers of topic projects/proj-a/topics/ordered "
        "in 'europe-west1' use ordering "
    ) in result.stderr
    assert "membership not verified" not in result.stderr
    assert result.stdout == ""
    assert local_server.counters.get("CreateTopic") == 0


def test_live_org_policy_forbidding_a_region_is_an_error_before_any_call(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    from reconciler.orgpolicy.model import Policy

    local_server.put_policy(
        Policy.from_dict(location_policy("projects/proj-a", ["in:us-locations"]))
    )
    root = specs(topic_doc("orders", storage=(["europe-west1", "us-east1"], None)))
    local_server.counters.reset()
    result = plan(run_cli, local_server, root)  # certain: in:us-locations holds only us-*
    assert result.exit_code == 1
    assert "error[org-location-denied]" in result.stderr
    assert (
        "region 'europe-west1' is not allowed by the effective "
        "constraints/gcp.resourceLocations"
    ) in result.stderr
    assert "no plan made, nothing changed" in result.stderr
    assert result.stdout == ""
    counts = local_server.counters.snapshot()
    assert counts.get("GetEffectivePolicy", 0) == 5  # the five constraints, from the API
    assert counts.get("CreateTopic", 0) == 0 and counts.get("UpdateTopic", 0) == 0


# -- prune -------------------------------------------------------------------------------


def test_prune_deletes_only_labelled_undeclared_topics(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("kept", TEAM_A)
    seed("ours-gone", TEAM_A)
    seed("someone-elses", {"team": "x"})
    seed("another-trees", OWN)
    root = specs(topic_doc("kept"), owner_doc("team-a"))
    policy = str(org_policy_file())
    without = plan(run_cli, local_server, root, "--org-policy", policy)
    assert "No changes." in without.stdout
    result = plan(run_cli, local_server, root, "--org-policy", policy, "--prune")
    out = result.stdout
    assert '  - topic "projects/proj-a/topics/ours-gone" {' in out
    # Not deleted: named as a topic no spec declares, with the command that adopts it.
    assert '"projects/proj-a/topics/someone-elses"' not in out
    assert ("projects/proj-a: warning[undeclared-topics]: 1 live topic in project proj-a "
            "that no spec declares (not planned; `reconcile residency --all-live` reports "
            "where their messages are stored): someone-elses") in out
    assert ("`reconcile import --project proj-a --topic someone-elses --out imported`"
            in out)
    assert '- topic "projects/proj-a/topics/another-trees"' not in out  # another tree's
    assert "Plan: 0 to create, 0 to update, 1 to delete." in out


# -- formats, saved plans ----------------------------------------------------------------


def test_json_format_carries_the_contract_keys(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("orders", OWN, ["us-east1"])
    root = specs(topic_doc("orders", storage=(["us-east1"], None)), topic_doc("new"))
    data = as_json(run_cli, local_server, root, "--org-policy", str(org_policy_file()))
    assert data["format_version"] == FORMAT_VERSION
    assert data["digest"].startswith("sha256:") and len(data["digest"]) == 71
    assert {"resource_changes", "diagnostics", "drift", "fingerprints"} <= set(data)
    new = change(data, "new")
    assert new["change"]["actions"] == ["create"] and new["change"]["before"] is None
    assert new["request"]["method"] == "CreateTopic"
    assert change(data, "orders")["change"]["actions"] == ["no-op"]
    fp = data["fingerprints"]
    assert fp["topics"]["projects/proj-a/topics/new"] == "absent"
    assert len(fp["topics"]["projects/proj-a/topics/orders"]) == 64
    assert set(fp["org_policy"]) == {"proj-a"}


def test_markdown_format_is_a_pr_comment(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    root = specs(topic_doc("orders"))
    result = plan(run_cli, local_server, root, "--org-policy", str(org_policy_file()),
                  "--format", "markdown")
    out = result.stdout
    assert out.startswith("### reconcile plan\n")
    assert "**Plan: 1 to create, 0 to update, 0 to delete.**" in out
    assert "| ➕ create | `projects/proj-a/topics/orders` |" in out
    assert "<details><summary>Full plan</summary>" in out and "</details>" in out


def test_out_then_show_renders_the_saved_plan_in_every_format(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any, tmp_path: Path
) -> None:
    root = specs(topic_doc("orders"))
    planfile = tmp_path / "out" / "plan.json"
    policy = str(org_policy_file())
    made = plan(run_cli, local_server, root, "--org-policy", policy, "--out", str(planfile))
    assert made.exit_code == 0
    assert f"Saved the plan to {planfile}" in made.stderr
    saved = json.loads(planfile.read_text())
    assert saved["resource_changes"][0]["address"] == "projects/proj-a/topics/orders"
    shown = run_cli("show", str(planfile))
    assert shown.exit_code == 0
    assert shown.stdout.split("\n", 2)[2] == made.stdout.split("\n", 2)[2]
    assert json.loads(run_cli("show", str(planfile), "--format", "json").stdout) == saved
    assert "<details>" in run_cli("show", str(planfile), "--format", "markdown").stdout


def test_show_refuses_a_corrupt_or_foreign_plan_file(run_cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run_cli("show", str(bad))
    assert result.exit_code == 1
    assert f"Error: {bad}:1:2: not a plan file (invalid JSON" in result.stderr
    future = tmp_path / "future.json"
    future.write_text(json.dumps({"format_version": "9.0", "resource_changes": []}))
    result = run_cli("show", str(future))
    assert result.exit_code == 1
    assert "plan format_version 9.0 is not supported" in result.stderr
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"format_version": FORMAT_VERSION, "resource_changes": [{}]}))
    result = run_cli("show", str(broken))
    assert result.exit_code == 1 and "damaged or incomplete" in result.stderr
    older = tmp_path / "older.json"
    older.write_text(json.dumps({"format_version": "3.0", "resource_changes": [{}]}))
    result = run_cli("show", str(older))
    assert result.exit_code == 1
    assert "plan format_version 3.0 was made by an older reconcile: plan again" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_specs_make_no_plan(run_cli: Any, local_server: Any, specs: Any) -> None:
    root = specs(topic_doc("orders", storage=(["us-east1-b"], None)))
    local_server.counters.reset()
    result = plan(run_cli, local_server, root)
    assert result.exit_code == 1
    assert "error[region-zone]: 'us-east1-b' is a zone; use its region 'us-east1'" in (
        result.stderr
    )
    assert "no plan made" in result.stderr
    assert local_server.counters.total() == 0
