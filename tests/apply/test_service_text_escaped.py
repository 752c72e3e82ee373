"""The service's error text is data: a control character, an ESC sequence or a bidi
override in a refusal comes out escaped in apply's per-topic line and in its summary,
never raw (the output boundary, reconciler/commands/output.py). The JSON results keep
the message exactly, written with JSON's own escapes."""

from __future__ import annotations

import json
from typing import Any

from reconciler.orgpolicy.snapshot import load_snapshot
from tests.specs_support import Tree

HOSTILE = "refused \x1b[2J\x1b[31mred\x1b[0m \u202egnp.exe\x07\nfake: line\r"
ESCAPED = "refused \\x1b[2J\\x1b[31mred\\x1b[0m \\u202egnp.exe\\x07\\nfake: line\\r"
RAW = ("\x1b", "\u202e", "\x07", "\r")


def _failing_apply(run_cli: Any, local_server: Any, tree: Tree, *extra: str) -> Any:
    tree.write({"orders": {"labels": {"team": "payments"}}})
    local_server.seed_policies(load_snapshot(tree.policy))
    local_server.faults.add("CreateTopic", error="INVALID_ARGUMENT", message=HOSTILE)
    return run_cli(
        "apply", "specs", "--emulator", local_server.address, "--auto-approve", *extra
    )


def test_the_progress_line_and_the_summary_escape_the_service_text(
    run_cli: Any, local_server: Any, tree: Tree
) -> None:
    result = _failing_apply(run_cli, local_server, tree)
    assert result.exit_code == 3
    address = f"projects/{tree.project}/topics/orders"
    lines = result.stdout.splitlines()
    error = f"INVALID_ARGUMENT: failed to create topic for {address}: INVALID_ARGUMENT: "
    progress = [line for line in lines if line.startswith(f"{address}: create FAILED")]
    assert progress == [f"{address}: create FAILED: {error}{ESCAPED}"]
    summary = lines[lines.index("Failed:") + 1]
    assert summary == f"  {address} (create): {error}{ESCAPED}"
    assert not any(line.startswith("fake: line") for line in lines)
    for raw in RAW:
        assert raw not in result.stdout + result.stderr, repr(raw)


def test_with_json_the_summary_on_stderr_is_escaped_and_the_json_exact(
    run_cli: Any, local_server: Any, tree: Tree
) -> None:
    result = _failing_apply(run_cli, local_server, tree, "--format", "json")
    assert result.exit_code == 3
    assert f": INVALID_ARGUMENT: {ESCAPED}\n" in result.stderr
    for raw in RAW:
        assert raw not in result.stdout + result.stderr, repr(raw)
    (failed,) = json.loads(result.stdout)["results"]
    assert failed["error"].endswith(f": INVALID_ARGUMENT: {HOSTILE}")


def test_a_notice_and_an_error_message_are_escaped_too(run_cli: Any, tmp_path: Any) -> None:
    """What the CLI boundary says about a refused command line quotes it, escaped."""
    hostile = tmp_path / "x\x1b[31m\u202e.yaml"
    result = run_cli("show", str(hostile))
    assert result.exit_code == 1
    assert "x\\x1b[31m\\u202e.yaml" in result.stderr
    for raw in RAW:
        assert raw not in result.stderr, repr(raw)
