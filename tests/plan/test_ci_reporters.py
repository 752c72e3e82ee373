"""`--format github` (workflow annotations) and `--format sarif` (a SARIF 2.1.0 log for
code scanning) of `validate` and `plan`: what a pull request shows at the spec line,
and a log that the OASIS schema accepts (read from the shared data, never copied)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import jsonschema

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.render import diagnostics as report
from tests.cli_support import reconcile_process
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


# -- a file name that is not UTF-8 (issue 49, item 5) -----------------------------------

BAD_NAME = b"orders\xff.yaml"  # reaches reconcile as the lone surrogate '\udcff'


def not_utf8_tree(tmp_path: Path, doc: str) -> Path:
    """specs/ holding one spec file whose name is not valid UTF-8."""
    specs = tmp_path / "specs"
    specs.mkdir()
    with open(os.fsencode(specs) + b"/" + BAD_NAME, "wb") as f:
        f.write(doc.encode())
    return specs


def test_validate_names_a_file_that_is_not_utf8_in_every_format(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Every format names the file so that its bytes come back; SARIF's uri is its
    bytes percent-encoded (it was an internal error and an empty log)."""
    monkeypatch.chdir(tmp_path)
    not_utf8_tree(tmp_path, "")  # empty: a warning at line 1
    sarif = run_cli("validate", "specs", "--format", "sarif")
    assert sarif.exit_code == 0, sarif.stderr
    (result,) = [r for r in valid_sarif(sarif.stdout)["runs"][0]["results"]
                 if r["ruleId"] == "empty-file"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "specs/orders%FF.yaml"
    assert unquote_to_bytes(uri) == b"specs/" + BAD_NAME

    listed = run_cli("validate", "specs", "--format", "json")
    assert listed.exit_code == 0, listed.stderr
    files = [os.fsencode(d["file"]) for d in json.loads(listed.stdout)]
    assert b"specs/" + BAD_NAME in files

    github = run_cli("validate", "specs", "--format", "github")
    assert "::warning file=specs/orders\\udcff.yaml,line=1,col=1,title=reconcile empty-file::" in (
        github.stdout
    )
    text = run_cli("validate", "specs")
    assert "specs/orders\\udcff.yaml:1:1: warning[empty-file]" in text.stdout


def test_plan_show_apply_and_residency_with_a_file_name_that_is_not_utf8(
    run_cli: Any, local_server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Every format of plan (it was an internal error in all of them), the plan file
    written and read back (its source keeps the name's bytes), apply's outcome and
    the residency report."""
    monkeypatch.chdir(tmp_path)
    not_utf8_tree(tmp_path, topic_doc(
        "orders", storage="{allowedPersistenceRegions: [us-east1]}",
        publishers="{regions: [europe-west1], messageOrdering: false}",
    ))
    target = ("--emulator", local_server.address)
    for fmt in ("text", "markdown", "github"):
        shown = run_cli("plan", "specs", *target, "--format", fmt)
        assert shown.exit_code == 0, (fmt, shown.stderr)
    github = run_cli("plan", "specs", *target, "--format", "github").stdout
    assert "::warning file=specs/orders\\udcff.yaml,line=6," in github
    sarif = run_cli("plan", "specs", *target, "--format", "sarif")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in valid_sarif(sarif.stdout)["runs"][0]["results"]}
    assert uris == {"specs/orders%FF.yaml"}

    saved = run_cli("plan", "specs", *target, "--format", "json", "--out", "plan.json")
    assert saved.exit_code == 0, saved.stderr
    (change,) = json.loads(saved.stdout)["resource_changes"]
    assert os.fsencode(change["source"]["file"]) == b"specs/" + BAD_NAME
    assert "\\udcff" in (tmp_path / "plan.json").read_text()  # the JSON escape, UTF-8 text
    shown = run_cli("show", "plan.json", "--format", "sarif")
    assert shown.exit_code == 0, shown.stderr
    applied = run_cli("apply", "plan.json", *target, "--auto-approve", "--format", "json")
    assert applied.exit_code == 0, applied.stderr
    assert json.loads(applied.stdout)["outcome"] == "applied"

    residency = run_cli("residency", "specs", *target, "--format", "json")
    assert residency.exit_code == 0, residency.stderr
    assert "specs/orders\\udcff.yaml" in residency.stdout


def test_a_sarif_run_that_fails_still_prints_a_log_saying_so(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """An error before the log was printed leaves a log of a failed run, not an empty
    file: code scanning records an unsuccessful analysis instead of a clean one."""
    monkeypatch.chdir(tmp_path)  # not a git repository
    (tmp_path / "specs").mkdir()
    result = run_cli("validate", "specs", "--staged", "--format", "sarif")
    assert result.exit_code == 1
    assert "Error: --staged: specs is not in a git repository" in result.stderr
    (run,) = valid_sarif(result.stdout)["runs"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"].startswith("--staged: specs is not in a git repository")
    assert run["results"] == []


def test_a_finding_that_cannot_be_written_loses_only_itself() -> None:
    """The failed run's log writes each finding on its own: one that breaks (here a
    file name given as bytes, a bug in whatever made it) is a notification, the
    others are kept."""
    good = Diagnostic("specs/a.yaml", 2, 1, Severity.ERROR, "topic-id", "bad topic")
    broken = Diagnostic(b"specs/b.yaml", 3, 1, Severity.ERROR, "x", "y")  # type: ignore[arg-type]
    log = valid_sarif(report.failed_sarif([good, broken, good], "internal error: boom"))
    (run,) = log["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["topic-id", "topic-id"]
    assert run["tool"]["driver"]["rules"] == [
        {"id": "topic-id", "shortDescription": {"text": "reconcile topic-id"}}
    ]
    notes = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert notes[0] == "internal error: boom"
    assert notes[1].startswith("a 'x' finding at b'specs/b.yaml' line 3 could not be written")


def test_a_stream_that_cannot_encode_a_name_still_gets_the_whole_report(
    tmp_path: Path,
) -> None:
    """stdout in ASCII (PYTHONIOENCODING=ascii): the name is escaped, never an internal
    error that loses the report."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "é.yaml").write_text("")
    env = {"PYTHONIOENCODING": "ascii"}
    text = reconcile_process("validate", "specs", cwd=tmp_path, env=env)
    assert text.exit_code == 0, text.stderr
    assert "specs/\\xe9.yaml:1:1: warning[empty-file]" in text.stdout
    listed = reconcile_process("validate", "specs", "--format", "sarif", cwd=tmp_path, env=env)
    assert listed.exit_code == 0, listed.stderr
    assert "specs/%C3%A9.yaml" in listed.stdout
