"""docs/cli.md from the click commands themselves, so that the page and `--help` are
one source and cannot disagree (tests/docs/test_cli_reference.py fails when the
committed page is stale).

    python -m reconciler.clidoc > docs/cli.md

Every verb and subcommand, its usage, its help and epilog, and each visible option
with the help text and the extras (default, range, required) that `--help` prints.
Not imported by any command (it imports every verb), and outside `commands/` so that
importing the click group from it makes no cycle.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator

import click

from reconciler.clickapp import cli
from reconciler.commands import COMMANDS

REGENERATE = "python -m reconciler.clidoc > docs/cli.md"

HEADER = f"""\
# Commands

<!-- Generated from the click commands by `{REGENERATE}`; do not edit by hand
(a test fails when this page is stale). -->

Every command and option as `reconcile COMMAND --help` (or `-h`) prints it. What the targets,
timeouts and exit codes mean: [Targets, timeouts and exit codes](running.md);
the flows in depth: [validate](validate.md), [plan and apply](plan-and-apply.md),
[the local server](local-server.md).
"""

# click's help-record extras: "help text  [default: 8; 1<=x<=256]"
_EXTRAS = re.compile(r"^(?P<help>.*?)\s*\[(?P<extras>[^\[\]]*)\]$", re.S)


def _commands() -> Iterator[tuple[click.Context, click.Command]]:
    """Depth first, in the order of the verb table: every command with its context."""
    root = click.Context(cli, info_name="reconcile", **cli.context_settings)
    yield root, cli
    for name in COMMANDS:
        command = cli.get_command(root, name)
        assert command is not None, name
        yield from _walk(command, click.Context(command, info_name=name, parent=root))


def _walk(
    command: click.Command, ctx: click.Context
) -> Iterator[tuple[click.Context, click.Command]]:
    yield ctx, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, click.Context(sub, info_name=name, parent=ctx))


def _prose(text: str | None) -> str:
    """A help text as markdown paragraphs: click's `\\b` (keep lines) and `\\f`
    (hide what follows) honoured."""
    if not text:
        return ""
    text = inspect.cleandoc(text.split("\f", 1)[0])
    paragraphs = []
    for block in text.split("\n\n"):
        if block.startswith("\b\n"):
            lines = block[2:].splitlines()
            paragraphs.append("\n".join(f"{line}  " if line else line for line in lines).rstrip())
        else:
            paragraphs.append(" ".join(block.split()))
    return "\n\n".join(paragraphs)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _options_table(ctx: click.Context, command: click.Command) -> list[str]:
    rows = []
    help_names = set(ctx.help_option_names)
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or help_names & set(param.opts):
            continue  # arguments are in the usage line; -h/--help is everywhere
        record = param.get_help_record(ctx)
        if record is None:  # hidden
            continue
        names, help_text = record
        extras = ""
        matched = _EXTRAS.match(help_text)
        if matched:
            help_text, extras = matched["help"], matched["extras"]
        rows.append(f"| `{_cell(names)}` | {_cell(help_text)} | {_cell(extras)} |")
    if not rows:
        return []
    return ["| option | meaning | default, range |", "| --- | --- | --- |", *rows]


def _section(ctx: click.Context, command: click.Command) -> str:
    path = ctx.command_path
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    parts = [f"## {path}", f"```text\n{usage}\n```"]
    for text in (command.help, command.epilog):
        if prose := _prose(text):
            parts.append(prose)
    if isinstance(command, click.Group):
        subs = [
            f"[`{path} {name}`](#{anchor(f'{path} {name}')})"
            for name in command.list_commands(ctx)
            if (sub := command.get_command(ctx, name)) is not None and not sub.hidden
        ]
        parts.append("Commands: " + ", ".join(subs) + ".")
    table = _options_table(ctx, command)
    if table:
        parts.append("\n".join(table))
    return "\n\n".join(parts) + "\n"


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, spaces to dashes, punctuation gone."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def render() -> str:
    """The whole page."""
    return "\n".join([HEADER, *(_section(ctx, command) for ctx, command in _commands())])


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
