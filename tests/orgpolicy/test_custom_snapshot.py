"""Custom constraints and their policies in an org-policy snapshot, validated like specs:
each problem an error (or warning) at its line in the snapshot file, as `reconcile
validate --org-policy` shows it; a good snapshot loads, round-trips through the
writer, and tells which constraints each project enforces or dry-runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.orgpolicy.snapshot import dump_snapshot, load_snapshot

TOPIC_SPEC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: shop-prod, name: orders}
spec:
  messageStoragePolicy:
    allowedPersistenceRegions: [europe-west1]
"""

GOOD = """\
name: organizations/123/customConstraints/custom.euOnly
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE, UPDATE]
condition: >-
  resource.messageStoragePolicy.allowedPersistenceRegions.all(r,
  r.startsWith('europe-'))
actionType: ALLOW
displayName: EU only
description: Topics keep messages in Europe.
---
name: organizations/123/customConstraints/custom.noTransforms
resource_types: [pubsub.googleapis.com/Topic, pubsub.googleapis.com/Subscription]
method_types: [CREATE]
condition: "has(resource.messageTransforms) && size(resource.messageTransforms) > 0"
action_type: DENY
---
name: projects/shop-prod/policies/custom.euOnly
spec: {rules: [{enforce: true}]}
---
name: projects/shop-prod/policies/custom.noTransforms
dryRunSpec: {rules: [{enforce: true}]}
---
name: projects/shop-prod/policies/pubsub.managed.disableTopicMessageTransforms
spec: {rules: [{enforce: true}]}
---
ancestry:
  projects/shop-prod: organizations/123
"""


