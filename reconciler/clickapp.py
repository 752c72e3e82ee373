"""The `reconcile` click group: verbs imported only when they run, and click's own
exceptions (usage errors, aborts) turned into exit codes for `reconciler.cli.main`."""

from __future__ import annotations

from typing import Any

import click

from reconciler.errors import EXIT_INTERRUPTED


class _LazyGroup(click.Group):
    """Imports a verb's module only when that verb runs, so that `reconcile validate`
    never pays for the google-cloud imports of the others."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from reconciler.commands import COMMANDS

        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        import importlib

        from reconciler.commands import COMMANDS

        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        command: click.Command = importlib.import_module(module_name).command
        return command


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Looked up only when asked for, not on every start of every command."""
    if value and not ctx.resilient_parsing:
        from reconciler.cli import version

        click.echo(f"reconcile {version()}")
        ctx.exit()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Declarative reconciler for Google Cloud Pub/Sub topics."""


def run_click(args: list[str]) -> Any:
    """The verb's return value; click's exceptions as exit codes (others propagate)."""
    try:
        return cli.main(args=args, prog_name="reconcile", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
