"""`apply --format json` prints one outcome document whatever happened, its exit code
is the command's, and docs/apply-outcome.schema.json (generated from the outcome's
dataclasses) describes every document apply really prints: applied, no changes, a
partial failure, a refused plan, an error before any change."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.apply.outcomeschema import outcome_schema_text
from reconciler.orgpolicy.snapshot import load_snapshot
from reconciler.plan.readahead import START_ENV
from tests.cli_support import start_reconcile
from tests.specs_support import Tree

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "apply-outcome.schema.json"
COMMAND = "python -m reconciler.apply.outcomeschema > docs/apply-outcome.schema.json"


def test_the_checked_in_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text() == outcome_schema_text(), f"stale: run `{COMMAND}`"
    Draft202012Validator.check_schema(json.loads(SCHEMA_FILE.read_text()))


def outcome(result: Any, code: int) -> dict[str, Any]:
    """The one document on stdout, valid against the published schema."""
    assert result.exit_code == code, result.stdout + result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert problems == []
    assert document["exit_code"] == code
    return document


@pytest.fixture
def seeded(run_cli: Any, local_server: Any, tree: Tree) -> list[str]:
    tree.write({"orders": {"labels": {"team": "a"}}, "refunds": {"labels": {"team": "a"}}})
    local_server.seed_policies(load_snapshot(tree.policy))
    return ["--emulator", local_server.address]


def test_applied_then_no_changes(run_cli: Any, seeded: list[str]) -> None:
    first = outcome(run_cli("apply", "specs", *seeded, "--auto-approve", "--format", "json"), 0)
    assert first["outcome"] == "applied" and first["summary"]["applied"] == 2
    assert {r["status"] for r in first["results"]} == {"applied"}
    again = outcome(run_cli("apply", "specs", *seeded, "--auto-approve", "--format", "json"), 0)
    assert again["outcome"] == "no-changes" and again["summary"]["unchanged"] == 2


def test_a_partial_failure_lists_every_topic(
    run_cli: Any, local_server: Any, tree: Tree, seeded: list[str]
) -> None:
    local_server.faults.add("CreateTopic", error="PERMISSION_DENIED",
                            resource=tree.address("refunds"))
    doc = outcome(run_cli("apply", "specs", *seeded, "--auto-approve", "--format", "json"), 3)
    assert doc["outcome"] == "partial-failure"
    assert (doc["summary"]["applied"], doc["summary"]["failed"]) == (1, 1)
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    assert [r["address"] for r in failed] == [tree.address("refunds")]
    assert failed[0]["error"].startswith("PERMISSION_DENIED")


def test_a_refused_plan_and_an_error_are_documents_too(
    run_cli: Any, local_server: Any, tree: Tree, seeded: list[str]
) -> None:
    made = run_cli("plan", "specs", *seeded, "--out", "plan.json")
    assert made.exit_code == 0, made.stderr
    digest = json.loads(Path("plan.json").read_text())["digest"]
    other = "sha256:" + "0" * 64
    local_server.counters.reset()
    doc = outcome(run_cli("apply", "plan.json", "--expect-digest", other, "--format", "json"), 4)
    assert (doc["outcome"], doc["reason"], doc["digest"]) == ("refused", "digest-mismatch", digest)
    assert {r["status"] for r in doc["results"]} == {"not-attempted"}
    assert "nothing was applied" in doc["message"]
    Path("damaged.json").write_text("{not json")
    damaged = outcome(run_cli("apply", "damaged.json", "--format", "json"), 4)
    assert (damaged["reason"], damaged["digest"]) == ("damaged", None)
    (tree.root / "specs" / "broken.yaml").write_text("kind: Topic\nmetadata: [\n")
    error = outcome(run_cli("apply", "specs", *seeded, "--auto-approve", "--format", "json"), 1)
    assert error["outcome"] == "error" and error["reason"] is None
    assert local_server.counters.total() == 0  # nothing called by any of them


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_before_any_change_still_prints_one_document(
    local_server: Any, tree: Tree, signum: int, code: int
) -> None:
    """Stopped while the plan is read (its ListTopics held at the server): the CLI's one
    boundary says so on stderr and prints apply's outcome document on stdout."""
    tree.write({"orders": {"labels": {"team": "a"}}})
    hold = local_server.faults.hold("ListTopics", count=1)
    proc = start_reconcile("apply", "specs", "--emulator", local_server.address,
                           "--auto-approve", "--format", "json", cwd=tree.root,
                           env={START_ENV: "off"}).proc
    try:
        held = hold.wait_arrived(1, timeout=120.0)[0]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    held.release()
    assert proc.returncode == code, out + err
    doc = json.loads(out)  # the one document
    assert (doc["outcome"], doc["exit_code"]) == ("interrupted", code)
    assert doc["message"] == "interrupted; nothing was applied" and doc["results"] == []
    problems = list(Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).iter_errors(doc))
    assert problems == []
    assert "Traceback" not in err
