"""CLI options shared by `plan`, `show` and `apply`: the target (--local, --emulator,
--org-policy), the output format, and how a plan is printed.

    @server_options            adds local, emulator, timeout (import, policy pull)
    @target_options            adds local, emulator, org_policy
    @format_option(choices)    adds fmt
    @project_option            adds projects (plan, apply: --project P, repeatable)
    @strict_groups_option      adds strict_groups (validate, plan)
    use_colour()               colour on a terminal only, never with NO_COLOR

Rendering is reconciler.render.render; the plan file is reconciler.plan.planfile.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.render import FORMATS

F = TypeVar("F", bound=Callable[..., Any])


def server_options(fn: F) -> F:
    """--local | --emulator HOST:PORT (default: $PUBSUB_EMULATOR_HOST, else Google Cloud),
    and --timeout SECONDS: the deadline of every call to it, the client's retries included."""
    fn = click.option(
        "--timeout",
        "timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="Deadline for connecting and for each call to the service, retries included.",
    )(fn)
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


def project_option(fn: F) -> F:
    """--project P, repeatable: plan/apply only the declared topics of these projects."""
    return click.option(
        "--project",
        "projects",
        multiple=True,
        metavar="P",
        help="Only the declared topics of project P (repeatable): only P is read, "
        "planned, applied and pruned.",
    )(fn)


def strict_groups_option(fn: F) -> F:
    """--strict-groups: refusals resting on inferred value-group members become errors."""
    return click.option(
        "--strict-groups",
        is_flag=True,
        help="Refusals that rest on inferred value-group membership are errors, not warnings.",
    )(fn)


def format_option(choices: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default="text", show_default=True
    )


def use_colour() -> bool:
    """Colour on a terminal only, never with NO_COLOR (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()
