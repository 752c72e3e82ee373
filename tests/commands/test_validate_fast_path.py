"""`reconcile validate` has one parser, click's, like every verb (its measured cost is
accepted: benchmarks/README.md, scale.py): command lines are read as before,
help, typos and missing values get click's messages and exit codes, and the cold start
stays light (no other verb, no google-cloud, no collection, no pydantic: the shape
check is msgspec's, for a tree with shape errors too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from reconciler.commands.validate import ValidateOptions, command

ROOT = Path(__file__).parents[2]
GOOD = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {project: acme-payments, name: orders}
"""


def parse(args: list[str]) -> ValidateOptions:
    """The options `reconcile ARGS...` gives the validate flow."""
    assert args[0] == "validate"
    return ValidateOptions(**command.make_context("validate", args[1:]).params)


def test_ordinary_command_lines_are_parsed_as_before() -> None:
    assert parse(["validate"]) == ValidateOptions(())
    assert parse(
        ["validate", "a", "--format=json", "--org-policy", "p.yaml", "b", "--strict-groups",
         "--require-org-policy", "--", "--c"]
    ) == ValidateOptions(
        (Path("a"), Path("b"), Path("--c")), Path("p.yaml"), True, "json", True
    )
    assert parse(["validate", "--format", "text", "--format", "json"]) == ValidateOptions(
        (), fmt="json"
    )


def test_anything_unusual_gets_clicks_messages(run_cli) -> None:
    for args in (
        ["validate", "--formt", "json"],
        ["validate", "--format", "yaml"],
        ["validate", "--org-policy"],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2, args
        assert result.stderr.startswith(("Usage: reconcile validate", "Error: ")), args
    shown = run_cli("validate", "--help")
    assert shown.exit_code == 0
    for option in ("--org-policy", "--require-org-policy", "--format", "--strict-groups"):
        assert option in shown.stdout, option


def test_click_still_reports_a_bad_option(run_cli) -> None:
    result = run_cli("validate", "--format", "yaml")
    assert result.exit_code == 2
    assert "Invalid value for '--format'" in result.stderr


def test_json_output_and_exit_code_through_the_fast_path(run_cli, tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD.replace("name: orders", "name: Orders!"))
    result = run_cli("validate", "--format=json", str(tmp_path))
    assert result.exit_code == 1
    found = [(d["line"], d["code"]) for d in json.loads(result.stdout) if d["line"]]
    assert found == [(3, "topic-id")]


def _cold_validate(tmp_path: Path, report: str, *options: str) -> tuple[str, str]:
    """Run `reconcile validate OPTIONS TMP_PATH` through `cli.main` in a fresh
    interpreter, then print `report` (Python expressions over `sys.modules`) and the
    exit code: (that last line, everything printed)."""
    probe = (
        "import sys\n"
        "from reconciler.cli import main\n"
        "try:\n"
        f"    main(['validate', *{list(options)!r}, sys.argv[1]])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print()\n"
        f"print({report}, 'EXIT', code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    return result.stdout.splitlines()[-1], result.stdout + result.stderr


def test_validate_imports_none_of_the_other_verbs(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    shared = ("validate", "output", "_options", "_promised_log")
    last, output = _cold_validate(
        tmp_path,
        "'LOADED', sorted(m for m in sys.modules if m.startswith('reconciler.commands.')"
        f" and m.split('.')[2] not in {shared!r})",
    )
    assert last == "LOADED [] EXIT 0", output


def test_no_cyclic_collection_during_a_cold_validate(tmp_path: Path) -> None:
    """Importing the validate path triggered collections (benchmarks/README.md); the
    collector is paused from the import of click on, through the verb's imports and its
    run, and on again once the command is done (turning it on may start one young
    collection). No pydantic is imported (the shape check is msgspec's)."""
    (tmp_path / "a.yaml").write_text(GOOD)
    probe = (
        "import gc, sys\n"
        "from reconciler.cli import main\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(info))\n"
        "try:\n"
        "    main(['validate', sys.argv[1]])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print()\n"
        "print('COLLECTIONS', len(seen), 'PYDANTIC', 'pydantic' in sys.modules,"
        " 'ENABLED', gc.isenabled(), 'EXIT', code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    last = result.stdout.splitlines()[-1] if result.stdout else result.stderr
    assert last in (
        "COLLECTIONS 0 PYDANTIC False ENABLED True EXIT 0",
        "COLLECTIONS 1 PYDANTIC False ENABLED True EXIT 0",
    ), result.stdout + result.stderr


_PYDANTIC = (
    "'PYDANTIC', any(m.split('.')[0] in ('pydantic', 'pydantic_core') for m in sys.modules)"
)


def test_a_well_formed_tree_is_validated_without_pydantic(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        GOOD + "spec:\n  labels: {team: pay}\n  messageStoragePolicy: {allowedPersistenceRegions:"
        " [us-east1]}\n  publishers: {regions: [us-east1], hedging: fast,"
        " retry: {totalTimeout: 30s}}\n"
    )
    (tmp_path / "p.yaml").write_text(
        "apiVersion: reconcile.pubsub/v1\nkind: HedgingProfile\nmetadata: {name: fast}\n"
        "spec: {hedgeDelay: 200ms, maxTokens: 10, refillRatio: 0.1}\n"
        "---\napiVersion: reconcile.pubsub/v1\nkind: Defaults\nspec: {project: acme-payments}\n"
    )
    last, output = _cold_validate(tmp_path, _PYDANTIC)
    assert last == "PYDANTIC False EXIT 0", output


def test_shape_errors_are_reported_at_their_lines_without_pydantic(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD + "spec:\n  labels: {team: 5}\n  publisher: {}\n")
    last, output = _cold_validate(tmp_path, _PYDANTIC, "--format=json")
    assert last == "PYDANTIC False EXIT 1", output
    found = [
        (d["line"], d["code"], d["message"])
        for d in json.loads(output.split("\nPYDANTIC")[0]) if d["line"]
    ]
    assert found == [
        (5, "wrong-type", "spec > labels > team must be text, not number 5; quote it: '5'"),
        (6, "unknown-field", "unknown field 'publisher' in spec; did you mean 'publishers'?"),
    ], output
