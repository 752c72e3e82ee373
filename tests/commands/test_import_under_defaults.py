"""`reconcile import` into a directory a `Defaults` document already applies to (a
second project imported where the first one's shared values were factored, a
hand-written Defaults document above): every topic is written so that, merged with
those documents, it is its live self, and validate, plan (only the adoption), apply,
plan ("No changes") hold for both projects; where a spec cannot refuse an inherited
value, the import is refused naming the document's line, the value and the topics,
and nothing is written. Topics made through the real clients on the loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.ownership import is_reserved

FIRST, SECOND, THIRD = "first-project", "second-project", "third-project"
KEY1 = f"projects/{FIRST}/locations/us-east1/keyRings/ring/cryptoKeys/k"
KEY2 = f"projects/{SECOND}/locations/europe-west1/keyRings/ring/cryptoKeys/k"
AVRO = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
# Written by hand above the import's directory: its label, policy and publishers apply
# to every topic below it.
ABOVE = """\
apiVersion: reconcile.pubsub/v1
kind: Defaults
metadata: {name: org}
spec:
  labels: {cost-center: shared}
  messageStoragePolicy: {allowedPersistenceRegions: [us-central1]}
  publishers:
    hedging: {hedgeDelay: 500ms, maxTokens: 10, refillRatio: 0.1}
"""


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _topic(client: Any, project: str, name: str, **fields: Any) -> None:
    client.create_topic(request={"name": f"projects/{project}/topics/{name}", **fields})


def assert_only_adoption(plan: dict[str, Any], topics: int) -> None:
    """Every topic is updated, and the update only adds reconcile's own labels."""
    changes = plan["resource_changes"]
    assert len(changes) == topics
    for rc in changes:
        assert rc["change"]["actions"] == ["update"], rc["address"]
        assert rc["update_mask"] == ["labels"], rc["address"]
        before, after = rc["change"]["before"], rc["change"]["after"]
        added = set(after["labels"]) - set(before["labels"])
        assert added and all(is_reserved(k) for k in added), (rc["address"], added)
        assert {k: after["labels"][k] for k in before["labels"]} == before["labels"]
        assert {k: v for k, v in after.items() if k != "labels"} == {
            k: v for k, v in before.items() if k != "labels"
        }, rc["address"]


