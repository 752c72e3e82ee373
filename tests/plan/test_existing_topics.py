"""Existing is not new (docs/validate.md, "Existing topics"): a team adopts topics made
before the org's constraints, through the real Pub/Sub and Org Policy clients.

The trial: key-less topics with in-transit enforcement off, one in a region the org
no longer allows, made with the stock client; then the CMEK, in-transit and location
constraints and a custom constraint with `methodTypes: [CREATE]`; `reconcile import`,
`policy pull`, `validate`, `plan`, `apply`. Plan proceeds, changes only reconcile's
ownership labels, and reports each existing violation once; a new topic that breaks
the same constraints, and a call that would carry a refused value, are refused before
any call.

`import` writes the live values as they are (`enforceInTransit: false` where the
topic has it off, the region the org no longer allows), each marked with the finding
the plan raises on it (issue 46), the custom constraint's included: the files are used
as written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.yamltext import dump_all

ORG = "organizations/4500"
PROJECT = "proj-trial"
KEY = f"projects/{PROJECT}/locations/europe-west1/keyRings/r/cryptoKeys/k"
IN_EU = ["europe-west1"]
TEAM = "custom.teamLabel"
# The trial's live topics: (name, regions, enforceInTransit, key).
LIVE = [
    ("clicks", IN_EU, False, None),
    ("orders", IN_EU, False, None),
    ("refunds", IN_EU, False, None),
    ("legacy-us", ["us-east1"], False, None),
    ("keyed", IN_EU, True, KEY),
]
OWNERSHIP = {"reconcile-managed", "reconcile-owner"}


def _address(name: str) -> str:
    return f"projects/{PROJECT}/topics/{name}"


@pytest.fixture
def trial(local_server: Any, publisher_client: Any, orgpolicy_client: Any) -> Any:
    """The topics, then the org's constraints, all through the real clients."""
    for name, regions, eit, key in LIVE:
        request: dict[str, Any] = {
            "name": _address(name),
            "message_storage_policy": {"allowed_persistence_regions": regions,
                                       "enforce_in_transit": eit},
        }
        if key:
            request["kms_key_name"] = key
        publisher_client.create_topic(request=request)
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    for constraint, spec in (
        ("gcp.restrictNonCmekServices",
         {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]}),
        ("pubsub.enforceInTransitRegions", {"rules": [{"enforce": True}]}),
        ("gcp.resourceLocations", {"rules": [{"values": {"allowed_values": ["in:eu-locations"]}}]}),
    ):
        orgpolicy_client.create_policy(
            parent=ORG, policy={"name": f"{ORG}/policies/{constraint}", "spec": spec}
        )
    orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
        "name": f"{ORG}/customConstraints/{TEAM}",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE"],
        "condition": "'team' in resource.labels",
        "action_type": "ALLOW",
        "description": "New topics name their team.",
    })
    orgpolicy_client.create_policy(parent=ORG, policy={
        "name": f"{ORG}/policies/{TEAM}", "spec": {"rules": [{"enforce": True}]},
    })
    return local_server


def _adopt(run_cli: Any, server: Any, tmp_path: Path) -> Path:
    """import and policy pull into specs/, the files as written."""
    specs = tmp_path / "specs"
    imported = run_cli("import", "--project", PROJECT, "--out", str(specs),
                       "--emulator", server.address)
    assert imported.exit_code == 0, imported.output
    pulled = run_cli("policy", "pull", "--project", PROJECT, "--organization", ORG,
                     "--out", str(specs / "org-policy.yaml"), "--emulator", server.address)
    assert pulled.exit_code == 0, pulled.output
    return specs


def test_import_writes_the_live_values_and_marks_each_finding_at_its_value(
    run_cli: Any, trial: Any, tmp_path: Path
) -> None:
    """enforceInTransit false and the region the org no longer allows are written as
    they are, each with the code of the warning the plan raises on it at its line; the
    comments change no value."""
    specs = _adopt(run_cli, trial, tmp_path)
    text = (specs / f"{PROJECT}.yaml").read_text()
    lines = text.splitlines()
    assert "    - us-east1  # plan warns: existing-location-denied" in lines, text
    off = [x for x in lines if x.strip().startswith("enforceInTransit: false")]
    assert len(off) == 4 and all(
        x.endswith("# plan warns: existing-in-transit-off") for x in off
    ), text
    # No topic names its team: each breaks the custom constraint that binds creation,
    # read by import from the organization Resource Manager places the project in.
    named = [x for x in lines if x.startswith("  name: ") and x != "  name: imported"]
    assert sorted(named) == sorted(
        f"  name: {n}  # plan warns: "
        + ("" if key else "existing-cmek-required, ") + "existing-custom-constraint"
        for n, _, _, key in LIVE
    ), text
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(text) if d["kind"] == "Topic"}
    for name, regions, eit, key in LIVE:
        policy = docs[name]["spec"]["messageStoragePolicy"]
        assert policy == {"allowedPersistenceRegions": regions, "enforceInTransit": eit}
        assert docs[name]["spec"].get("kmsKeyName") == key


