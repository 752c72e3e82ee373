"""Accepted findings in `reconcile plan`, against the local server through the real
Pub/Sub and Org Policy clients: key-less topics made before the org required CMEK.
A plan accepts what the tree accepts (listed and counted in text, json, markdown; no
annotation in github; a SARIF suppression), reports an acceptance no finding needs,
and never hides a refusal of a call it would send (a new topic without a key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.plan.test_ci_reporters import valid_sarif
from tests.specs_support import cmek_snapshot

ORG = "organizations/4600"
PROJECT = "proj-accept"


def _topic(name: str, comment: str = "") -> str:
    line = f"  # reconcile: {comment}\n" if comment else ""
    return (
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        f"metadata:\n  project: {PROJECT}\n  name: {name}\n{line}"
        "spec:\n  labels: {team: pay}\n"
    )


OWNER = f"""\
apiVersion: reconcile.pubsub/v1
kind: Owner
metadata: {{name: team-pay}}
spec:
  acceptedFindings:
    - code: org-cmek-required
      topics: [projects/{PROJECT}/topics/batch-*]
      reason: "SEC-7: batch topics keep Google-managed keys until the rotation"
      until: 2999-12-31
"""
INLINE = 'accept existing-cmek-required reason="keys rotate in Q3" until=2999-03-31'


@pytest.fixture
def keyless(local_server: Any, publisher_client: Any, orgpolicy_client: Any) -> Any:
    """Three key-less topics, then the CMEK constraint on their project."""
    for name in ("legacy", "batch-a", "orders"):
        publisher_client.create_topic(request={"name": f"projects/{PROJECT}/topics/{name}"})
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_policy(parent=ORG, policy={
        "name": f"{ORG}/policies/gcp.restrictNonCmekServices",
        "spec": {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]},
    })
    return local_server


def _specs(tmp_path: Path, *docs: str) -> Path:
    root = tmp_path / "specs"
    root.mkdir(exist_ok=True)
    (root / "topics.yaml").write_text("---\n".join(docs))
    return root


def _plan(run_cli: Any, server: Any, root: Path, *extra: str) -> Any:
    return run_cli("plan", str(root), "--emulator", server.address, *extra)


def test_the_plan_lists_accepted_findings_apart_in_every_format(
    run_cli: Any, keyless: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    root = _specs(tmp_path, OWNER, _topic("legacy", INLINE), _topic("batch-a"), _topic("orders"))
    data = json.loads(_plan(run_cli, keyless, Path("specs"), "--format", "json").stdout)
    assert [(d["code"], d["topic"]) for d in data["diagnostics"]] == [
        ("existing-cmek-required", f"projects/{PROJECT}/topics/orders")
    ]
    accepted = {d["topic"]: d for d in data["accepted"]}
    assert sorted(accepted) == [
        f"projects/{PROJECT}/topics/batch-a", f"projects/{PROJECT}/topics/legacy",
    ]
    legacy = accepted[f"projects/{PROJECT}/topics/legacy"]
    assert legacy["code"] == "existing-cmek-required" and legacy["severity"] == "warning"
    assert legacy["acceptance"]["kind"] == "inSource"
    assert legacy["acceptance"]["reason"] == "keys rotate in Q3"
    assert (legacy["acceptance"]["file"], legacy["acceptance"]["line"]) == (
        "specs/topics.yaml", 16,
    )
    batch = accepted[f"projects/{PROJECT}/topics/batch-a"]["acceptance"]
    assert (batch["kind"], batch["code"], batch["line"]) == ("external", "org-cmek-required", 6)

    text = _plan(run_cli, keyless, Path("specs"))
    assert text.exit_code == 0, text.output
    warnings = text.stdout.split("Warnings:\n")[1].split("\n\n")[0]
    assert "topics/orders" in warnings and "legacy" not in warnings
    assert "batch-a" not in warnings
    listed = text.stdout.split(
        "Accepted (listed, not problems: the spec tree accepts them):\n"
    )[1].split("\n\n")[0].splitlines()
    assert len(listed) == 3
    assert listed[0].startswith(
        f"  projects/{PROJECT}: accepted[existing-cmek-required]: each of these 2 topics "
        "exists without a customer-managed key"
    )
    assert listed[1:] == [
        f"    specs/topics.yaml:24:9: projects/{PROJECT}/topics/batch-a (accepted at "
        "specs/topics.yaml:6: SEC-7: batch topics keep Google-managed keys until the "
        "rotation (until 2999-12-31))",
        f"    specs/topics.yaml:15:9: projects/{PROJECT}/topics/legacy (accepted at "
        "specs/topics.yaml:16: keys rotate in Q3 (until 2999-03-31))",
    ]

    github = _plan(run_cli, keyless, Path("specs"), "--format", "github")
    assert github.exit_code == 0
    annotated = [x for x in github.stdout.splitlines() if "cmek" in x]
    assert len(annotated) == 1 and "topics/orders" in annotated[0], github.stdout

    sarif = valid_sarif(_plan(run_cli, keyless, Path("specs"), "--format", "sarif").stdout)
    results = [r for r in sarif["runs"][0]["results"] if "cmek" in r["ruleId"]]
    suppressions = sorted(
        (s["kind"], s["justification"]) for r in results for s in r.get("suppressions", [])
    )
    assert len(results) == 3
    assert suppressions == [
        ("external", "SEC-7: batch topics keep Google-managed keys until the rotation "
         "(until 2999-12-31)"),
        ("inSource", "keys rotate in Q3 (until 2999-03-31)"),
    ]

    markdown = _plan(run_cli, keyless, Path("specs"), "--format", "markdown").stdout
    assert "<details><summary>Accepted (2): listed, not problems</summary>" in markdown
    assert "**Warnings (1)**" in markdown
    assert root.exists()


def test_an_acceptance_never_hides_a_refusal_and_an_unneeded_one_is_said(
    run_cli: Any, keyless: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, OWNER, _topic("batch-new"), _topic("legacy", INLINE))
    keyless.counters.reset()
    refused = _plan(run_cli, keyless, Path("specs"), "--format", "json")
    assert refused.exit_code == 1
    (error,) = [d for d in json.loads(refused.stdout)["diagnostics"] if d["severity"] == "error"]
    assert error["code"] == "org-cmek-required"
    assert error["topic"] == f"projects/{PROJECT}/topics/batch-new"
    assert error["message"].endswith(
        "[not accepted: the acceptance at specs/topics.yaml:6 does not apply to an error, "
        "a call this plan would send that the service refuses (or a spec reconcile cannot "
        "act on); fix the value]"
    )
    assert keyless.counters.get("CreateTopic") == 0

    # Without the new topic, the Owner document's entry covers nothing: said at its line.
    _specs(tmp_path, OWNER, _topic("legacy", INLINE))
    result = _plan(run_cli, keyless, Path("specs"), "--format", "github")
    assert result.exit_code == 0, result.output
    assert [x for x in result.stdout.splitlines() if "acceptance" in x] == [
        "::warning file=specs/topics.yaml,line=6,col=7,title=reconcile acceptance-unused::"
        f"the acceptance of org-cmek-required for projects/{PROJECT}/topics/batch-* accepts "
        "no finding: there is none to accept (remove it if what it was written for is "
        "fixed, or correct its code or topics)"
    ]
    assert "existing-cmek-required" not in result.stdout  # legacy's, accepted


def test_a_saved_plan_keeps_its_accepted_findings_for_show_and_apply(
    run_cli: Any, keyless: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, _topic("legacy", INLINE))
    saved = _plan(run_cli, keyless, Path("specs"), "--out", "plan.json")
    assert saved.exit_code == 0, saved.output
    shown = run_cli("show", "plan.json")
    assert shown.exit_code == 0, shown.output
    assert "Accepted (listed, not problems: the spec tree accepts them):" in shown.stdout
    assert "(accepted at specs/topics.yaml:6: keys rotate in Q3" in shown.stdout
    applied = run_cli("apply", "plan.json", "--auto-approve")
    assert applied.exit_code == 0, applied.output
    topic = keyless.counters.get("UpdateTopic")
    assert topic == 1  # the ownership labels: the accepted finding stops nothing


SNAPSHOT = cmek_snapshot(PROJECT, ORG)


def test_a_plan_refused_by_validation_still_lists_what_the_tree_accepts(
    run_cli: Any, local_server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    root = _specs(tmp_path, _topic("legacy", INLINE), _topic("goog-bad"))
    (root / "org-policy.yaml").write_text(SNAPSHOT)
    refused = _plan(run_cli, local_server, Path("specs"), "--format", "json")
    assert refused.exit_code == 1
    document = json.loads(refused.stdout)
    assert [d["code"] for d in document["diagnostics"]] == ["org-cmek-required", "topic-id"]
    assert [(d["code"], d["topic"]) for d in document["accepted"]] == [
        ("org-cmek-required", f"projects/{PROJECT}/topics/legacy")
    ]
    assert "1 file checked: 1 error, 1 warning, 1 accepted; no plan made" in refused.stderr
    text = _plan(run_cli, local_server, Path("specs"))
    assert text.exit_code == 1
    assert (
        "specs/topics.yaml:5:9: accepted[org-cmek-required]: " in text.stderr
    ), text.stderr


def test_drift_a_team_accepts_is_listed_not_reported(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("too-wide", {"reconcile-managed": "true", "reconcile-owner": "default"},
         ["us-central1", "us-east1", "asia-east1"])
    seed("also-wide", {"reconcile-managed": "true", "reconcile-owner": "default"},
         ["us-central1", "asia-east1"])
    accept = (
        '  # reconcile: accept drift-allows-disallowed-locations reason="asia replicas '
        'until the APAC exit, OPS-77"\n'
    )
    root = specs(
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\nmetadata:\n  project: proj-a\n"
        f"  name: too-wide\n{accept}",
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        "metadata: {project: proj-a, name: also-wide}\n",
    )
    policy = str(org_policy_file(["us-central1", "us-east1"]))
    data = json.loads(_plan(run_cli, local_server, root, "--org-policy", policy,
                            "--format", "json").stdout)
    assert [d["address"] for d in data["drift"]] == ["projects/proj-a/topics/also-wide"]
    (accepted,) = data["accepted"]
    assert accepted["code"] == "drift-allows-disallowed-locations"
    assert accepted["topic"] == "projects/proj-a/topics/too-wide"
    assert accepted["acceptance"]["reason"] == "asia replicas until the APAC exit, OPS-77"
    github = _plan(run_cli, local_server, root, "--org-policy", policy, "--format", "github")
    drift = [x for x in github.stdout.splitlines() if "drift-" in x]
    assert len(drift) == 1 and "also-wide" in drift[0], github.stdout
    text = _plan(run_cli, local_server, root, "--org-policy", policy)
    assert text.exit_code == 0, text.output
    assert "1 topic drifts from the org policy" in text.stdout
    assert (
        f"  {root}/topics.yaml:1:1: accepted[drift-allows-disallowed-locations]: "
        "projects/proj-a/topics/too-wide: "
    ) in text.stdout
    # validate never reports drift: the acceptance is not called unused there
    validated = run_cli("validate", str(root), "--org-policy", policy)
    assert "acceptance-unused" not in validated.output, validated.output
