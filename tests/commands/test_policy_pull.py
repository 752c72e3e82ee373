"""`reconcile policy pull` against the loopback server through the real Org Policy
client: the snapshot loads, and `validate --org-policy` enforces what it says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.orgpolicy.model import ENFORCE_IN_TRANSIT, RESOURCE_LOCATIONS
from reconciler.orgpolicy.snapshot import READ_CONSTRAINTS, load_snapshot

PROJECT = "acme-pull"
OTHER = "acme-pull-two"

TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {{project: {project}, name: orders}}
spec:
  messageStoragePolicy:
    allowedPersistenceRegions: [{region}]
"""


def seed_policies(client: Any, local_server: Any) -> None:
    """Regions restricted at the folder (inherited by the project, through the
    hierarchy), in-transit enforcement on the project itself (through the API)."""
    local_server.set_ancestry(f"projects/{PROJECT}", "folders/42")
    client.create_policy(
        request={
            "parent": "folders/42",
            "policy": {
                "name": f"folders/42/policies/{RESOURCE_LOCATIONS}",
                "spec": {"rules": [{"values": {"allowed_values": ["in:us-locations"]}}]},
            },
        }
    )
    client.create_policy(
        request={
            "parent": f"projects/{PROJECT}",
            "policy": {
                "name": f"projects/{PROJECT}/policies/{ENFORCE_IN_TRANSIT}",
                "spec": {"rules": [{"enforce": True}]},
            },
        }
    )


def spec_tree(tmp_path: Path, region: str, project: str = PROJECT) -> Path:
    root = tmp_path / f"specs-{region}"
    root.mkdir()
    (root / "orders.yaml").write_text(TOPIC.format(project=project, region=region))
    return root


def test_pulled_snapshot_loads_and_drives_validate(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tmp_path: Path
) -> None:
    seed_policies(orgpolicy_client, local_server)
    snapshot = tmp_path / "org-policy.yaml"
    result = run_cli(
        "policy",
        "pull",
        "--project",
        PROJECT,
        "--project",
        OTHER,
        "--out",
        str(snapshot),
        "--emulator",
        local_server.address,
    )
    assert result.exit_code == 0, result.stderr

    text = snapshot.read_text()
    assert text.startswith("# Org-policy snapshot written by `reconcile policy pull` at ")
    assert local_server.address in text
    store = load_snapshot(snapshot)
    assert set(store.policies) == {
        f"projects/{p}/policies/{c}" for p in (PROJECT, OTHER) for c in READ_CONSTRAINTS
    }
    assert not store.custom_constraints
    # Resource Manager places PROJECT under its folder, in no organization; OTHER nowhere.
    assert (
        f"note: projects/{PROJECT} is in no organization (Resource Manager places it under "
        "folders/42): no custom constraint applies to it"
    ) in result.stderr
    assert f"note: projects/{OTHER} is in no organization" in result.stderr
    # The folder's restriction was pulled as the project's effective policy.
    allowed = store.policies[f"projects/{PROJECT}/policies/{RESOURCE_LOCATIONS}"]
    assert allowed.spec is not None
    assert "us-east1" in allowed.spec.rules[0].allowed_values
    assert store.ancestry == {f"projects/{PROJECT}": "folders/42"}
    # OTHER is written as in no organization (`projects/P: none`), not left out.
    assert store.unparented == {f"projects/{OTHER}"}
    assert f"  projects/{OTHER}: none\n" in text

    ok = run_cli("validate", str(spec_tree(tmp_path, "us-east1")), "--org-policy", str(snapshot))
    assert ok.exit_code == 0, ok.stdout + ok.stderr

    # The pulled expansion names in:us-locations, whose membership is inferred, but
    # only among us-* regions: refusing europe-west1 is certain (issue 21); whether it
    # stops anything is plan's to say (a topic that lists it already keeps it).
    denied = run_cli(
        "validate", str(spec_tree(tmp_path, "europe-west1")), "--org-policy", str(snapshot)
    )
    assert denied.exit_code == 0
    assert "warning[org-location-denied]: region 'europe-west1' is not allowed" in denied.stdout
    assert "europe-west1 is in none of the allowed groups" in denied.stdout

    # A project without policies gets the defaults: anything goes; and, known to be
    # in no organization, no custom constraint goes unjudged, even where required.
    free = run_cli(
        "validate", str(spec_tree(tmp_path, "asia-east1", OTHER)), "--org-policy", str(snapshot),
        "--require-org-policy",
    )
    assert free.exit_code == 0, free.stdout + free.stderr
    assert "org-custom-no-ancestry" not in free.stdout


