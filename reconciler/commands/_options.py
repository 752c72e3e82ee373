"""CLI options shared by the verbs: the target (--local, --emulator, --org-policy,
--timeout), the output format, --project and --strict-groups; each declared once, so
that it means one thing and reads the same in every `--help`.

    @server_options            adds local, emulator, timeout (import, policy pull)
    @target_options            adds local, emulator, org_policy, timeout
    @format_option(choices)    adds fmt
    @project_option(help)      adds projects (--project P, repeatable)
    @strict_groups_option      adds strict_groups (validate, plan, apply)
    @allow_unjudged_option     adds allow_unjudged (validate, plan, apply)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.names import project_id_problem
from reconciler.orgpolicy.unjudged import AllowUnjudged, AllowUnjudgedError
from reconciler.render import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

# Each shared help text and the commands whose option it describes: a command that
# shows it for an option that means something else there fails a test
# (tests/docs/test_cli_reference.py); such a command passes its own text.
WRITTEN_FOR: dict[str, frozenset[str]] = {}
_SERVER_COMMANDS = ("apply", "hedging advise", "import", "plan", "policy pull", "residency")


def _shared(text: str, *commands: str) -> str:
    WRITTEN_FOR[text] = frozenset(commands)
    return text


TIMEOUT_HELP = _shared(
    "Deadline for connecting and for each call to the service, retries included.",
    *_SERVER_COMMANDS,
)
EMULATOR_HELP = _shared(
    "A Pub/Sub (+ Org Policy) server at HOST:PORT, plaintext "
    "(default: $PUBSUB_EMULATOR_HOST, else Google Cloud).",
    *_SERVER_COMMANDS,
)
LOCAL_HELP = _shared(
    "The embedded local server, state kept under .reconcile/local/.", *_SERVER_COMMANDS
)
ORG_POLICY_HELP = _shared(
    "Org-policy snapshot to check against instead of the Org Policy API "
    "(required with Google's Pub/Sub emulator).",
    "apply", "plan", "residency",
)
PROJECT_HELP = _shared(
    "Only the declared topics of project P (repeatable): only P is read, planned, "
    "applied and pruned.",
    "apply", "plan",
)
PRUNE_SUBSCRIBED_HELP = _shared(
    "With --prune (implied), also delete undeclared managed topics that have "
    "subscriptions (they are detached and stop receiving messages).",
    "apply", "plan",
)
STRICT_GROUPS_HELP = _shared(
    "Refusals that rest on inferred value-group membership are errors, not warnings.",
    "apply", "plan", "validate",
)


ALLOW_UNJUDGED_HELP = _shared(
    "Let a custom constraint that reconcile cannot judge (organization unknown, read "
    "failed, condition it cannot compile or evaluate) through as a warning instead of "
    "an error; CONSTRAINT is custom.NAME, or `all` (repeatable). Each such finding, "
    "and the use of this option, is reported in every format.",
    "apply", "plan", "validate",
)


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
        help=TIMEOUT_HELP,
    )(fn)
    fn = click.option(
        "--emulator",
        "emulator",
        metavar="HOST:PORT",
        help=EMULATOR_HELP,
    )(fn)
    fn = click.option(
        "--local",
        "local",
        is_flag=True,
        help=LOCAL_HELP,
    )(fn)
    return fn


def target_options(fn: F) -> F:
    """The server options, and --org-policy FILE (always wins over the Org Policy API)."""
    fn = click.option(
        "--org-policy",
        "org_policy",
        type=click.Path(path_type=Path),
        help=ORG_POLICY_HELP,
    )(fn)
    return server_options(fn)


def project_ids(
    _ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """Each --project P a valid project ID, checked before anything is read or
    written: a mistyped ID would otherwise read as a project with nothing in it."""
    for project in value:
        if problem := project_id_problem(project):
            raise click.BadParameter(
                f"{problem}; nothing was read or written. Name the project by its ID "
                "(`gcloud projects list`), not its number or display name",
                param=param,
            )
    return value


def project_option(help: str = PROJECT_HELP) -> Callable[[F], F]:
    """--project P, repeatable: only the declared topics of these projects (plan and
    apply's meaning by default; residency passes its own)."""
    return click.option(
        "--project", "projects", multiple=True, metavar="P", help=help, callback=project_ids
    )


def prune_subscribed_option(fn: F) -> F:
    """--prune-subscribed: prune deletes topics that have subscriptions too (implies
    --prune); without it such a topic is kept and the plan says why."""
    return click.option(
        "--prune-subscribed",
        "prune_subscribed",
        is_flag=True,
        help=PRUNE_SUBSCRIBED_HELP,
    )(fn)


def strict_groups_option(fn: F) -> F:
    """--strict-groups: refusals resting on inferred value-group members become errors,
    an input to validation (and to the plan's org-policy checks) wherever it is given."""
    return click.option(
        "--strict-groups",
        is_flag=True,
        help=STRICT_GROUPS_HELP,
    )(fn)


def _allow_unjudged(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> AllowUnjudged:
    try:
        return AllowUnjudged.parse(values)
    except AllowUnjudgedError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def allow_unjudged_option(fn: F) -> F:
    """--allow-unjudged CONSTRAINT|all, repeatable: the explicit opt-out from failing
    on a custom constraint that could not be judged (reconciler/orgpolicy/unjudged.py),
    parsed here into an AllowUnjudged."""
    return click.option(
        "--allow-unjudged",
        "allow_unjudged",
        multiple=True,
        metavar="CONSTRAINT|all",
        callback=_allow_unjudged,
        help=ALLOW_UNJUDGED_HELP,
    )(fn)


PLAN_FORMATS_HELP = _shared(
    "text; json: the plan document (docs/plan-format.md); markdown: a pull-request "
    "comment; github: its diagnostics, warnings and drift as GitHub Actions annotations "
    "at the spec lines; sarif: the same as a SARIF 2.1.0 log for code scanning.",
    "plan", "show",
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
