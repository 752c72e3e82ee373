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
    assert "note: Custom constraints not pulled: pass --organization ORG" in result.stderr
    # The folder's restriction was pulled as the project's effective policy.
    allowed = store.policies[f"projects/{PROJECT}/policies/{RESOURCE_LOCATIONS}"]
    assert allowed.spec is not None
    assert "us-east1" in allowed.spec.rules[0].allowed_values
    assert not store.ancestry

    ok = run_cli("validate", str(spec_tree(tmp_path, "us-east1")), "--org-policy", str(snapshot))
    assert ok.exit_code == 0, ok.stdout + ok.stderr

    # The pulled expansion names in:us-locations, whose membership is inferred, but
    # only among us-* regions: refusing europe-west1 is certain (an error, issue 21).
    denied = run_cli(
        "validate", str(spec_tree(tmp_path, "europe-west1")), "--org-policy", str(snapshot)
    )
    assert denied.exit_code == 1
    assert "org-location-denied" in denied.stdout and "europe-west1" in denied.stdout

    # A project without policies gets the defaults: anything goes.
    free = run_cli(
        "validate", str(spec_tree(tmp_path, "asia-east1", OTHER)), "--org-policy", str(snapshot)
    )
    assert free.exit_code == 0, free.stdout + free.stderr


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
    assert result.exit_code == 2
    assert f"--out {tmp_path} is a directory; name a file" in result.stderr
    assert "cannot connect" not in result.stderr
