"""Every format carries the diagnostics (issue 10, bullet 6): a pipeline that posts
`plan --format markdown` or reads `--format json` gets the errors, not an empty
document; warnings are in view; the markdown header shows target, digest and counts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reconciler.orgpolicy.model import Policy
from tests.specs_support import location_policy, topic_doc

ZONE = topic_doc("orders", storage=(["us-east1-b"], None))
ZONE_ERROR = "'us-east1-b' is a zone; use its region 'us-east1'"
REROUTED = topic_doc(
    "rerouted",
    storage="{allowedPersistenceRegions: [us-central1]}",
    publishers="{regions: [us-east1], messageOrdering: false}",
)


def plan(run_cli: Any, local_server: Any, root: Path, *extra: str) -> Any:
    return run_cli("plan", str(root), "--emulator", local_server.address, *extra)


def restrict_to_us(local_server: Any) -> None:
    local_server.put_policy(
        Policy.from_dict(
            location_policy(
                "projects/proj-a", ["in:us-central1-locations", "in:us-east1-locations"]
            )
        )
    )


def test_json_with_spec_errors_is_a_document_with_the_diagnostics(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    local_server.counters.reset()
    result = plan(run_cli, local_server, specs(ZONE), "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["resource_changes"] == []
    (error,) = data["diagnostics"]
    assert (error["severity"], error["code"], error["message"]) == (
        "error", "region-zone", ZONE_ERROR,
    )
    assert data["target"]["kind"] == "emulator"
    assert data["digest"].startswith("sha256:")
    assert local_server.counters.total() == 0


def test_markdown_with_spec_errors_is_a_comment_about_them(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    result = plan(run_cli, local_server, specs(ZONE), "--format", "markdown")
    assert result.exit_code == 1
    out = result.stdout
    assert out.startswith("### reconcile plan\n")
    assert "**❌ 1 error: this plan cannot be applied.** Fix the errors and plan again." in out
    assert "**Errors (1)**" in out
    line = next(x for x in out.splitlines() if "region-zone" in x)
    assert line.startswith("- `") and "topics.yaml:" in line
    assert "error\\[region-zone\\]: 'us-east1-b' is a zone; use its region 'us-east1'" in line
    assert f"- Target: `emulator {local_server.address}`" in out


def test_live_org_policy_errors_reach_json_and_markdown(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    restrict_to_us(local_server)
    root = specs(topic_doc("orders", storage=(["europe-west1"], None)))
    result = plan(run_cli, local_server, root, "--format", "json")
    assert result.exit_code == 1
    codes = [d["code"] for d in json.loads(result.stdout)["diagnostics"]]
    assert codes == ["org-location-denied"]
    md = plan(run_cli, local_server, root, "--format", "markdown")
    assert md.exit_code == 1
    assert "error\\[org-location-denied\\]" in md.stdout
    assert "<details>" not in md.stdout  # no plan to show: the errors are the body


def test_markdown_shows_warnings_and_the_header_outside_the_details(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    restrict_to_us(local_server)
    result = plan(run_cli, local_server, specs(REROUTED), "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    summary, details = result.stdout.split("<details>", 1)
    assert "**Plan: 1 to create, 0 to update, 0 to delete.**" in summary
    assert "**Warnings (1)**" in summary
    assert "warning\\[publisher-region-rerouted\\]" in summary
    assert f"- Target: `emulator {local_server.address}`, org policy: `live Org Policy API`" in (
        summary
    )
    assert re.search(r"^- Digest: `sha256:[0-9a-f]{64}` \(apply exactly this plan", summary, re.M)
    assert "warning[publisher-region-rerouted]" in details


def test_text_with_errors_keeps_stdout_empty_and_says_so_on_stderr(
    run_cli: Any, local_server: Any, specs: Any
) -> None:
    result = plan(run_cli, local_server, specs(ZONE))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert f"error[region-zone]: {ZONE_ERROR}" in result.stderr
    assert "no plan made" in result.stderr
