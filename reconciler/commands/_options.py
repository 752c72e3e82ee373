"""CLI options shared by `plan`, `show` and `apply`: the target (--local, --emulator,
--org-policy), the output format, and how a plan is printed.

    @server_options            adds local, emulator (import, policy pull)
    @target_options            adds local, emulator, org_policy
    @format_option(choices)    adds fmt
    emit_plan(plan, fmt)       prints a Plan in the chosen format (colour on a TTY only)
    write_plan(plan, path)     saves a plan file atomically
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from reconciler.errors import InputError
from reconciler.fileio import write_atomically
from reconciler.plan.model import Plan

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("text", "json", "markdown")


def server_options(fn: F) -> F:
    """--local | --emulator HOST:PORT (default: $PUBSUB_EMULATOR_HOST, else Google Cloud)."""
    fn = click.option(
        "--emulator",
        "emulator",
        metavar="HOST:PORT",
        help="A Pub/Sub (+ Org Policy) server at HOST:PORT, plaintext "
        "(default: $PUBSUB_EMULATOR_HOST, else Google Cloud).",
    )(fn)
    fn = click.option(
        "--local",
        "local",
        is_flag=True,
        help="The embedded local server, state kept under .reconcile/local/.",
    )(fn)
    return fn


def target_options(fn: F) -> F:
    """The server options, and --org-policy FILE (always wins over the Org Policy API)."""
    fn = click.option(
        "--org-policy",
        "org_policy",
        type=click.Path(path_type=Path),
        help="Org-policy snapshot to check against instead of the Org Policy API "
        "(required with Google's Pub/Sub emulator).",
    )(fn)
    return server_options(fn)


def format_option(choices: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default="text", show_default=True
    )


def use_colour() -> bool:
    """Colour on a terminal only, never with NO_COLOR (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def render_plan(plan: Plan, fmt: str, color: bool | None = None) -> str:
    if fmt == "json":
        from reconciler.render import json as render_json

        return render_json.render(plan)
    if fmt == "markdown":
        from reconciler.render import markdown

        return markdown.render(plan)
    from reconciler.render import text

    return text.render(plan, color=use_colour() if color is None else color)


def emit_plan(plan: Plan, fmt: str) -> None:
    color = use_colour()
    click.echo(render_plan(plan, fmt, color), nl=False, color=color)


def write_plan(plan: Plan, path: Path) -> None:
    """Write the plan file atomically: a reader never sees half a plan."""
    write_atomically(path, plan.dumps(), "plan file")


def read_plan(path: Path) -> Plan:
    """A saved plan, or an InputError naming the file and what is wrong with it."""
    import json

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: plan file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the plan file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{exc.lineno}:{exc.colno}: not a plan file (invalid JSON: {exc.msg})",
            hint="make a new one with `reconcile plan --out PLANFILE`",
        ) from None
    if not isinstance(data, dict) or "format_version" not in data:
        raise InputError(
            f"{path}: not a reconcile plan file (no format_version)",
            hint="make a new one with `reconcile plan --out PLANFILE`",
        )
    try:
        return Plan.from_json(data)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{path}: the plan file is damaged or incomplete ({type(exc).__name__}: {exc})",
            hint="make a new one with `reconcile plan --out PLANFILE`",
        ) from None