def _pull(run_cli: Any, server: Any, out: Path) -> Any:
    return run_cli(
        "policy", "pull", "--project", PROJECT, "--out", str(out), "--emulator", server.address
    )


def test_unimplemented_org_policy_api_is_named(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    local_server.faults.add(method="GetEffectivePolicy", error="UNIMPLEMENTED")
    out = tmp_path / "snap.yaml"
    result = _pull(run_cli, local_server, out)
    assert result.exit_code == 1
    assert "does not implement the Org Policy API" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_permission_denied_names_the_permission_and_role(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    local_server.faults.add(method="GetEffectivePolicy", error="PERMISSION_DENIED")
    out = tmp_path / "snap.yaml"
    result = _pull(run_cli, local_server, out)
    assert result.exit_code == 1
    assert "orgpolicy.policy.get" in result.stderr
    assert "roles/orgpolicy.policyViewer" in result.stderr
    assert not out.exists()


def test_project_is_required(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli("policy", "pull", "--out", str(tmp_path / "x.yaml"))
    assert result.exit_code == 2
    assert "--project" in result.stderr


def test_out_directory_is_a_usage_error_before_any_call(run_cli: Any, tmp_path: Path) -> None:
    """Nothing listens at the emulator address: had the command called out first, it
    would report the connection, not the bad --out."""
    result = run_cli(
        "policy",
        "pull",
        "--project",
        PROJECT,
        "--out",
        str(tmp_path),
        "--emulator",
        "127.0.0.1:9",
    )
    assert result.exit_code == 1  # as every command's --out it cannot write
    assert f"{tmp_path}: cannot write the org-policy snapshot: it is a directory" in (
        result.stderr
    )
    assert "cannot connect" not in result.stderr


ORG_NUMBER = "5150"
ORG = f"organizations/{ORG_NUMBER}"
EU_ONLY = "resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('europe-'))"


def seed_custom(client: Any, local_server: Any) -> None:
    """Two Pub/Sub custom constraints and one for another service, set through the
    real client; PROJECT enforces the first (through its folder), OTHER dry-runs the
    second and enforces the managed topic-transforms constraint."""
    local_server.set_ancestry(f"projects/{PROJECT}", "folders/42")
    local_server.set_ancestry("folders/42", ORG)
    local_server.set_ancestry(f"projects/{OTHER}", ORG)
    for cid, types, condition, action in (
        ("custom.euOnly", ["pubsub.googleapis.com/Topic"], EU_ONLY, "ALLOW"),
        ("custom.cmekRequired", ["pubsub.googleapis.com/Topic",
                                 "pubsub.googleapis.com/Subscription"],
         "!has(resource.kmsKeyName)", "DENY"),
        ("custom.vmNames", ["compute.googleapis.com/Instance"],
         "resource.name.startsWith('vm-')", "ALLOW"),
    ):
        client.create_custom_constraint(
            parent=ORG,
            custom_constraint={
                "name": f"{ORG}/customConstraints/{cid}",
                "resource_types": types,
                "method_types": ["CREATE", "UPDATE"],
                "condition": condition,
                "action_type": action,
                "display_name": cid,
                "description": f"{cid} says no",
            },
        )
    client.create_policy(
        parent="folders/42",
        policy={
            "name": "folders/42/policies/custom.euOnly",
            "spec": {"rules": [{"enforce": True}]},
        },
    )
    client.create_policy(
        parent=f"projects/{OTHER}",
        policy={
            "name": f"projects/{OTHER}/policies/custom.cmekRequired",
            "dry_run_spec": {"rules": [{"enforce": True}]},
        },
    )
    client.create_policy(
        parent=f"projects/{OTHER}",
        policy={
            "name": f"projects/{OTHER}/policies/pubsub.managed.disableTopicMessageTransforms",
            "spec": {"rules": [{"enforce": True}]},
        },
    )


def test_custom_constraints_are_pulled_written_and_reread(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tmp_path: Path
) -> None:
    seed_custom(orgpolicy_client, local_server)
    snapshot = tmp_path / "org-policy.yaml"
    result = run_cli(
        "policy", "pull", "--project", PROJECT, "--project", OTHER,
        "--organization", ORG_NUMBER, "--out", str(snapshot), "--emulator", local_server.address,
    )
    assert result.exit_code == 0, result.stderr
    assert f"2 custom constraint(s) of {ORG}" in result.stderr
    assert "note:" not in result.stderr

    text = snapshot.read_text()
    assert f"Custom constraints of {ORG} that name Pub/Sub resource types: 2" in text
    assert "custom.vmNames" not in text  # not a Pub/Sub resource type
    store = load_snapshot(snapshot)
    assert sorted(store.custom_constraints) == [
        f"{ORG}/customConstraints/custom.cmekRequired",
        f"{ORG}/customConstraints/custom.euOnly",
    ]
    eu = store.custom_constraints[f"{ORG}/customConstraints/custom.euOnly"]
    assert (eu.condition, eu.action_type, eu.method_types) == (
        EU_ONLY, "ALLOW", ("CREATE", "UPDATE")
    )
    # The ancestry as Resource Manager states it: PROJECT's folder, then the org.
    assert store.ancestry == {
        f"projects/{PROJECT}": "folders/42", "folders/42": ORG, f"projects/{OTHER}": ORG,
    }

    def modes(project: str) -> dict[str, str]:
        return {
            c.constraint_id: mode
            for c, mode in store.custom_constraints_for(
                f"projects/{project}", "pubsub.googleapis.com/Topic"
            )
        }

    assert modes(PROJECT) == {"custom.euOnly": "enforced"}
    assert modes(OTHER) == {"custom.cmekRequired": "dry-run"}
    managed = "pubsub.managed.disableTopicMessageTransforms"
    assert store.enforcement(managed, f"projects/{OTHER}") == "enforced"
    assert store.enforcement(managed, f"projects/{PROJECT}") is None

    # The written snapshot validates: every custom policy finds its constraint and
    # its project's organization (only OTHER, which no spec uses, is warned about).
    ok = run_cli("validate", str(spec_tree(tmp_path, "europe-west1")), "--org-policy",
                 str(snapshot))
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    warnings = [line for line in ok.stdout.splitlines() if "warning[" in line]
    assert warnings and all("policy-project-unused" in w for w in warnings), ok.stdout


def test_organization_must_be_a_number(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli(
        "policy", "pull", "--project", PROJECT, "--organization", "acme",
        "--out", str(tmp_path / "x.yaml"), "--emulator", "127.0.0.1:9",
    )
    assert result.exit_code == 2
    assert "organizations are named by number" in result.stderr


LIVE_ORG = "organizations/6160"
NO_TMP = "'tmp' in resource.labels"


def live_hierarchy(hierarchy: Any, orgpolicy_client: Any) -> str:
    """PROJECT under a folder under LIVE_ORG (through Resource Manager), and a DENY
    constraint on topics labelled `tmp` enforced on the organization (through the Org
    Policy API): nothing names the organization but Resource Manager."""
    folder = hierarchy.folder(LIVE_ORG, "Engineering")
    hierarchy.project(PROJECT, folder)
    orgpolicy_client.create_custom_constraint(parent=LIVE_ORG, custom_constraint={
        "name": f"{LIVE_ORG}/customConstraints/custom.noTmp",
        "resource_types": ["pubsub.googleapis.com/Topic"],
        "method_types": ["CREATE", "UPDATE"],  # binds a topic that exists too
        "condition": NO_TMP, "action_type": "DENY", "description": "No tmp topics.",
    })
    orgpolicy_client.create_policy(parent=LIVE_ORG, policy={
        "name": f"{LIVE_ORG}/policies/custom.noTmp", "spec": {"rules": [{"enforce": True}]},
    })
    return folder


def test_the_projects_organization_comes_from_resource_manager(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, hierarchy: Any, tmp_path: Path
) -> None:
    folder = live_hierarchy(hierarchy, orgpolicy_client)
    snapshot = tmp_path / "org-policy.yaml"
    result = run_cli("policy", "pull", "--project", PROJECT, "--out", str(snapshot),
                     "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    assert f"1 custom constraint(s) of {LIVE_ORG}" in result.stderr
    assert "note:" not in result.stderr
    store = load_snapshot(snapshot)
    assert list(store.custom_constraints) == [f"{LIVE_ORG}/customConstraints/custom.noTmp"]
    assert store.ancestry == {f"projects/{PROJECT}": folder, folder: LIVE_ORG}
    # Offline, validate now refuses what the organization refuses (on a topic that may
    # exist as well as on a new one: the constraint binds updates too).
    root = tmp_path / "specs"
    root.mkdir()
    (root / "orders.yaml").write_text(
        TOPIC.format(project=PROJECT, region="us-east1").replace(
            "spec:\n", "spec:\n  labels: {tmp: x}\n"
        )
    )
    refused = run_cli("validate", str(root), "--org-policy", str(snapshot))
    assert refused.exit_code == 1, refused.stdout
    assert "custom.noTmp" in refused.stdout


def test_an_organization_resource_manager_contradicts_is_an_error(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, hierarchy: Any, tmp_path: Path
) -> None:
    folder = live_hierarchy(hierarchy, orgpolicy_client)
    out = tmp_path / "org-policy.yaml"
    local_server.counters.reset()
    result = run_cli("policy", "pull", "--project", PROJECT, "--organization", "1234",
                     "--out", str(out), "--emulator", local_server.address)
    assert result.exit_code == 1
    assert (
        f"Resource Manager places projects/{PROJECT} under {folder} under {LIVE_ORG}, not "
        "in organizations/1234 as --organization says"
    ) in result.stderr
    assert not out.exists()
    assert local_server.counters.get("GetEffectivePolicy") == 0


def test_where_resource_manager_cannot_tell_the_given_organization_is_used(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, hierarchy: Any, tmp_path: Path
) -> None:
    live_hierarchy(hierarchy, orgpolicy_client)
    local_server.faults.add("GetProject", error="PERMISSION_DENIED")
    out = tmp_path / "org-policy.yaml"
    number = LIVE_ORG.removeprefix("organizations/")
    result = run_cli("policy", "pull", "--project", PROJECT, "--organization", number,
                     "--out", str(out), "--emulator", local_server.address)
    assert result.exit_code == 0, result.stderr
    assert f"note: the ancestry of projects/{PROJECT} could not be read" in result.stderr
    assert "resourcemanager.projects.get" in result.stderr
    pulled = load_snapshot(out)
    assert pulled.ancestry == {f"projects/{PROJECT}": LIVE_ORG}
    assert list(pulled.custom_constraints) == [f"{LIVE_ORG}/customConstraints/custom.noTmp"]
    # Without --organization, it says what is missing and why.
    again = run_cli("policy", "pull", "--project", PROJECT, "--out", str(out),
                    "--emulator", local_server.address, "--force")
    assert again.exit_code == 0, again.stderr
    assert (
        f"note: custom constraints of projects/{PROJECT} not pulled: its organization is "
        "unknown"
    ) in again.stderr


def test_an_existing_snapshot_is_kept_without_force_and_what_differs_is_said(
    run_cli: Any, local_server: Any, orgpolicy_client: Any, tmp_path: Path
) -> None:
    """Issue 46: a pull refuses to overwrite a file (a hand edit would be lost) unless
    --force, and says what differs: here a policy set since, a hand-edited one, and a
    project the file placed elsewhere."""
    local_server.set_ancestry(f"projects/{PROJECT}", "folders/42")
    snapshot = tmp_path / "org-policy.yaml"
    assert _pull(run_cli, local_server, snapshot).exit_code == 0
    # Unchanged service, unchanged file: still refused, and said to be the same.
    same = _pull(run_cli, local_server, snapshot)
    assert same.exit_code == 1
    assert f"refusing to overwrite {snapshot}; nothing written" in same.stderr
    assert "only its comments or layout would change" in same.stderr
    assert "--force" in same.stderr
    # A hand edit: the file says in-transit is enforced and places the project elsewhere.
    edited = snapshot.read_text().replace("folders/42", "folders/43") + "# kept by hand\n"
    transit = f"projects/{PROJECT}/policies/{ENFORCE_IN_TRANSIT}"
    edited = edited.replace(
        f"name: {transit}\nspec:\n  rules:\n  - enforce: false",
        f"name: {transit}\nspec:\n  rules:\n  - enforce: true",
    )
    assert "enforce: true" in edited, edited
    snapshot.write_text(edited)
    # ...and the service has a location policy since.
    orgpolicy_client.create_policy(request={
        "parent": "folders/42",
        "policy": {
            "name": f"folders/42/policies/{RESOURCE_LOCATIONS}",
            "spec": {"rules": [{"values": {"allowed_values": ["in:eu-locations"]}}]},
        },
    })
    refused = _pull(run_cli, local_server, snapshot)
    assert refused.exit_code == 1
    assert snapshot.read_text() == edited  # nothing written
    location = f"projects/{PROJECT}/policies/{RESOURCE_LOCATIONS}"
    assert f"  policies changed: 2 ({location}, {transit})\n" in refused.stderr
    assert (
        f"  ancestry changed: 1 (projects/{PROJECT} folders/43 -> folders/42)\n"
    ) in refused.stderr
    assert "Traceback" not in refused.stderr
    # With --force it is replaced by what was pulled.
    forced = run_cli("policy", "pull", "--project", PROJECT, "--out", str(snapshot),
                     "--emulator", local_server.address, "--force")
    assert forced.exit_code == 0, forced.stderr
    assert "# kept by hand" not in snapshot.read_text()
    assert load_snapshot(snapshot).ancestry == {f"projects/{PROJECT}": "folders/42"}


def test_an_unreadable_existing_snapshot_is_kept_and_named(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    snapshot = tmp_path / "org-policy.yaml"
    snapshot.write_text("name: [unclosed\n")
    refused = _pull(run_cli, local_server, snapshot)
    assert refused.exit_code == 1
    assert "it cannot be compared with what was pulled: it has 1 error(s)" in refused.stderr
    assert f"{snapshot}:" in refused.stderr
    assert snapshot.read_text() == "name: [unclosed\n"


def test_a_snapshot_that_gains_a_project_says_which_policies_are_added(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    snapshot = tmp_path / "org-policy.yaml"
    assert _pull(run_cli, local_server, snapshot).exit_code == 0
    more = run_cli("policy", "pull", "--project", PROJECT, "--project", OTHER, "--out",
                   str(snapshot), "--emulator", local_server.address)
    assert more.exit_code == 1
    count = len(READ_CONSTRAINTS)
    first = sorted(f"projects/{OTHER}/policies/{c}" for c in READ_CONSTRAINTS)[:3]
    assert (
        f"  policies added: {count} ({', '.join(first)} and {count - 3} more)\n"
    ) in more.stderr
    assert f"projects/{OTHER} (not recorded) -> none" in more.stderr