def _codes_by_topic(diagnostics: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in diagnostics:
        out.setdefault(d["topic"] or "", []).append(d["code"])
    return out


def test_the_trial_plan_adopts_existing_topics_and_reports_each_violation_once(
    run_cli: Any, trial: Any, publisher_client: Any, tmp_path: Path
) -> None:
    specs = _adopt(run_cli, trial, tmp_path)
    # Offline, nothing says the topics exist: warnings that say plan decides, exit 0.
    validated = run_cli("validate", str(specs), "--require-org-policy", "--format", "json")
    assert validated.exit_code == 0, validated.output
    said = json.loads(validated.stdout)
    assert {d["code"] for d in said} >= {
        "org-cmek-required", "org-location-denied", "org-custom-constraint",
    }
    assert all(d["severity"] == "warning" for d in said), said

    trial.counters.reset()
    result = run_cli("plan", str(specs), "--emulator", trial.address, "--format", "json",
                     "--detailed-exitcode")
    assert result.exit_code == 2, result.output
    plan = json.loads(result.stdout)
    # Only reconcile's ownership labels change.
    changes = [rc for rc in plan["resource_changes"] if rc["change"]["actions"] != ["no-op"]]
    assert sorted(rc["address"] for rc in changes) == sorted(_address(n) for n, *_ in LIVE)
    for rc in changes:
        assert rc["change"]["actions"] == ["update"], rc
        assert rc["update_mask"] == ["labels"], rc
        assert set(rc["request"]["label_merge"]["set"]) == OWNERSHIP, rc
        assert not rc["request"]["label_merge"].get("remove"), rc
    # Each existing violation once, as the existing family; nothing validate left to
    # plan is said again, nothing is an error.
    diagnostics = plan["diagnostics"]
    assert not [d for d in diagnostics if d["severity"] == "error"], diagnostics
    by_topic = _codes_by_topic(diagnostics)
    keyless = ["existing-cmek-required"]
    off = ["existing-in-transit-off"]
    team = ["existing-custom-constraint"]
    expected = {
        _address("clicks"): keyless + off + team,
        _address("orders"): keyless + off + team,
        _address("refunds"): keyless + off + team,
        _address("legacy-us"): [*keyless, "existing-location-denied", *off, *team],
        _address("keyed"): team,
    }
    assert {t: sorted(c) for t, c in by_topic.items() if t} == {
        t: sorted(c) for t, c in expected.items()
    }, diagnostics
    for d in diagnostics:
        if d["topic"]:
            assert d["message"].startswith(f"topic {d['topic']} "), d
    (legacy,) = [d for d in diagnostics if d["code"] == "existing-location-denied"]
    assert "with region 'us-east1' in its storage policy" in legacy["message"]
    assert "the plan leaves the policy as it is" in legacy["message"]
    assert trial.counters.get("UpdateTopic") == trial.counters.get("CreateTopic") == 0

    # The same findings in text: one group per finding, each topic at its line, once.
    text = run_cli("plan", str(specs), "--emulator", trial.address)
    assert text.exit_code == 0, text.output
    out = text.stdout + text.stderr
    assert out.count("warning[existing-cmek-required]") == 1, out
    assert re.search(
        rf"projects/{PROJECT}: warning\[existing-cmek-required\]: each of these 4 topics exists "
        "without a customer-managed key", out,
    ), out
    for name, *_ in LIVE:
        assert out.count(f": {_address(name)}\n") == (
            len(expected[_address(name)]) if name != "legacy-us" else 3
        ), (name, out)  # a member line per group it is in (legacy-us: its own location)

    # Apply: the labels, and nothing the org would refuse of a new topic.
    applied = run_cli("apply", str(specs), "--emulator", trial.address, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    for name, regions, eit, key in LIVE:
        live = publisher_client.get_topic(topic=_address(name))
        assert set(live.labels) >= OWNERSHIP
        assert list(live.message_storage_policy.allowed_persistence_regions) == regions
        assert live.message_storage_policy.enforce_in_transit is eit
        assert live.kms_key_name == (key or "")
    again = run_cli("plan", str(specs), "--emulator", trial.address, "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    assert "No changes." in again.stdout


def test_a_new_topic_that_breaks_them_is_refused_before_any_call(
    run_cli: Any, trial: Any, tmp_path: Path
) -> None:
    specs = _adopt(run_cli, trial, tmp_path)
    (specs / "new.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        f"metadata: {{project: {PROJECT}, name: payouts}}\n"
        "spec:\n  messageStoragePolicy:\n    allowedPersistenceRegions: [us-east1]\n"
    )
    trial.counters.reset()
    result = run_cli("plan", str(specs), "--emulator", trial.address, "--format", "json")
    assert result.exit_code == 1, result.output
    plan = json.loads(result.stdout)
    errors = _codes_by_topic([d for d in plan["diagnostics"] if d["severity"] == "error"])
    assert errors == {_address("payouts"): ["org-location-denied", "org-cmek-required"]}, (
        plan["diagnostics"]
    )
    assert trial.counters.get("CreateTopic") == trial.counters.get("UpdateTopic") == 0


def test_a_change_that_carries_a_refused_region_is_refused_before_the_call(
    run_cli: Any, trial: Any, tmp_path: Path
) -> None:
    """legacy-us keeps us-east1 while the spec adds a region: the UpdateTopic would
    carry the storage policy, which the location constraint refuses; a labels-only
    change of the same topic is not refused (the test above)."""
    specs = _adopt(run_cli, trial, tmp_path)
    path = specs / f"{PROJECT}.yaml"
    text = path.read_text()
    kept = "- us-east1  # plan warns: existing-location-denied\n"
    assert kept in text
    path.write_text(text.replace(kept, kept + "    - europe-west1\n"))
    result = run_cli("plan", str(specs), "--emulator", trial.address, "--format", "json")
    assert result.exit_code == 1, result.output
    errors = [d for d in json.loads(result.stdout)["diagnostics"] if d["severity"] == "error"]
    assert [(d["code"], d["topic"]) for d in errors] == [
        ("org-location-denied", _address("legacy-us")),
    ], errors
    assert (
        "the plan's UpdateTopic of topic projects/proj-trial/topics/legacy-us sets its "
        "storage policy (regions europe-west1, us-east1) while it keeps the region"
    ) in errors[0]["message"]


def test_in_transit_off_is_kept_unless_the_spec_asks_for_true(
    run_cli: Any, trial: Any, publisher_client: Any, tmp_path: Path
) -> None:
    """An explicit `enforceInTransit: false` on a topic that has it off: kept (and
    reported); `true` turns it on, with the storage policy in the call."""
    specs = _adopt(run_cli, trial, tmp_path)
    applied = run_cli("apply", str(specs), "--emulator", trial.address, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    path = specs / f"{PROJECT}.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc.get("kind") == "Topic" and doc["metadata"]["name"] == "orders":
            doc["spec"]["messageStoragePolicy"] = {
                "allowedPersistenceRegions": IN_EU, "enforceInTransit": True,
            }
    path.write_text(dump_all(docs))
    result = run_cli("plan", str(specs), "--emulator", trial.address, "--format", "json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    changed = [rc for rc in plan["resource_changes"] if rc["change"]["actions"] != ["no-op"]]
    assert [(rc["address"], rc["update_mask"]) for rc in changed] == [
        (_address("orders"), ["message_storage_policy"]),
    ]
    after = changed[0]["change"]["after"]["message_storage_policy"]
    assert after == {"allowed_persistence_regions": IN_EU, "enforce_in_transit": True}
    codes = _codes_by_topic(plan["diagnostics"])
    assert "existing-in-transit-off" not in codes[_address("orders")]
    assert "existing-in-transit-off" in codes[_address("refunds")]
    applied = run_cli("apply", str(specs), "--emulator", trial.address, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    live = publisher_client.get_topic(topic=_address("orders"))
    assert live.message_storage_policy.enforce_in_transit is True
    assert publisher_client.get_topic(
        topic=_address("refunds")
    ).message_storage_policy.enforce_in_transit is False


def test_a_spec_that_omits_in_transit_asks_for_the_orgs_value(
    run_cli: Any, trial: Any, tmp_path: Path
) -> None:
    """Omitted, enforceInTransit is what the org policy decides (true): the plan turns
    it on, with an UpdateTopic that carries the storage policy; for a topic that keeps
    a region the org no longer allows, that call is refused, and the error says why
    the policy is in it."""
    specs = _adopt(run_cli, trial, tmp_path)
    path = specs / f"{PROJECT}.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        policy = (doc.get("spec") or {}).get("messageStoragePolicy")
        if isinstance(policy, dict) and policy["allowedPersistenceRegions"] == ["us-east1"]:
            del policy["enforceInTransit"]
    path.write_text(dump_all(docs))
    result = run_cli("plan", str(specs), "--emulator", trial.address)
    assert result.exit_code == 1, result.output
    (error,) = [x for x in result.stderr.splitlines() if "error[" in x]
    assert "error[org-location-denied]: region 'us-east1' is not allowed" in error
    assert (
        "the plan's UpdateTopic of topic projects/proj-trial/topics/legacy-us sets its "
        "storage policy (enforceInTransit off -> on) while it keeps the region"
    ) in error
    assert "declare it as it is (its regions, and enforceInTransit: false" in error