def _tree(tmp_path: Path, snapshot: str) -> tuple[Path, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(TOPIC_SPEC)
    snap = tmp_path / "org-policy.yaml"
    snap.write_text(snapshot)
    return specs, snap


def _line(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


def test_good_snapshot_validates_loads_and_round_trips(run_cli: Any, tmp_path: Path) -> None:
    specs, snap = _tree(tmp_path, GOOD)
    result = run_cli("validate", str(specs), "--org-policy", str(snap))
    assert result.exit_code == 0, result.stdout + result.stderr
    # The one warning: custom.noTransforms reads a field specs do not manage.
    warnings = [line for line in result.stdout.splitlines() if "warning[" in line]
    assert len(warnings) == 1 and "warning[org-custom-at-plan]" in warnings[0]
    assert "custom.noTransforms reads resource.messageTransforms" in warnings[0]

    store = load_snapshot(snap)
    modes = {
        c.constraint_id: mode
        for c, mode in store.custom_constraints_for(
            "projects/shop-prod", "pubsub.googleapis.com/Topic"
        )
    }
    assert modes == {"custom.euOnly": "enforced", "custom.noTransforms": "dry-run"}
    assert store.enforcement(
        "pubsub.managed.disableTopicMessageTransforms", "projects/shop-prod"
    ) == "enforced"

    again = tmp_path / "again.yaml"
    dump_snapshot(store, again)
    reread = load_snapshot(again)
    assert reread.custom_constraints == store.custom_constraints
    assert reread.policies == store.policies
    assert reread.ancestry == store.ancestry
    assert "dryRunSpec:" in again.read_text()


BAD = """\
name: organizations/123/customConstraints/custom.bad-id
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [UPDATE]
condition: "has(resource.kmsKeyName)"
actionType: MAYBE
colour: red
---
name: organizations/123/customConstraints/custom.syntax
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE]
condition: |
  has(resource.kmsKeyName) &&
    resource.kmsKeyName.startsWith('projects/') ||
actionType: ALLOW
---
name: organizations/123/customConstraints/custom.types
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE, DELETE]
condition: "resource.name.startsWith(1)"
actionType: DENY
---
name: organizations/123/customConstraints/custom.long
resourceTypes: [pubsub]
methodTypes: [CREATE]
condition: "LONG"
actionType: ALLOW
---
name: organizations/123/customConstraints/custom.LONGID
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE]
condition: "true"
actionType: ALLOW
---
name: projects/shop-prod/policies/custom.bad!
spec: {rules: [{enforce: true}]}
---
name: projects/shop-prod/policies/custom.missing
spec: {rules: [{values: {allowedValues: [a]}}]}
---
name: projects/elsewhere1/policies/custom.orphan
spec: {rules: [{enforce: true}]}
"""


def test_problems_are_errors_at_their_lines(run_cli: Any, tmp_path: Path) -> None:
    text = BAD.replace("LONGID", "a" * 66).replace("LONG", "true && " * 125 + "true")
    specs, snap = _tree(tmp_path, text)
    result = run_cli("validate", str(specs), "--org-policy", str(snap))
    assert result.exit_code == 1
    out = result.stdout

    def at(marker: str, col: int | None = None) -> str:
        line = _line(text, marker)
        return f"{snap}:{line}:{col}:" if col is not None else f"{snap}:{line}:"

    expected = [
        (at("custom.bad-id", 7), "error[custom-constraint]", "only letters and digits"),
        (at("methodTypes: [UPDATE]", 14), "error[custom-constraint]",
         "UPDATE-only custom constraints are not supported"),
        (at("actionType: MAYBE", 13), "error[custom-constraint]", "must be ALLOW or DENY"),
        (at("colour: red", 1), "error[policy-unknown-field]", "unknown field 'colour'"),
        # the end of the block scalar's last line, where the expression stops short
        (at("resource.kmsKeyName.startsWith('projects/') ||", 51),
         "error[custom-condition]", "the condition of custom.syntax is not valid CEL"),
        (at("methodTypes: [CREATE, DELETE]", 23), "error[custom-constraint]",
         "unknown method type 'DELETE'"),
        # column 25 of the condition, after `condition: "` (12 characters)
        (at("resource.name.startsWith(1)", 37), "error[custom-condition]",
         "no matching overload for 'startsWith'"),
        (at("resourceTypes: [pubsub]", 16), "error[custom-constraint]",
         "`resourceTypes` must be a list like"),
        (at('condition: "true && true'), "error[custom-constraint]",
         "the service allows at most 1000"),
        (at("custom.aaaa", 7), "error[custom-constraint]", "the service allows at most 70"),
        (at("custom.bad!", 7), "error[policy-name]", "only letters and digits"),
        (at("values: {allowedValues: [a]}"), "error[policy-rule]",
         "custom.missing is a boolean constraint"),
        (at("custom.orphan", 7), "warning[policy-ancestry]",
         "does not name its organization"),
    ]
    for where, kind, words in expected:
        assert any(
            line.startswith(where) and kind in line and words in line
            for line in out.splitlines()
        ), f"{where} {kind} {words}\n{out}"
    assert "custom.syntax is not valid CEL" in out and "(line 3, column 1 of the condition)" in out


def test_policy_on_an_undefined_constraint_is_a_warning_naming_the_pull(
    run_cli: Any, tmp_path: Path
) -> None:
    text = (
        "name: projects/shop-prod/policies/custom.unknownRule\n"
        "spec: {rules: [{enforce: true}]}\n"
        "---\n"
        "ancestry: {projects/shop-prod: organizations/123}\n"
    )
    specs, snap = _tree(tmp_path, text)
    result = run_cli("validate", str(specs), "--org-policy", str(snap))
    assert result.exit_code == 0
    assert f"{snap}:1:7: warning[policy-constraint]" in result.stdout
    assert "reconcile policy pull --organization 123" in result.stdout


@pytest.mark.parametrize(
    ("field", "line", "words"),
    [
        ("displayName", 8, "`displayName` is 201 characters"),
        ("description", 9, "`description` is 2001 characters"),
    ],
)
def test_length_limits(run_cli: Any, tmp_path: Path, field: str, line: int, words: str) -> None:
    long = "x" * (201 if field == "displayName" else 2001)
    text = GOOD.replace("displayName: EU only", f"displayName: {long}").replace(
        "description: Topics keep messages in Europe.", f"description: {long}"
    )
    specs, snap = _tree(tmp_path, text)
    result = run_cli("validate", str(specs), "--org-policy", str(snap))
    assert result.exit_code == 1
    assert any(
        row.startswith(f"{snap}:{line}:") and words in row for row in result.stdout.splitlines()
    ), result.stdout
