"""`validate` never passes a custom constraint in silence: a project the snapshot does
not place under an organization, and a constraint whose condition reconcile's CEL
library cannot compile, are named once per project as not judged (warnings; errors
with --require-org-policy), and `--allow-unjudged` lets them through only as
warnings that say so, its own use reported in every format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.specs_support import topic_doc

PROJECT = "shop-prod"
NO_ANCESTRY = """\
name: projects/shop-prod/policies/gcp.resourceLocations
spec: {rules: [{allowAll: true}]}
"""
LOWER = """\
name: organizations/123/customConstraints/custom.lower
resourceTypes: [pubsub.googleapis.com/Topic]
methodTypes: [CREATE, UPDATE]
condition: "resource.name.lowerAscii().endsWith('-tmp')"
actionType: DENY
description: No temporary topics.
---
name: projects/shop-prod/policies/custom.lower
MODE: {rules: [{enforce: true}]}
---
ancestry: {projects/shop-prod: organizations/123}
"""


def _tree(tmp_path: Path, snapshot: str, topics: int = 3) -> tuple[Path, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text("---\n".join(
        topic_doc(f"topic{i}", project=PROJECT) for i in range(topics)
    ))
    snap = tmp_path / "org-policy.yaml"
    snap.write_text(snapshot)
    return specs, snap


def _validate(run_cli: Any, specs: Path, snap: Path, *extra: str) -> Any:
    return run_cli("validate", str(specs), "--org-policy", str(snap), *extra)


def _rows(out: str, code: str) -> list[str]:
    return [row for row in out.splitlines() if f"[{code}]" in row]


def test_no_ancestry_is_said_once_per_project(run_cli: Any, tmp_path: Path) -> None:
    specs, snap = _tree(tmp_path, NO_ANCESTRY)
    warned = _validate(run_cli, specs, snap)
    assert warned.exit_code == 0, warned.stdout
    (row,) = _rows(warned.stdout, "org-custom-no-ancestry")  # three topics, one line
    assert row.startswith(f"{snap}:1:1: warning[org-custom-no-ancestry]: custom constraints not "
                          f"judged for project {PROJECT}: the snapshot's `ancestry:` does "
                          f"not place projects/{PROJECT} under an organization")
    assert f"`reconcile policy pull --project {PROJECT}` writes the project's ancestry" in row
    assert f"`projects/{PROJECT}: none` for a project in no organization" in row
    required = _validate(run_cli, specs, snap, "--require-org-policy")
    assert required.exit_code == 1
    (row,) = _rows(required.stdout, "org-custom-no-ancestry")
    assert "error[org-custom-no-ancestry]" in row
    # A project placed under a folder with no organization above it is unknown too.
    snap.write_text(NO_ANCESTRY + "---\nancestry: {projects/shop-prod: folders/9}\n")
    placed = _validate(run_cli, specs, snap, "--require-org-policy")
    assert placed.exit_code == 1
    (row,) = _rows(placed.stdout, "org-custom-no-ancestry")
    assert f"{snap}:4:1: error[org-custom-no-ancestry]" in row  # at `ancestry:`
    assert "places projects/shop-prod under folders/9 but no organization above it" in row


def test_a_project_in_no_organization_is_said_so_and_judged(run_cli: Any, tmp_path: Path
                                                             ) -> None:
    """`projects/P: none` (what `policy pull` writes for a project Resource Manager
    places in no folder or organization): no custom constraint applies to it, so
    nothing is left unjudged, even with --require-org-policy."""
    specs, snap = _tree(tmp_path, NO_ANCESTRY + f"---\nancestry: {{projects/{PROJECT}: none}}\n")
    required = _validate(run_cli, specs, snap, "--require-org-policy")
    assert required.exit_code == 0, required.stdout
    assert required.stdout == ""
    # Only a project may be in none; said at the entry, as any malformed one.
    snap.write_text(NO_ANCESTRY + "---\nancestry: {folders/9: none}\n")
    folder = _validate(run_cli, specs, snap)
    assert folder.exit_code == 1
    assert (f"{snap}:4:23: error[policy-ancestry-entry]: ancestry entry folders/9: none: "
            "only a project may be in no folder or organization") in folder.stdout
    # Given twice, once placed and once not: the second is the error.
    snap.write_text(NO_ANCESTRY + f"---\nancestry: {{projects/{PROJECT}: organizations/1}}\n"
                    f"---\nancestry: {{projects/{PROJECT}: none}}\n")
    twice = _validate(run_cli, specs, snap)
    assert twice.exit_code == 1
    assert f"{snap}:6:12: error[policy-duplicate]: the ancestry of projects/{PROJECT} is " \
           "given twice (first at" in twice.stdout


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_the_opt_out_is_reported_in_every_format(
    run_cli: Any, tmp_path: Path, fmt: str
) -> None:
    specs, snap = _tree(tmp_path, NO_ANCESTRY)
    result = _validate(run_cli, specs, snap, "--require-org-policy", "--allow-unjudged", "all",
                       "--format", fmt)
    assert result.exit_code == 0, result.stdout
    let_through = (
        "--allow-unjudged all: 1 custom-constraint finding that reconcile could not judge "
        f"did not stop this run (the custom constraints of project {PROJECT})"
    )
    marked = "not judged, and let through by --allow-unjudged all"
    if fmt == "json":
        said = {d["code"]: d for d in json.loads(result.stdout)}
        assert said["org-custom-unjudged-allowed"]["severity"] == "warning"
        assert let_through in said["org-custom-unjudged-allowed"]["message"]
        assert said["org-custom-no-ancestry"]["severity"] == "warning"
        assert marked in said["org-custom-no-ancestry"]["message"]
    elif fmt == "sarif":
        results = json.loads(result.stdout)["runs"][0]["results"]
        levels = {r["ruleId"]: (r["level"], r["message"]["text"]) for r in results}
        assert levels["org-custom-unjudged-allowed"][0] == "warning"
        assert let_through in levels["org-custom-unjudged-allowed"][1]
        assert marked in levels["org-custom-no-ancestry"][1]
    elif fmt == "github":
        (row,) = [r for r in result.stdout.splitlines() if "org-custom-unjudged-allowed" in r]
        assert row.startswith("::warning file=") and let_through in row, row
    else:
        (row,) = _rows(result.stdout, "org-custom-unjudged-allowed")
        assert row.startswith(f"{specs}: warning[org-custom-unjudged-allowed]: {let_through}")
        (row,) = _rows(result.stdout, "org-custom-no-ancestry")
        assert "warning[org-custom-no-ancestry]" in row and marked in row


def test_an_opt_out_that_lets_nothing_through_is_still_reported(
    run_cli: Any, tmp_path: Path
) -> None:
    specs, snap = _tree(tmp_path, NO_ANCESTRY + "---\nancestry: {projects/shop-prod: "
                        "organizations/123}\n")
    result = _validate(run_cli, specs, snap, "--allow-unjudged", "custom.euOnly")
    assert result.exit_code == 0, result.stdout
    (row,) = _rows(result.stdout, "org-custom-unjudged-allowed")
    assert "--allow-unjudged custom.euOnly was given, and let nothing through" in row
    # It names a constraint the snapshot does not define: said so, not "judged".
    assert ("custom.euOnly is not a custom constraint that the org-policy snapshot "
            "defines") in row, row
    assert "every constraint it names was judged" not in row


def test_a_misspelt_opt_out_is_said_to_name_nothing_with_the_nearest_id(
    run_cli: Any, tmp_path: Path
) -> None:
    """Once "let nothing through: every constraint it names was judged or needed no
    judging" for a typo: a CI opt-out that looked valid."""
    specs, snap = _tree(tmp_path, LOWER.replace("MODE", "spec"))
    result = _validate(run_cli, specs, snap, "--allow-unjudged", "custom.lowr")
    (row,) = _rows(result.stdout, "org-custom-unjudged-allowed")
    assert ("custom.lowr (did you mean custom.lower?) is not a custom constraint that the "
            "org-policy snapshot defines") in row, row


