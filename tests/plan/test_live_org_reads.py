"""`reconcile plan` judges with the org's constraints as the live Org Policy API states
them, however it reads: in this process or through the read-ahead's second process
(RECONCILE_READ_AHEAD_FROM=0 starts it for any tree; a tree of 5000 Topic documents
starts it by default), the custom constraints on topics and the CMEK constraints
(gcp.restrictNonCmekServices, gcp.restrictCmekCryptoKeyProjects) included; the
snapshot validate used serves only for the projects' organization and ancestry, and
where it no longer says what the live policy says, the plan names each difference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.backends.base import TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.plan.readahead import START_ENV, ReadAhead, ReadAheadReads
from tests.specs_support import EU_ONLY, custom_constraint, custom_refusal, topic_doc

ORG = "organizations/777"
PROJECT = "proj-a"
NOT_READ_AHEAD = "note: reading the live topics in a second process failed"


def key(project: str) -> str:
    return f"projects/{project}/locations/europe-west1/keyRings/ring/cryptoKeys/key"


def keyed_topic(name: str, kms_key: str | None) -> str:
    """A Topic document in europe-west1 with `kmsKeyName` on line 7 (None: no key)."""
    doc = topic_doc(name, storage=(["europe-west1"], None))
    return doc + (f"  kmsKeyName: {kms_key}\n" if kms_key else "")


@pytest.fixture
def tree(tmp_path: Path) -> Any:
    """specs/ with the given topics and a snapshot holding the ancestry (the
    project's organization, `extra_ancestry`) and `extra` documents."""

    def make(*docs: str, extra: str = "", extra_ancestry: str = "") -> Path:
        root = tmp_path / "specs"
        root.mkdir(exist_ok=True)
        (root / "topics.yaml").write_text("---\n".join(docs))
        (root / "org-policy.yaml").write_text(
            extra + f"ancestry:\n  projects/{PROJECT}: {ORG}\n" + extra_ancestry
        )
        return root

    return make


def put_policy(orgpolicy_client: Any, constraint: str, spec: dict[str, Any]) -> None:
    """A project policy, set through the real Org Policy client."""
    orgpolicy_client.create_policy(parent=f"projects/{PROJECT}", policy={
        "name": f"projects/{PROJECT}/policies/{constraint}", "spec": spec,
    })


def enforce_eu_only(local_server: Any, orgpolicy_client: Any) -> None:
    """A live custom constraint (EU regions only) that the spec tree's snapshot lacks."""
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    orgpolicy_client.create_custom_constraint(
        parent=ORG, custom_constraint=custom_constraint(ORG, "custom.euOnly", EU_ONLY)
    )
    put_policy(orgpolicy_client, "custom.euOnly", {"rules": [{"enforce": True}]})


@pytest.mark.parametrize("setting", ["0", "off"])
def test_a_live_custom_constraint_decides_the_plan_however_it_reads(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any,
    monkeypatch: pytest.MonkeyPatch, setting: str,
) -> None:
    """"0": the read-ahead's second process reads (as for a tree of 5000 topics);
    "off": this process reads."""
    monkeypatch.setenv(START_ENV, setting)
    enforce_eu_only(local_server, orgpolicy_client)
    root = tree(topic_doc("orders", storage=(["us-east1"], None)))
    assert run_cli("validate", str(root)).exit_code == 0  # the snapshot has no constraint
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    assert NOT_READ_AHEAD not in result.stderr
    assert "error[org-custom-constraint]" in result.stderr
    assert custom_refusal(f"projects/{PROJECT}/topics/orders", "custom.euOnly") in result.stderr
    assert "custom.euOnly is enforced now, and not in the snapshot" in result.stderr
    assert "no plan made, nothing changed" in result.stderr


def test_a_tree_of_5000_topics_reads_ahead_and_judges_by_the_live_constraint(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default threshold: 5000 Topic documents start the second process."""
    monkeypatch.delenv(START_ENV, raising=False)
    enforce_eu_only(local_server, orgpolicy_client)
    docs = [topic_doc(f"t{i:04d}", storage=(["europe-west1"], None)) for i in range(4999)]
    root = tree(*docs, topic_doc("zz-us", storage=(["us-east1"], None)))
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    assert NOT_READ_AHEAD not in result.stderr
    refused = [line for line in result.stderr.splitlines() if "breaks custom constraint" in line]
    assert len(refused) == 1 and "projects/proj-a/topics/zz-us" in refused[0]


def test_the_read_ahead_serves_what_the_backend_reads(
    local_server: Any, orgpolicy_client: Any
) -> None:
    enforce_eu_only(local_server, orgpolicy_client)
    put_policy(orgpolicy_client, "gcp.restrictNonCmekServices",
               {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]})
    put_policy(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects",
               {"rules": [{"values": {"allowed_values": ["projects/keys-ok"]}}]})
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=0)
    read_ahead.document(PROJECT)
    backend = read_ahead.served([PROJECT, "proj-b"])
    assert isinstance(backend, ReadAheadReads)
    direct = open_backend(TargetOptions(emulator=local_server.address))
    try:
        [(constraint, mode)] = backend.custom_constraints(PROJECT, ORG)
        assert (constraint.constraint_id, mode) == ("custom.euOnly", "enforced")
        for project, org in ((PROJECT, ORG), ("proj-b", None)):
            assert backend.ancestry(project) == direct.ancestry(project)
            assert backend.ancestry(project).organization == org
            assert backend.custom_constraints(project, org) == direct.custom_constraints(
                project, org
            )
            assert backend.effective_policy(project) == direct.effective_policy(project)
        inputs = backend.effective_policy(PROJECT)
        assert inputs.restrict_non_cmek is not None and inputs.key_projects is not None
    finally:
        direct.close()
        backend.close()


def test_a_project_where_cmek_is_required_refuses_a_topic_without_a_key(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any, tree: Any,
) -> None:
    put_policy(orgpolicy_client, "gcp.restrictNonCmekServices",
               {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]})
    root = tree(keyed_topic("orders", None), keyed_topic("keyed", key("keys")))
    local_server.counters.reset()
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    where = f"{root / 'topics.yaml'}:3:"  # the topic's metadata.name, as validate places it
    [line] = [x for x in result.stderr.splitlines() if "error[org-cmek-required]" in x]
    assert line.startswith(where), line
    assert (
        "the effective constraints/gcp.restrictNonCmekServices of project proj-a requires "
        "a customer-managed key for pubsub.googleapis.com"
    ) in line
    assert "keyed" not in line
    assert (
        "constraints/gcp.restrictNonCmekServices: requires a customer-managed key for new "
        "pubsub.googleapis.com topics now, not in the snapshot"
    ) in result.stderr
    assert local_server.counters.get("CreateTopic") == 0
    # What the service says to that call: the same.
    with pytest.raises(exceptions.FailedPrecondition, match="restrictNonCmekServices"):
        publisher_client.create_topic(name=f"projects/{PROJECT}/topics/orders")


def test_a_key_from_a_project_the_live_policy_does_not_allow(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, publisher_client: Any, tree: Any,
) -> None:
    # A topic made with a key of that project before the policy: the constraint binds
    # creation only.
    publisher_client.create_topic(request={
        "name": f"projects/{PROJECT}/topics/old", "kms_key_name": key("keys-no"),
    })
    put_policy(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects",
               {"rules": [{"values": {"allowed_values": ["projects/keys-ok"]}}]})
    root = tree(keyed_topic("orders", key("keys-no")), keyed_topic("old", key("keys-no")))
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    errors = [x for x in result.stderr.splitlines() if "error[org-cmek-key-project]" in x]
    assert len(errors) == 1
    assert errors[0].startswith(f"{root / 'topics.yaml'}:7:15:"), errors[0]  # the key
    # Where validate places it, given a snapshot that says what the live policy says.
    pulled = root.parent / "pulled.yaml"
    pulled.write_text(
        f"name: projects/{PROJECT}/policies/gcp.restrictCmekCryptoKeyProjects\n"
        "spec: {rules: [{values: {allowedValues: [projects/keys-ok]}}]}\n"
        f"---\nancestry: {{projects/{PROJECT}: none}}\n"  # as Resource Manager places it
    )
    # (Offline, either may exist: a warning for each that says plan decides.)
    validated = run_cli("validate", str(root), "--org-policy", str(pulled), "--format", "json")
    assert validated.exit_code == 0
    assert [(d["line"], d["col"], d["severity"], d["topic"])
            for d in json.loads(validated.stdout)] == [
        (7, 15, "warning", f"projects/{PROJECT}/topics/orders"),
        (15, 15, "warning", f"projects/{PROJECT}/topics/old"),
    ]
    assert (
        "kmsKeyName of topic projects/proj-a/topics/orders is a key of projects/keys-no, "
        "which the effective constraints/gcp.restrictCmekCryptoKeyProjects of project "
        "proj-a does not allow (allowed: projects/keys-ok)"
    ) in errors[0]
    # The topic that exists: reported once, as an existing violation, not refused.
    (warned,) = [x for x in result.stderr.splitlines() if "warning[existing-" in x]
    assert warned.startswith(
        f"{root / 'topics.yaml'}:15:15: warning[existing-cmek-key-project]: topic "
        "projects/proj-a/topics/old is protected by a key of projects/keys-no"
    ), warned
    assert "binds only creation, so the plan's calls are not refused" in warned
    assert (
        "constraints/gcp.restrictCmekCryptoKeyProjects: the snapshot allows keys of every "
        "project, the live policy allows keys of projects/keys-ok"
    ) in result.stderr
    with pytest.raises(exceptions.FailedPrecondition, match="restrictCmekCryptoKeyProjects"):
        publisher_client.create_topic(request={
            "name": f"projects/{PROJECT}/topics/orders", "kms_key_name": key("keys-no"),
        })
    # The existing topic alone: planned, with the warning.
    only_old = tree(keyed_topic("old", key("keys-no")))
    result = run_cli("plan", str(only_old), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("warning[existing-cmek-key-project]") == 1
    assert "org-cmek-key-project" not in result.stdout + result.stderr


def test_the_snapshots_ancestry_places_a_key_project_under_an_allowed_folder(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any,
) -> None:
    """`under:folders/F` decided by where the spec tree's snapshot puts the key's
    project; a project it does not place is a warning saying so, not a guess."""
    local_server.set_ancestry("projects/keys-ok", "folders/42")
    put_policy(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects",
               {"rules": [{"values": {"allowed_values": ["under:folders/42"]}}]})
    root = tree(
        keyed_topic("placed", key("keys-ok")), keyed_topic("unplaced", key("keys-else")),
        extra_ancestry="  projects/keys-ok: folders/42\n",
    )
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.count("warning[org-cmek-key-project]") == 1
    assert "keys of projects/keys-else" in out
    assert "does not say where projects/keys-else sits in the hierarchy" in out


def test_a_snapshot_that_matches_the_live_cmek_policy_is_not_stale(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tree: Any,
) -> None:
    """Written differently (`is:` and the values' order) but meaning the same, the
    project where the snapshot places it."""
    local_server.set_ancestry(f"projects/{PROJECT}", ORG)
    put_policy(orgpolicy_client, "gcp.restrictCmekCryptoKeyProjects", {"rules": [
        {"values": {"allowed_values": ["projects/keys-b", "projects/keys-a"]}},
    ]})
    put_policy(orgpolicy_client, "gcp.restrictNonCmekServices",
               {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]})
    snapshot = (
        f"name: projects/{PROJECT}/policies/gcp.restrictCmekCryptoKeyProjects\n"
        "spec: {rules: [{values: {allowedValues: ['is:projects/keys-a', projects/keys-b]}}]}\n"
        "---\n"
        f"name: projects/{PROJECT}/policies/gcp.restrictNonCmekServices\n"
        "spec: {rules: [{values: {deniedValues: [pubsub.googleapis.com]}}]}\n---\n"
    )
    root = tree(keyed_topic("orders", key("keys-a")), extra=snapshot)
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    assert "org-policy-stale" not in result.stdout + result.stderr
