"""`--format github` (workflow annotations) and `--format sarif` (a SARIF 2.1.0 log for
code scanning) of `validate` and `plan`: what a pull request shows at the spec line,
and a log that the OASIS schema accepts (read from the shared data, never copied)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from tests.plan.test_plan_cli import OWN, plan
from tests.shared_data import shared_data
from tests.specs_support import topic_doc


@cache
def sarif_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(shared_data("sarif-schema-2.1.0.json").read_text())
    return schema


def valid_sarif(text: str) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(text)
    jsonschema.validate(log, sarif_schema())
    return log


def validate_bad_tree(run_cli: Any, tmp_path: Path, monkeypatch: Any, fmt: str) -> Any:
    """`reconcile validate specs --format FMT` in tmp_path, on a tree with one error in
    a file whose name holds the annotation's separators (it must stay one property)."""
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ok.yaml").write_text(topic_doc("orders"))
    (specs / "odd, name: 100%.yaml").write_text(topic_doc("goog-orders"))
    result = run_cli("validate", "specs", "--format", fmt)
    assert result.exit_code == 1
    return result


def test_validate_github_annotates_each_problem_at_its_line(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    result = validate_bad_tree(run_cli, tmp_path, monkeypatch, "github")
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith(
        "::warning file=specs,title=reconcile org-policy-missing::no org-policy snapshot "
        "found (looked for org-policy.yaml in "
    )
    assert lines[1] == (
        "::error file=specs/odd%2C name%3A 100%25.yaml,line=3,col=35,title=reconcile "
        "topic-id::topic ID 'goog-orders' must not start with 'goog' (reserved by Google)"
    )
    assert "2 files checked: 1 error, 1 warning" in result.stderr


def test_validate_sarif_is_a_schema_valid_log_with_each_problem_at_its_line(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    result = validate_bad_tree(run_cli, tmp_path, monkeypatch, "sarif")
    log = valid_sarif(result.stdout)
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "reconcile"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    error = by_rule["topic-id"]
    assert error["level"] == "error"
    assert rules[error["ruleIndex"]] == "topic-id"
    assert error["message"]["text"] == (
        "topic ID 'goog-orders' must not start with 'goog' (reserved by Google)"
    )
    (where,) = error["locations"]
    assert where["physicalLocation"] == {
        "artifactLocation": {"uri": "specs/odd%2C%20name%3A%20100%25.yaml"},
        "region": {"startLine": 3, "startColumn": 35},
    }
    # A finding about the whole tree has no line: code scanning needs one, line 1.
    missing = by_rule["org-policy-missing"]
    assert missing["level"] == "warning"
    assert missing["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}


def test_validate_sarif_of_a_clean_tree_is_a_valid_empty_log(
    run_cli: Any, tmp_path: Path
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ok.yaml").write_text(topic_doc("orders"))
    result = run_cli("validate", str(specs), "--format", "sarif")
    assert result.exit_code == 0
    results = valid_sarif(result.stdout)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["org-policy-missing"]


def test_plan_github_and_sarif_put_drift_and_diagnostics_at_the_spec_line(
    run_cli: Any, local_server: Any, seed: Any, specs: Any, org_policy_file: Any
) -> None:
    seed("too-wide", OWN, ["us-central1", "us-east1", "asia-east1"])
    root = specs(topic_doc("fine"), topic_doc("too-wide"))
    policy = str(org_policy_file(["us-central1", "us-east1"]))
    result = plan(run_cli, local_server, root, "--org-policy", policy, "--format", "github")
    assert result.exit_code == 0, result.stderr
    file = f"{root}/topics.yaml".replace(":", "%3A").replace(",", "%2C")
    drift = [line for line in result.stdout.splitlines() if "drift" in line]
    assert drift == [
        f"::warning file={file},line=6,title=reconcile drift-allows-disallowed-locations::"
        "projects/proj-a/topics/too-wide: " + drift[0].split("too-wide: ", 1)[1]
    ], result.stdout
    assert "asia-east1" in drift[0] and "(fix: " in drift[0]

    sarif = plan(run_cli, local_server, root, "--org-policy", policy, "--format", "sarif")
    assert sarif.exit_code == 0, sarif.stderr
    (run,) = valid_sarif(sarif.stdout)["runs"]
    (result_,) = [r for r in run["results"] if r["ruleId"].startswith("drift-")]
    assert result_["level"] == "warning"
    assert result_["locations"][0]["physicalLocation"]["region"] == {"startLine": 6}


def test_plan_github_with_a_spec_error_annotates_it_and_exits_1(
    run_cli: Any, local_server: Any, specs: Any, org_policy_file: Any
) -> None:
    root = specs(topic_doc("goog-x"))
    policy = str(org_policy_file(["us-east1"]))
    result = plan(run_cli, local_server, root, "--org-policy", policy, "--format", "github")
    assert result.exit_code == 1
    assert f"::error file={root}/topics.yaml,line=3,col=35,title=reconcile topic-id::" in (
        result.stdout
    ), result.stdout