def test_a_value_that_names_no_constraint_is_a_usage_error(
    run_cli: Any, tmp_path: Path
) -> None:
    specs, snap = _tree(tmp_path, NO_ANCESTRY)
    result = _validate(run_cli, specs, snap, "--allow-unjudged", "euOnly")
    assert result.exit_code == 2
    assert "Invalid value for '--allow-unjudged'" in result.stderr
    assert "a custom constraint id starts with 'custom.'" in result.stderr


@pytest.mark.parametrize("mode", ["spec", "dryRunSpec"])
def test_a_condition_the_library_cannot_compile(
    run_cli: Any, tmp_path: Path, mode: str
) -> None:
    text = LOWER.replace("MODE", mode)
    specs, snap = _tree(tmp_path, text)
    # Column 26 of the condition (its `(` after lowerAscii), after `condition: "`.
    where = f"{snap}:4:37:"
    warned = _validate(run_cli, specs, snap)
    assert warned.exit_code == 0, warned.stdout
    (row,) = _rows(warned.stdout, "org-custom-uncompilable")
    state = "enforced" if mode == "spec" else "dry-run"
    assert row.startswith(f"{where} warning[org-custom-uncompilable]: custom constraint "
                          f"custom.lower ({state} in project {PROJECT}) is not judged: its "
                          "condition uses what reconcile's CEL library does not have "
                          "(undeclared reference to 'lowerAscii'"), row
    assert "docs/custom-constraints.md#the-cel-that-conditions-use" in row
    required = _validate(run_cli, specs, snap, "--require-org-policy")
    (row,) = _rows(required.stdout, "org-custom-uncompilable")
    if mode == "dryRunSpec":  # a dry run only warns, even then
        assert required.exit_code == 0 and "warning[" in row, required.stdout
        return
    assert required.exit_code == 1 and row.startswith(f"{where} error["), required.stdout
    allowed = _validate(run_cli, specs, snap, "--require-org-policy", "--allow-unjudged",
                        "custom.lower")
    assert allowed.exit_code == 0, allowed.stdout
    (row,) = _rows(allowed.stdout, "org-custom-unjudged-allowed")
    assert "custom.lower in shop-prod" in row


