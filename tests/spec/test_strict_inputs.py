"""Issue 11 as a careless or hostile user meets `reconcile validate`: a missing
snapshot is said out loud, odd encodings and tabs are named, merge-key bombs stop."""

from __future__ import annotations

from pathlib import Path

import yaml

from reconciler.yamlio import Budget, load_documents

ROOT = Path(__file__).parents[2]
GOOD = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: acme-payments, name: orders}
spec:
  messageStoragePolicy: {allowedPersistenceRegions: [asia-east1]}
"""
FORBIDS_ASIA = """\
name: projects/acme-payments/policies/gcp.resourceLocations
spec: {rules: [{values: {allowedValues: [in:us-central1-locations, in:us-east1-locations]}}]}
"""


def test_missing_snapshot_is_a_warning_naming_where_it_looked(run_cli, tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / ".git").mkdir()  # the repository root ends the search
    (tmp_path / "specs" / "t.yaml").write_text(GOOD)
    result = run_cli("validate", str(tmp_path / "specs"))
    assert result.exit_code == 0
    assert result.stdout == (
        f"{tmp_path / 'specs'}: warning[org-policy-missing]: no org-policy snapshot found "
        f"(looked for org-policy.yaml in {tmp_path / 'specs'}, {tmp_path}), so the "
        "org-policy checks (allowed regions, in-transit enforcement, publishers' regions, "
        "customer-managed keys, custom constraints) did not run (write one with "
        "`reconcile policy pull "
        "--project P... --out org-policy.yaml` at the spec root, or pass --org-policy FILE)\n"
    )
    assert "0 errors, 1 warning" in result.stderr


def test_require_org_policy_checks_the_forbidden_region(run_cli, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "t.yaml").write_text(GOOD)
    required = run_cli("validate", str(tmp_path), "--require-org-policy")
    assert required.exit_code == 1
    assert f"{tmp_path}: error[org-policy-missing]: no org-policy snapshot found" in (
        required.stdout
    )
    # With the snapshot in place (and the project placed, so that which custom
    # constraints apply is known) the region itself is reported, at its value: a
    # warning, since a topic that lists it already keeps it (plan decides).
    (tmp_path / "org-policy.yaml").write_text(
        FORBIDS_ASIA + "---\nancestry: {projects/acme-payments: organizations/1}\n"
    )
    checked = run_cli("validate", str(tmp_path), "--require-org-policy")
    assert checked.exit_code == 0
    assert f"{tmp_path / 't.yaml'}:5:54: warning[org-location-denied]: region 'asia-east1'" in (
        checked.stdout
    )


def test_pre_commit_example_requires_the_snapshot() -> None:
    config = yaml.safe_load((ROOT / "examples" / "pre-commit-config.yaml").read_text())
    (hook,) = config["repos"][0]["hooks"]
    assert hook["id"] == "reconcile-validate"
    assert "--require-org-policy" in hook["args"]


def test_utf16_and_utf32_files_are_asked_to_be_utf8(run_cli, tmp_path: Path) -> None:
    (tmp_path / "org-policy.yaml").write_text("")
    (tmp_path / "a.yaml").write_bytes(GOOD.encode("utf-16"))
    (tmp_path / "b.yaml").write_bytes(GOOD.encode("utf-16-le"))  # no byte-order mark
    (tmp_path / "c.yaml").write_bytes(GOOD.encode("utf-32"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{tmp_path / 'a.yaml'}:1:1: error[file-encoding]: the file is encoded as UTF-16, "
        "not UTF-8; save it as UTF-8",
        f"{tmp_path / 'b.yaml'}:1:1: error[file-encoding]: the file is encoded as UTF-16, "
        "not UTF-8; save it as UTF-8",
        f"{tmp_path / 'c.yaml'}:1:1: error[file-encoding]: the file is encoded as UTF-32, "
        "not UTF-8; save it as UTF-8",
    ]


def test_a_tab_is_called_a_tab(run_cli, tmp_path: Path) -> None:
    (tmp_path / "org-policy.yaml").write_text("")
    tabbed = tmp_path / "t.yaml"
    tabbed.write_text(GOOD.replace("  messageStoragePolicy", "\tmessageStoragePolicy"))
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{tabbed}:5:1: error[yaml-syntax]: YAML syntax error: a tab")
    assert "replace the tab with spaces" in result.stdout


def test_nested_merge_keys_are_read_once_each(run_cli, tmp_path: Path) -> None:
    # Each level merges the previous one ten times: 10^8 merge steps when every
    # merge is expanded again (99 s); each mapping is flattened once instead.
    text = "a0: &a0 {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7, k8: 8, k9: 9}\n"
    for level in range(1, 9):
        merges = ", ".join(f"*a{level - 1}" for _ in range(10))
        text += f"a{level}: &a{level} {{<<: [{merges}], x{level}: 1}}\n"
    nested = tmp_path / "nested.yaml"
    nested.write_text(text)
    budget = Budget()
    (doc,) = load_documents(nested, budget=budget)
    assert sorted(doc.data["a8"]) == sorted([f"k{i}" for i in range(10)] + [
        f"x{i}" for i in range(1, 9)
    ])
    assert budget.spent < 2_000


def test_merge_keys_count_against_the_expansion_budget(run_cli, tmp_path: Path) -> None:
    # One mapping merging a 1,000-key mapping 1,000 times: a million copied pairs
    # from 13 KB, though the merged result has only 1,000 keys.
    big = ", ".join(f"k{i}: {i}" for i in range(1000))
    merges = ", ".join(["*big"] * 1000)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(f"big: &big {{{big}}}\nmerged: {{<<: [{merges}]}}\n")
    result = run_cli("validate", str(bomb))
    assert result.exit_code == 1
    assert f"{bomb}:1:6: error[yaml-too-large]: the document expands to" in result.stdout
    assert "merge-key one?" in result.stdout


def test_yaml_11_boolean_key_in_a_policy_is_named(run_cli, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(GOOD.replace("asia-east1", "us-east1"))
    policy = tmp_path / "org-policy.yaml"
    policy.write_text(FORBIDS_ASIA + "yes: 1\n")
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert f"{policy}:3:1: error[yaml-key-quote]: the key yes is read by YAML 1.1" in (
        result.stdout
    )
    assert f"{policy}:3:1: error[policy-unknown-field]: unknown field 'yes' in a policy" in (
        result.stdout
    )