def test_two_projects_imported_into_one_directory_plan_only_the_adoption(
    run_cli: Any, local_server: Any, publisher_client: Any, schema_client: Any,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # the tree's root: the Defaults above the import apply
    specs = Path("specs")
    specs.mkdir()
    (specs / "org.yaml").write_text(ABOVE)
    out = specs / "imported"
    for name in ("a-topic", "b-topic"):
        _topic(publisher_client, FIRST, name,
               labels={"team": "x", "cost-center": "c1"},
               message_storage_policy={"allowed_persistence_regions": ["us-east1"]},
               message_retention_duration={"seconds": 172800}, kms_key_name=KEY1)
    schema = schema_client.create_schema(
        parent=f"projects/{SECOND}", schema={"type_": "AVRO", "definition": json.dumps(AVRO)},
        schema_id="order",
    ).name
    _topic(publisher_client, SECOND, "c-topic",
           labels={"team": "y", "cost-center": "c2"},
           message_storage_policy={"allowed_persistence_regions": ["europe-west1"]},
           message_retention_duration={"seconds": 86400}, kms_key_name=KEY2)
    _topic(publisher_client, SECOND, "d-topic",  # no storage policy, no location constraint
           labels={"team": "z", "cost-center": "c2", "extra": "1"},
           message_retention_duration={"seconds": 10800}, kms_key_name=KEY2,
           schema_settings={"schema": schema, "encoding": "JSON"})
    addr = local_server.address

    first = run_cli("import", "--project", FIRST, "--out", str(out), "--emulator", addr)
    assert first.exit_code == 0, first.stderr
    defaults, a_topic, _ = _docs(out / f"{FIRST}.yaml")
    assert defaults["kind"] == "Defaults"  # the first project's shared values, factored
    assert defaults["spec"]["labels"] == {"team": "x", "cost-center": "c1"}
    assert defaults["spec"]["messageRetentionDuration"] == "2d"
    assert a_topic["spec"] == {"publishers": {}}  # refuses the hedging given above

    second = run_cli("import", "--project", SECOND, "--out", str(out), "--emulator", addr)
    assert second.exit_code == 0, second.stderr
    assert "Defaults" not in second.stderr
    c_topic, d_topic = _docs(out / f"{SECOND}.yaml")
    assert c_topic["spec"]["labels"] == {"team": "y", "cost-center": "c2"}
    assert c_topic["spec"]["messageStoragePolicy"] == {
        "allowedPersistenceRegions": ["europe-west1"], "enforceInTransit": False,
    }
    assert d_topic["spec"]["messageStoragePolicy"] == "inherit"  # none, as live
    assert d_topic["spec"]["messageRetentionDuration"] == "3h"
    assert d_topic["spec"]["kmsKeyName"] == KEY2
    assert d_topic["spec"]["publishers"] == {}

    # The Defaults document above the directory counts as much as the one in it.
    _topic(publisher_client, THIRD, "e-topic", labels={"team": "w"})
    other = specs / "other"
    third = run_cli("import", "--project", THIRD, "--out", str(other), "--emulator", addr)
    assert third.exit_code == 1
    assert third.stderr.count(": gives ") == 1, third.stderr  # the policy: `inherit`
    assert (
        "  specs/org.yaml:5: gives label cost-center='shared' to every topic in specs/ and "
        f"below; the live topic projects/{THIRD}/topics/e-topic has no label cost-center\n"
    ) in third.stderr
    assert not other.exists()

    validated = run_cli("validate")
    assert validated.exit_code == 0, validated.stdout + validated.stderr
    plan = run_cli("plan", "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    assert_only_adoption(json.loads(plan.stdout), topics=4)
    applied = run_cli("apply", "--emulator", addr, "--auto-approve")
    assert applied.exit_code == 0, applied.stderr
    again = run_cli("plan", "--emulator", addr, "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "No changes. The live topics match the specs." in again.stdout


def test_a_value_no_spec_can_refuse_stops_the_import_before_any_file(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    for name in ("a-topic", "b-topic"):
        _topic(publisher_client, FIRST, name, labels={"team": "x"},
               message_retention_duration={"seconds": 172800})
    _topic(publisher_client, SECOND, "c-topic")  # neither the label nor a retention
    _topic(publisher_client, SECOND, "d-topic", labels={"team": "y"},
           message_retention_duration={"seconds": 3600})
    out = tmp_path / "specs"
    addr = local_server.address
    assert run_cli("import", "--project", FIRST, "--out", str(out), "--emulator", addr)
    first_file = out / f"{FIRST}.yaml"
    before = first_file.read_bytes()
    lines = before.decode().splitlines()
    team = lines.index("    team: x") + 1
    retention = lines.index("  messageRetentionDuration: 2d") + 1

    second = run_cli("import", "--project", SECOND, "--out", str(out), "--emulator", addr)
    assert second.exit_code == 1
    assert second.stderr.startswith(
        f"Error: cannot import into {out}: a Defaults document that applies there would "
        "give the imported topics values their live topics do not have"
    )
    assert "; nothing written\n" in second.stderr
    assert (
        f"  {first_file}:{team}: gives label team='x' to every topic in {out}/ and below; "
        f"the live topic projects/{SECOND}/topics/c-topic has no label team\n"
    ) in second.stderr
    assert (
        f"  {first_file}:{retention}: gives messageRetentionDuration 2d to every topic in "
        f"{out}/ and below; the live topic projects/{SECOND}/topics/c-topic has no "
        "messageRetentionDuration\n"
    ) in second.stderr
    assert "hint: import into a directory that document does not apply to" in second.stderr
    assert not (out / f"{SECOND}.yaml").exists()  # nothing written, nothing changed
    assert first_file.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == [f"{FIRST}.yaml"]

    # What the hint says works: the two projects imported together.
    together = run_cli("import", "--project", FIRST, "--project", SECOND, "--out", str(out),
                       "--emulator", addr, "--force")
    assert together.exit_code == 0, together.stderr
    assert run_cli("validate", str(out)).exit_code == 0
    plan = run_cli("plan", str(out), "--emulator", addr, "--format", "json")
    assert plan.exit_code == 0, plan.stderr
    assert_only_adoption(json.loads(plan.stdout), topics=4)


def test_specs_there_that_cannot_be_read_stop_the_import_before_any_file(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path
) -> None:
    """A Defaults document the import cannot read might apply to what it writes: it
    refuses, naming the file and line, instead of writing topics that would inherit
    whatever the file says once it is fixed."""
    _topic(publisher_client, FIRST, "a-topic", labels={"team": "y"})
    out = tmp_path / "specs"
    out.mkdir()
    broken = out / "defaults.yaml"
    broken.write_text("apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec:\n"
                      "  labels: {team: x\n")
    addr = local_server.address
    result = run_cli("import", "--project", FIRST, "--out", str(out), "--emulator", addr)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot import into {out}: specs already there")
    assert f"  {broken}:5:1: error[yaml-syntax]: YAML syntax error" in result.stderr
    assert "hint: fix the files named above (`reconcile validate FILE`" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["defaults.yaml"]

    # Fixed, the document applies and the import keeps the topic's own label.
    broken.write_text(broken.read_text().replace("{team: x\n", "{team: x}\n"))
    result = run_cli("import", "--project", FIRST, "--out", str(out), "--emulator", addr)
    assert result.exit_code == 0, result.stderr
    [doc] = [d for d in _docs(out / f"{FIRST}.yaml") if d["kind"] == "Topic"]
    assert doc["spec"]["labels"] == {"team": "y"}


def test_other_tools_yaml_above_the_output_directory_does_not_stop_the_import(
    run_cli: Any, local_server: Any, publisher_client: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The repository root holds other tools' YAML (mkdocs.yml): not specs, so their
    errors as specs are not the import's concern; a broken file there that names
    reconcile's apiVersion is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # the repository root: the search for Defaults stops here
    (tmp_path / "mkdocs.yml").write_text("site_name: docs\nnav: []\n")
    _topic(publisher_client, FIRST, "a-topic", labels={"team": "y"})
    addr = local_server.address
    result = run_cli("import", "--project", FIRST, "--out", "specs", "--emulator", addr)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "specs" / f"{FIRST}.yaml").is_file()

    (tmp_path / "org.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec: {labels: {a: b}\n"
    )
    result = run_cli("import", "--project", FIRST, "--out", "specs", "--emulator", addr,
                     "--force")
    assert result.exit_code == 1
    assert "  org.yaml:4:1: error[yaml-syntax]" in result.stderr
    assert "mkdocs.yml" not in result.stderr
