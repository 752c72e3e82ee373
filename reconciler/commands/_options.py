"""CLI options shared by the verbs: the target (--local, --emulator, --org-policy,
--timeout), the output format, --project and --strict-groups; each declared once, so
that it means one thing and reads the same in every `--help`.

    @server_options            adds local, emulator, timeout (import, policy pull)
    @target_options            adds local, emulator, org_policy, timeout
    @format_option(choices)    adds fmt
    @project_option            adds projects (plan, apply: --project P, repeatable)
    @strict_groups_option      adds strict_groups (validate, plan, apply)
"""

from __future__ import annotations

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


def prune_subscribed_option(fn: F) -> F:
    """--prune-subscribed: prune deletes topics that have subscriptions too (implies
    --prune); without it such a topic is kept and the plan says why."""
    return click.option(
        "--prune-subscribed",
        "prune_subscribed",
        is_flag=True,
        help="With --prune (implied), also delete undeclared managed topics that have "
        "subscriptions (they are detached and stop receiving messages).",
    )(fn)


def strict_groups_option(fn: F) -> F:
    """--strict-groups: refusals resting on inferred value-group members become errors,
    an input to validation (and to the plan's org-policy checks) wherever it is given."""
    return click.option(
        "--strict-groups",
        is_flag=True,
        help="Refusals that rest on inferred value-group membership are errors, not warnings.",
    )(fn)


PLAN_FORMATS_HELP = (
    "text; json: the plan document (docs/plan-format.md); markdown: a pull-request "
    "comment; github: its diagnostics, warnings and drift as GitHub Actions annotations "
    "at the spec lines; sarif: the same as a SARIF 2.1.0 log for code scanning."
)


def format_option(
    choices: tuple[str, ...] = FORMATS, help: str = PLAN_FORMATS_HELP
) -> Callable[[F], F]:
    """--format, text by default: for a plan (plan, show) the same three renderings of
    one plan; validate and apply pass their own choices and what each one prints."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default="text",
        show_default=True,
        help=help,
    )
