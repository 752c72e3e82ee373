"""docs/cli.md is generated from the click commands (what `--help` prints): a test
fails when the committed page is not what the generator writes now, and every option
a user can see says what it does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import grimp

from reconciler import clidoc

ROOT = Path(__file__).parents[2]


def test_cli_reference_is_current() -> None:
    fresh = subprocess.run(
        [sys.executable, "-m", "reconciler.clidoc"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    checked_in = (ROOT / "docs" / "cli.md").read_text()
    assert checked_in == fresh, f"docs/cli.md is stale: run `{clidoc.REGENERATE}`"


def test_every_command_and_visible_option_is_on_the_page() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    undocumented = []
    for ctx, command in clidoc._commands():
        assert f"## {ctx.command_path}\n" in page, ctx.command_path
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option) or param.hidden:
                continue
            if set(param.opts) & set(ctx.help_option_names):
                continue
            if not param.help:
                undocumented.append(f"{ctx.command_path} {param.opts[0]}")
            assert f"| `{param.opts[0]}" in page or f", {param.opts[0]}" in page, param.opts
    assert undocumented == [], "options without help (their --help line says nothing)"


def test_the_page_has_the_options_the_old_hand_written_page_lacked() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    for needle in (
        "`--timeout SECONDS`", "`--strict-groups`", "`--propagation-wait SECONDS`",
        "`--readback-wait SECONDS`", "## reconcile hedging advise", "`--fault SPEC`",
        "`--recover`", "`--reset-org-policy`", "`--max-backlog N`",
        "`--destination-location KEY=LOCATION`",
    ):
        assert needle in page, needle


def test_the_generator_is_on_no_command_path() -> None:
    """Generating the page imports every verb: nothing in the package may import it."""
    graph = grimp.build_graph("reconciler", cache_dir=None)
    assert graph.find_modules_that_directly_import("reconciler.clidoc") == set()


def _shown_options() -> dict[tuple[str, str], set[str]]:
    """(option, help text) -> the commands whose --help shows that option so."""
    shown: dict[tuple[str, str], set[str]] = {}
    for ctx, command in clidoc._commands():
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option) or not param.help:
                continue
            if set(param.opts) & set(ctx.help_option_names):
                continue
            name = ctx.command_path.removeprefix("reconcile ")
            shown.setdefault((param.opts[0], param.help), set()).add(name)
    return shown


def reused_texts(
    shown: dict[tuple[str, str], set[str]], written_for: dict[str, frozenset[str]]
) -> list[str]:
    """Every command that shows an option with a text another command has, where the
    text was not written for it (_options.WRITTEN_FOR declares what each is for)."""
    found = []
    for (option, text), commands in sorted(shown.items()):
        if len(commands) < 2:
            continue
        meant = written_for.get(text, frozenset())
        found += [
            f"`reconcile {c} --help` shows {option} with a text written for "
            f"{', '.join(sorted(meant)) or 'another command'}: {text!r}"
            for c in sorted(commands - meant)
        ]
    return found


def test_no_command_shows_another_commands_text_for_an_option() -> None:
    from reconciler.commands._options import WRITTEN_FOR

    assert reused_texts(_shown_options(), WRITTEN_FOR) == []


def test_the_check_finds_a_text_reused_for_another_meaning() -> None:
    """residency once showed plan's --project text ("read, planned, applied and pruned")
    and plan's --format text ("the plan document"): the check names it."""
    from reconciler.commands._options import PLAN_FORMATS_HELP, PROJECT_HELP, WRITTEN_FOR

    shown = _shown_options()
    shown[("--project", PROJECT_HELP)] |= {"residency"}
    shown[("--format", PLAN_FORMATS_HELP)] |= {"residency"}
    found = reused_texts(shown, WRITTEN_FOR)
    assert len(found) == 2, found
    assert found[0].startswith(
        "`reconcile residency --help` shows --format with a text written for plan, show"
    )
    assert found[1].startswith(
        "`reconcile residency --help` shows --project with a text written for apply, plan"
    )


def test_every_format_option_shows_its_default() -> None:
    for ctx, command in clidoc._commands():
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and "--format" in param.opts:
                assert param.show_default, f"{ctx.command_path} --format shows no default"
