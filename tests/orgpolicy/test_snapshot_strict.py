"""The org-policy snapshot read strictly: a malformed or ambiguous constraint, policy or
ancestry entry is an error at its line, never dropped: `validate` fails on it, and the
local server refuses to be seeded from the same file with the same message (one
reader for both). A policy that enforces a custom constraint the snapshot does not
define is a warning at the policy's line, and an error with --require-org-policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions

from reconciler.errors import InputError
from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import reconcile_process
from tests.specs_support import topic_doc

PROJECT = "shop-prod"
ORG = "organizations/123"
DENY_TEAM = """\
name: organizations/123/customConstraints/custom.noTeam
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE, UPDATE]
condition: "'team' in resource.labels"
actionType: DENY
displayName: No team labels
description: Teams are not labels here.
---
name: projects/shop-prod/policies/custom.noTeam
spec: {rules: [{enforce: true}]}
---
ancestry:
  projects/shop-prod: organizations/123
"""


def _tree(tmp_path: Path, snapshot: str) -> tuple[Path, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(topic_doc("orders", project=PROJECT,
                                                 labels={"team": "pay"}))
    snap = tmp_path / "org-policy.yaml"
    snap.write_text(snapshot)
    return specs, snap


def _line(text: str, marker: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(text.splitlines(), 1) if marker in line][nth]


def _validate(run_cli: Any, specs: Path, snap: Path, *extra: str) -> Any:
    return run_cli("validate", str(specs), "--org-policy", str(snap), *extra)


def test_the_good_snapshot_refuses_the_topic(run_cli: Any, tmp_path: Path) -> None:
    """The baseline the two-spellings case must not fall below."""
    specs, snap = _tree(tmp_path, DENY_TEAM)
    result = _validate(run_cli, specs, snap, "--require-org-policy")
    assert result.exit_code == 1, result.stdout
    assert "error[org-custom-constraint]" in result.stdout
    assert "breaks custom constraint custom.noTeam" in result.stdout


@pytest.mark.parametrize(("camel", "snake", "value"), [
    ("displayName", "display_name", "No team labels"),
    ("resourceTypes", "resource_types", "[pubsub.googleapis.com/Topic]"),
    ("methodTypes", "method_types", "[CREATE, UPDATE]"),
    ("actionType", "action_type", "DENY"),
    ("updateTime", "update_time", "'2026-01-01T00:00:00Z'"),
])
def test_a_field_spelled_both_ways_is_an_error_at_its_line(
    run_cli: Any, tmp_path: Path, camel: str, snake: str, value: str
) -> None:
    both = f"{snake}: {value}" if camel != "updateTime" else (
        f"{camel}: {value}\n{snake}: {value}")  # the others are spelled camelCase already
    text = DENY_TEAM.replace("description: Teams", f"{both}\ndescription: Teams")
    specs, snap = _tree(tmp_path, text)
    result = _validate(run_cli, specs, snap, "--require-org-policy")
    assert result.exit_code == 1, result.stdout
    where = f"{snap}:{_line(text, snake + ':')}:1: error[policy-duplicate-field]"
    message = (
        f"a custom constraint gives field {camel!r} twice, as {camel!r} and as {snake!r}"
    )
    (line,) = [row for row in result.stdout.splitlines() if row.startswith(where)]
    assert message in line, result.stdout
    # An error, not a warning that the policy's constraint "is not defined".
    assert "does not define" not in result.stdout, result.stdout
    # The seed path reads the same file with the same reader: the same message.
    with pytest.raises(InputError) as refused:
        load_snapshot(snap)
    assert line.split(": ", 1)[1] in str(refused.value)


def test_the_local_server_refuses_to_be_seeded_from_it(tmp_path: Path) -> None:
    text = DENY_TEAM.replace("description: Teams", "display_name: Other\ndescription: Teams")
    _, snap = _tree(tmp_path, text)
    result = reconcile_process(
        "local-server", "--org-policy", str(snap), "--port", "0", cwd=tmp_path, timeout=60
    )
    assert result.exit_code == 1, result.stderr
    assert "the org-policy snapshot has problems" in result.stderr
    assert (
        f"{snap}:{_line(text, 'display_name:')}:1: error[policy-duplicate-field]"
    ) in result.stderr


POLICY_BOTH_WAYS = """\
name: projects/shop-prod/policies/pubsub.enforceInTransitRegions
spec: {rules: [{enforce: true}]}
dry_run_spec: {rules: [{enforce: true}]}
dryRunSpec: {rules: [{enforce: false}]}
---
name: projects/shop-prod/policies/gcp.resourceLocations
spec:
  inheritFromParent: true
  inherit_from_parent: false
  rules:
    - allowAll: true
      allow_all: false
