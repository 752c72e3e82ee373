"""Other tools' topics (issue 46 item 3): a topic Terraform's Google provider or Config
Connector labels as its own (`goog-terraform-provisioned`, `managed-by-cnrm`) is
imported and planned with a warning that names the tool and the hand-over, its label
left to that tool, and `--prune` never deletes one. The hand-over of docs/adoption.md,
on reconcile's side: once the tool has let go, the label is removed with the real
gcloud (against the local server's REST face) and the next plan says nothing of it.
Topics are made and read through the real Publisher client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.localserver.test_gcloud import GCLOUD, gcloud
from tests.specs_support import owner_doc, topic_doc

PROJECT = "proj-tools"
TF = f"projects/{PROJECT}/topics/tf-orders"
CNRM = f"projects/{PROJECT}/topics/cnrm-events"
PLAIN = f"projects/{PROJECT}/topics/plain"
OWNERSHIP = {"reconcile-managed", "reconcile-owner"}


@pytest.fixture
def estate(publisher_client: Any) -> Any:
    publisher_client.create_topic(request={
        "name": TF, "labels": {"goog-terraform-provisioned": "true", "team": "pay"},
    })
    publisher_client.create_topic(request={
        "name": CNRM, "labels": {"managed-by-cnrm": "true", "team": "data"},
    })
    publisher_client.create_topic(request={"name": PLAIN, "labels": {"team": "ops"}})
    return publisher_client


def _plan(run_cli: Any, root: Path, address: str, *more: str) -> dict[str, Any]:
    result = run_cli("plan", str(root), "--emulator", address, "--format", "json", *more)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_import_and_plan_warn_before_adopting_and_name_the_tool(
    run_cli: Any, local_server: Any, estate: Any, tmp_path: Path
) -> None:
    out = tmp_path / "imported"
    imported = run_cli("import", "--project", PROJECT, "--out", str(out),
                       "--emulator", local_server.address)
    assert imported.exit_code == 0, imported.output
    warned = [x for x in imported.stderr.splitlines() if x.startswith("warning: ")]
    assert len(warned) == 2, imported.stderr
    assert any(TF in x and "Terraform (the Google provider)" in x and "terraform state rm" in x
               for x in warned), warned
    assert any(CNRM in x and "Config Connector" in x
               and "cnrm.cloud.google.com/deletion-policy: abandon" in x for x in warned), warned
    text = (out / f"{PROJECT}.yaml").read_text()
    docs = {d["metadata"]["name"]: d["spec"] for d in yaml.safe_load_all(text)
            if d["kind"] == "Topic"}
    assert docs["tf-orders"]["labels"] == {"team": "pay"}  # the tool's label left to it
    assert docs["cnrm-events"]["labels"] == {"team": "data"}
    lines = text.splitlines()
    at = lines.index("  name: tf-orders")
    assert any("managed by Terraform (the Google provider) too" in x for x in lines[at - 8:at])

    plan = _plan(run_cli, out, local_server.address)
    changes = [rc for rc in plan["resource_changes"] if rc["change"]["actions"] != ["no-op"]]
    assert sorted(rc["address"] for rc in changes) == sorted([TF, CNRM, PLAIN])
    for rc in changes:  # adopting: the ownership labels only, the tools' labels kept
        assert rc["update_mask"] == ["labels"], rc
        assert set(rc["request"]["label_merge"]["set"]) == OWNERSHIP, rc
        assert not rc["request"]["label_merge"].get("remove"), rc
    found = {d["topic"]: d for d in plan["diagnostics"] if d["code"] == "other-tool-topic"}
    assert set(found) == {TF, CNRM}, plan["diagnostics"]
    assert found[TF]["severity"] == "warning"
    assert "Terraform (the Google provider)" in found[TF]["message"]
    assert "this plan adopts it" in found[TF]["message"]
    assert (f"gcloud pubsub topics update tf-orders --project {PROJECT} "
            "--remove-labels=goog-terraform-provisioned") in found[TF]["hint"]
    assert "Config Connector" in found[CNRM]["message"]
    assert found[TF]["file"].endswith(f"{PROJECT}.yaml") and found[TF]["line"] > 0

    # Text output: the warning, naming the tool, before anything is applied.
    shown = run_cli("plan", str(out), "--emulator", local_server.address)
    assert "warning[other-tool-topic]" in shown.output, shown.output


@pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed")
def test_the_hand_over_removes_the_label_and_the_warning_goes(
    run_cli: Any, local_server: Any, estate: Any, tmp_path: Path
) -> None:
    """docs/adoption.md on reconcile's side: import, the other tool lets go (outside
    this test: its state or object), the label is removed with gcloud, apply adopts."""
    out = tmp_path / "imported"
    assert run_cli("import", "--project", PROJECT, "--out", str(out),
                   "--emulator", local_server.address).exit_code == 0
    removed = gcloud(local_server.address, tmp_path / "gcloud", "topics", "update",
                     "tf-orders", "--remove-labels=goog-terraform-provisioned",
                     project=PROJECT)
    assert removed.code == 0, removed.err
    assert "goog-terraform-provisioned" not in estate.get_topic(topic=TF).labels
    plan = _plan(run_cli, out, local_server.address)
    assert {d["topic"] for d in plan["diagnostics"] if d["code"] == "other-tool-topic"} == {
        CNRM
    }
    applied = run_cli("apply", str(out), "--emulator", local_server.address, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    labels = dict(estate.get_topic(topic=TF).labels)
    labels.pop("reconcile-plan")  # the marker of the plan applied
    assert labels == {"team": "pay", "reconcile-managed": "true", "reconcile-owner": "default"}
    # Adopted, still labelled by Config Connector: said again, as managed by both.
    again = _plan(run_cli, out, local_server.address, "--detailed-exitcode")
    (cnrm,) = [d for d in again["diagnostics"] if d["code"] == "other-tool-topic"]
    assert cnrm["topic"] == CNRM and "reconcile manages it too" in cnrm["message"]


def test_prune_never_deletes_a_topic_another_tool_labels(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    own = {"reconcile-managed": "true", "reconcile-owner": "team-pay"}
    publisher_client.create_topic(request={"name": "projects/proj-a/topics/orders",
                                           "labels": own})
    publisher_client.create_topic(request={"name": "projects/proj-a/topics/old",
                                           "labels": own})
    publisher_client.create_topic(request={
        "name": "projects/proj-a/topics/shared",
        "labels": {**own, "goog-terraform-provisioned": "true"},
    })
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text("---\n".join([owner_doc("team-pay"), topic_doc("orders")]))
    plan = _plan(run_cli, root, local_server.address, "--prune")
    deletes = [rc["address"] for rc in plan["resource_changes"]
               if rc["change"]["actions"] == ["delete"]]
    assert deletes == ["projects/proj-a/topics/old"]
    (kept,) = [d for d in plan["diagnostics"] if d["code"] == "prune-other-tool"]
    assert kept["topic"] == "projects/proj-a/topics/shared"
    assert "not pruned" in kept["message"] and "Terraform (the Google provider)" in kept["message"]
    applied = run_cli("apply", str(root), "--emulator", local_server.address, "--prune",
                      "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert publisher_client.get_topic(topic="projects/proj-a/topics/shared").name


def test_undeclared_topics_another_tool_labels_are_named_with_it(
    run_cli: Any, local_server: Any, estate: Any, tmp_path: Path
) -> None:
    """A tree that declares only `plain`: the undeclared-topics warning says which of
    the others Terraform and Config Connector label, before anyone adopts them."""
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text(topic_doc("plain", project=PROJECT))
    plan = _plan(run_cli, root, local_server.address)
    (undeclared,) = [d for d in plan["diagnostics"] if d["code"] == "undeclared-topics"]
    assert undeclared["message"].endswith(
        "cnrm-events, tf-orders; labelled as managed by another tool, to hand over before "
        "adopting them (docs/adoption.md): cnrm-events by Config Connector; tf-orders by "
        "Terraform (the Google provider)"
    ), undeclared["message"]
    assert not [d for d in plan["diagnostics"] if d["code"] == "other-tool-topic"]