@pytest.mark.parametrize(("condition", "said"), [
    ("(" * 33 + "true" + ")" * 33, "Expression recursion limit exceeded. limit: 32"),
    ("size(resource.name) " + "+ 1 " * 40 + "> 0",
     "Exceeded max recursion depth of 32 when parsing."),
])
def test_a_condition_deeper_than_the_library_nests_is_not_judged_not_refused(
    run_cli: Any, tmp_path: Path, condition: str, said: str
) -> None:
    """Valid CEL within the service's 1,000 characters, deeper than the library's 32
    levels: once `custom-condition` "is not valid CEL ... the service refuses it too"
    at a made-up column 1 (CEL's conformance asks for at least 12 levels, and nothing
    public gives the service's limit)."""
    text = LOWER.replace("resource.name.lowerAscii().endsWith('-tmp')", condition).replace(
        "MODE", "spec")
    specs, snap = _tree(tmp_path, text)
    warned = _validate(run_cli, specs, snap)
    assert warned.exit_code == 0, warned.stdout
    assert "custom-condition" not in warned.stdout and "refuses it too" not in warned.stdout
    (row,) = _rows(warned.stdout, "org-custom-uncompilable")
    assert (f"({said} (a nesting limit of reconcile's CEL library), the condition as a "
            "whole)") in row, row
    required = _validate(run_cli, specs, snap, "--require-org-policy")
    assert required.exit_code == 1 and "error[org-custom-uncompilable]" in required.stdout
