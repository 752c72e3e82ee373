"""The `reconcile` command group and the single boundary that maps errors to exit codes."""

from __future__ import annotations

import sys

import click

from reconciler.errors import EXIT_ERROR, EXIT_INTERRUPTED, ReconcileError


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


def version() -> str:
    """The installed distribution's version; the package's own when run from a source
    tree that is not installed (e.g. `python -m reconciler` from a checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("reconcile")
    except PackageNotFoundError:
        from reconciler import __version__

        return __version__


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Looked up only when asked for, not on every start of every command."""
    if value and not ctx.resilient_parsing:
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


def main(argv: list[str] | None = None) -> None:
    """Entry point, and the only place that exits: a verb returns its exit code (0 ok,
    2 changes with --detailed-exitcode); every user-caused error becomes a message and
    1 (click usage errors 2), Ctrl-C 130."""
    try:
        code = cli.main(args=argv, prog_name="reconcile", standalone_mode=False)
    except ReconcileError as exc:
        # Messages quote file names and service text: no control character reaches
        # the terminal (render/escape.py), line breaks of the message itself stay.
        from reconciler.render.escape import text as inert

        lines = str(exc).split("\n")
        click.echo("Error: " + "\n".join(inert(x, backslash=False) for x in lines), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the one place that catches everything
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in reconcile, not in your input; please report it "
            "(set RECONCILE_DEBUG=1 for a traceback).",
            err=True,
        )
        import os

        if os.environ.get("RECONCILE_DEBUG"):
            import traceback

            traceback.print_exc()
        sys.exit(EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
