"""Every `reconcile ...` line of the CI examples (and the pre-commit example's hook
with its args) parses with the real CLI: the verbs and options they use exist and take
the values given. One test per line, named by file and line, so a failure says which
line and which option."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from tests.gitops.workflow_lines import (
    WORKFLOWS,
    CommandLine,
    argv,
    command_lines,
    describe,
    parse,
    pre_commit_hook_lines,
)

LINES = [line for path in WORKFLOWS for line in command_lines(path)]
LINES += list(pre_commit_hook_lines())


@pytest.mark.parametrize("line", LINES, ids=[line.where for line in LINES])
def test_reconcile_line_parses_with_the_real_cli(line: CommandLine) -> None:
    args = argv(line.text)
    problem = None
    try:
        ctx = parse(args)
    except click.UsageError as exc:
        problem = describe(exc)
    if problem is not None:
        pytest.fail(
            f"{line.where}: `reconcile {' '.join(args)}` does not parse: {problem}"
            f"\n  line: {line.text}",
            pytrace=False,
        )
    assert ctx.command.name == args[0] or ctx.parent is not None


def test_the_flow_uses_the_contracted_commands() -> None:
    """Each CI file validates with a required snapshot, lists the touched projects,
    plans per project to a file and applies that file with the reviewed digest and a
    JSON outcome: the steps the docs describe. The drift schedule plans with
    --detailed-exitcode."""
    for path in WORKFLOWS:
        texts = [" ".join(argv(line.text)) for line in command_lines(path)]
        where = path.relative_to(Path(__file__).parents[2])
        assert any(
            t.startswith("plan ") and "--detailed-exitcode" in t and "--project" in t
            for t in texts
        ), where
        if path.name == "drift.yml":
            assert any(t.startswith("projects ") and "--format json" in t for t in texts)
            continue
        assert any(t.startswith("projects ") and "--changed-from" in t for t in texts), where
        assert any(
            t.startswith("apply ") and "--format json" in t and "--expect-digest" in t
            for t in texts
        ), where
        assert any(t.startswith("validate ") and "--require-org-policy" in t for t in texts), where
        assert any(
            t.startswith("plan ") and "--out" in t and "--project" in t for t in texts
        ), where
        assert any(
            t.startswith("apply ") and "--expect-digest sha256:" in t for t in texts
        ), where


def test_a_misspelt_option_is_reported_with_its_name() -> None:
    """The checker itself: a line with an option the CLI lacks fails, naming it."""
    with pytest.raises(click.UsageError) as unknown:
        parse(argv("reconcile plan specs/ --no-such-flag"))
    assert "No such option" in describe(unknown.value)
    assert "--no-such-flag" in describe(unknown.value)
    with pytest.raises(click.UsageError) as wrong_type:
        parse(argv("reconcile apply plan.json --concurrency many"))
    assert "'--concurrency'" in describe(wrong_type.value)
    assert argv('reconcile validate "$SPECS" 2>&1 | tee log') == ["validate", "specs/"]
    assert parse(["validate", "specs/"]).params["paths"] == (Path("specs/"),)
