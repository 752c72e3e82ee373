"""The `reconcile` click group: a verb's module imported only when that verb runs, and
click's own outcomes (usage errors, aborts, --help, --version) turned into exit codes
and written through the output boundary for `reconciler.cli.main`."""

from __future__ import annotations

import importlib
import io
from typing import Any

import click

import reconciler
from reconciler.commands import COMMANDS, output


class _LazyGroup(click.Group):
    """Imports a verb's module only when that verb runs (or its help is shown), so
    that `reconcile validate` never pays for the google-cloud imports of the others."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        command: click.Command = importlib.import_module(module_name).command
        return command


# The distribution's name on a package index: `reconcile` there is someone else's.
DISTRIBUTION = "pubsub-reconcile"


def version() -> str:
    """The installed distribution's version; the package's own when run from a source
    tree that is not installed (e.g. `python -m reconciler` from a checkout)."""
    import importlib.metadata  # only for --version (reconciler/perf.py)

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return reconciler.__version__


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        output.stdout().line(f"reconcile {version()}")
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
    """The verb's return value; click's usage errors as exit codes (everything else
    propagates to reconciler/cli.py, Ctrl-C as KeyboardInterrupt). Click's usage
    messages quote what was typed: written escaped, like everything."""
    try:
        return cli.main(args=args, prog_name="reconcile", standalone_mode=False)
    except click.exceptions.Abort:  # click's word for Ctrl-C: the CLI's boundary says it
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        shown = io.StringIO()
        exc.show(file=shown)
        output.stderr().document(shown.getvalue())
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