"""


def test_policy_fields_spelled_both_ways(run_cli: Any, tmp_path: Path) -> None:
    specs, snap = _tree(tmp_path, POLICY_BOTH_WAYS + "---\nancestry: {projects/shop-prod: "
                        "organizations/123}\n")
    result = _validate(run_cli, specs, snap)
    assert result.exit_code == 1
    for key, field, what in (
        ("dryRunSpec:", "dryRunSpec", "a policy"),
        ("inherit_from_parent:", "inheritFromParent", "a policy spec"),
        ("allow_all:", "allowAll", "a rule"),
    ):
        line = _line(POLICY_BOTH_WAYS, key)
        assert any(
            row.startswith(f"{snap}:{line}:") and "error[policy-duplicate-field]" in row
            and f"{what} gives field {field!r} twice" in row
            for row in result.stdout.splitlines()
        ), (key, result.stdout)


WRONG = """\
name: organizations/123/customConstraints/custom.noTeam
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE]
condition: "'team' in resource.labels"
actionType: DENY
displayName: 5
updateTime: 7
---
name: organizations/123/customConstraints/custom.noTeam
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE]
condition: "'team' in resource.labels"
actionType: DENY
---
name: organizations/123/customConstraints/custom.noTeam
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE]
condition: "'team' in resource.labels"
actionType: DENY
---
name: projects/shop-prod/policies/custom.noTeam
etag: 12
spec: {rules: [{enforce: true}], reset: "no", updateTime: 3}
alternate: [x]
---
name: projects/shop-prod/policies/gcpresourceLocations
spec: {rules: [{allowAll: true}]}
---
name: projects/shop-prod/policies/gcp..resourceLocations
spec: {rules: [{allowAll: true}]}
---
ancestry:
  projects/shop-prod: organizations/123
  projects/other-one: projects/shop-prod
  folders/12: acme
  organizations/123: folders/12
  folders/5: folders/6
  folders/6: folders/7
  folders/7: folders/5
  folders/abc: organizations/123
---
ancestry:
  projects/shop-prod: folders/5
