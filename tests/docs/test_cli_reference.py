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