"""


def test_types_duplicates_names_and_ancestry(run_cli: Any, tmp_path: Path) -> None:
    specs, snap = _tree(tmp_path, WRONG)
    result = _validate(run_cli, specs, snap)
    assert result.exit_code == 1
    out = result.stdout.splitlines()

    def said(line: int, code: str, words: str) -> bool:
        return any(
            row.startswith(f"{snap}:{line}:") and f"error[{code}]" in row and words in row
            for row in out
        )

    expected = [
        (_line(WRONG, "displayName: 5"), "custom-constraint", "`displayName` must be text"),
        (_line(WRONG, "updateTime: 7"), "policy-format", "`updateTime` must be text"),
        (_line(WRONG, "custom.noTeam", 2), "policy-duplicate",
         "custom constraint organizations/123/customConstraints/custom.noTeam appears twice"),
        (_line(WRONG, "etag: 12"), "policy-format", "`etag` must be text"),
        (_line(WRONG, 'reset: "no"'), "policy-format", "`reset` must be true or false"),
        (_line(WRONG, 'reset: "no"'), "policy-format", "`updateTime` must be text"),
        (_line(WRONG, "alternate: [x]"), "policy-format", "`alternate` must be a mapping"),
        (_line(WRONG, "gcpresourceLocations"), "policy-name",
         "'gcpresourceLocations' is not a constraint name"),
        (_line(WRONG, "gcp..resourceLocations"), "policy-name",
         "'gcp..resourceLocations' is not a constraint name"),
        (_line(WRONG, "projects/other-one:"), "policy-ancestry-entry",
         "'projects/shop-prod' cannot be a parent"),
        (_line(WRONG, "folders/12: acme"), "policy-ancestry-entry", "'acme' cannot be a parent"),
        (_line(WRONG, "organizations/123: folders/12"), "policy-ancestry-entry",
         "'organizations/123' cannot be a child"),
        (_line(WRONG, "folders/5: folders/6"), "policy-ancestry-entry",
         "the ancestry loops: folders/5 -> folders/6 -> folders/7 -> folders/5"),
        (_line(WRONG, "folders/abc:"), "policy-ancestry-entry",
         "folders are named by number"),
        (_line(WRONG, "projects/shop-prod: folders/5"), "policy-duplicate",
         f"the ancestry of projects/shop-prod is given twice (first at {snap}:"
         f"{_line(WRONG, 'projects/shop-prod: organizations/123')})"),
    ]
    for line, code, words in expected:
        assert said(line, code, words), (line, code, words, result.stdout)
    # Each loop is said once.
    assert sum("the ancestry loops" in row for row in out) == 1, result.stdout
    # The seed path refuses the same file.
    with pytest.raises(InputError, match="the ancestry loops"):
        load_snapshot(snap)


UNDEFINED = """\
name: projects/shop-prod/policies/custom.unknownRule
spec: {rules: [{enforce: true}]}
---
ancestry: {projects/shop-prod: organizations/123}
"""


def test_a_policy_on_an_undefined_constraint(run_cli: Any, tmp_path: Path) -> None:
    specs, snap = _tree(tmp_path, UNDEFINED)
    where = f"{snap}:1:7:"
    warned = _validate(run_cli, specs, snap)
    assert warned.exit_code == 0, warned.stdout
    assert f"{where} warning[policy-constraint]" in warned.stdout
    assert "custom.unknownRule, which the snapshot does not define" in warned.stdout
    required = _validate(run_cli, specs, snap, "--require-org-policy")
    assert required.exit_code == 1, required.stdout
    assert f"{where} error[policy-constraint]" in required.stdout


@pytest.mark.parametrize(("written", "message"), [
    ("[pubsub.googleapis.com/topic]", "unknown Pub/Sub resource type "
     "'pubsub.googleapis.com/topic' (did you mean 'pubsub.googleapis.com/Topic'?)"),
    ("[PubSub.googleapis.com/Topic]", "unknown Pub/Sub resource type "
     "'PubSub.googleapis.com/Topic' (did you mean 'pubsub.googleapis.com/Topic'?)"),
    ("[pubsub.googleapis.com/Topics]", "unknown Pub/Sub resource type "
     "'pubsub.googleapis.com/Topics'; the service knows pubsub.googleapis.com/Topic"),
    ("[pubsub.googleapis.com/Topic, pubsub.googleapis.com/Topic]",
     "`resourceTypes` names a value twice"),
])
def test_a_resource_type_off_by_a_letter_is_an_error_not_a_constraint_that_binds_nothing(
    run_cli: Any, tmp_path: Path, orgpolicy_client: Any, written: str, message: str
) -> None:
    """Once read as written: a constraint on `pubsub.googleapis.com/topic` bound no
    topic, and `validate --require-org-policy` passed what the service would refuse."""
    text = DENY_TEAM.replace("resourceTypes: [pubsub.googleapis.com/Topic]",
                             f"resourceTypes: {written}")
    specs, snap = _tree(tmp_path, text)
    result = _validate(run_cli, specs, snap, "--require-org-policy")
    assert result.exit_code == 1, result.stdout
    assert f"{snap}:2:" in result.stdout and message in result.stdout, result.stdout
    # The Org Policy API of the local server refuses it with the same words.
    with pytest.raises(exceptions.InvalidArgument) as refused:
        orgpolicy_client.create_custom_constraint(parent=ORG, custom_constraint={
            "name": f"{ORG}/customConstraints/custom.noTeam",
            "resource_types": written.strip("[]").split(", "),
            "method_types": ["CREATE"], "condition": "true", "action_type": "DENY",
        })
    assert message.split(";")[0] in str(refused.value.message)


def test_another_service_s_resource_type_is_its_own_to_check(
    run_cli: Any, tmp_path: Path
) -> None:
    """A snapshot holds the organization's every custom constraint: one on Compute
    Engine's instances is read and binds no topic."""
    text = DENY_TEAM.replace("resourceTypes: [pubsub.googleapis.com/Topic]",
                             "resourceTypes: [compute.googleapis.com/Instance]")
    specs, snap = _tree(tmp_path, text)
    result = _validate(run_cli, specs, snap, "--require-org-policy")
    assert result.exit_code == 0, result.stdout


@pytest.mark.parametrize(("old", "new", "message"), [
    ("projects/shop-prod: organizations/123", "projects/shop-prod: organizations/0123",
     "organizations are named by number, without leading zeros"),
    ("name: organizations/123/customConstraints", "name: organizations/0123/customConstraints",
     "organizations are named by number, without leading zeros"),
    ("projects/shop-prod: organizations/123", "projects/shop-prod: organizations/١٢٣",
     "organizations are named by number, without leading zeros"),
])
def test_a_number_written_otherwise_than_the_service_writes_it_is_an_error(
    run_cli: Any, tmp_path: Path, old: str, new: str, message: str
) -> None:
    """Once `organizations/0123` was read as another organization than 123: its
    constraints applied to no project, a pass with no word said."""
    specs, snap = _tree(tmp_path, DENY_TEAM.replace(old, new))
    result = _validate(run_cli, specs, snap)
    assert result.exit_code == 1, result.stdout
    assert message in result.stdout, result.stdout
