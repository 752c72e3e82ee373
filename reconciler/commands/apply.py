"""`reconcile apply [PATH... | PLANFILE]`: options in, one call to reconciler.apply.run,
exit code out (the flow, its output and exit codes are documented there)."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.apply.executor import DEFAULT_CONCURRENCY, DEFAULT_READBACK_WAIT
from reconciler.apply.ratelimit import DEFAULT_RATE
from reconciler.apply.retry import DEFAULT_PROPAGATION_WAIT
from reconciler.commands._options import project_option, target_options, use_colour


@click.command("apply")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@target_options
@project_option
@click.option("--auto-approve", is_flag=True, help="Apply without asking for confirmation.")
@click.option(
    "--prune", is_flag=True, help="Delete undeclared topics that carry the ownership label."
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Topics applied in parallel.",
)
@click.option(
    "--rate-limit",
    "rate_limit",
    type=click.FloatRange(min=0),
    default=DEFAULT_RATE,
    show_default=True,
    help="Admin calls per second per project (Pub/Sub administrator-operation quota); "
    "0 = no limit.",
)
@click.option(
    "--propagation-wait",
    "propagation_wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_PROPAGATION_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="How long to keep retrying calls that a recently created project refuses "
    "while its organization policy propagates (0 = fail at once).",
)
@click.option(
    "--readback-wait",
    "readback_wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_READBACK_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="How long to poll a new topic until it is readable; then warn (never fail).",
)
@click.option(
    "--expect-digest",
    "expect_digest",
    metavar="sha256:HEX",
    help="Apply the PLANFILE only if its digest is this one (the digest the reviewer saw).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def command(
    paths: tuple[Path, ...],
    local: bool,
    emulator: str | None,
    org_policy: Path | None,
    auto_approve: bool,
    prune: bool,
    concurrency: int,
    rate_limit: float,
    propagation_wait: float,
    readback_wait: float,
    fmt: str,
    timeout: float,
    expect_digest: str | None,
    projects: tuple[str, ...],
) -> int:
    """Apply the specs under PATH... (default: specs/), or a saved PLANFILE."""
    from reconciler.apply.run import Settings, run_apply
    from reconciler.plan.run import Target

    settings = Settings(
        auto_approve,
        prune,
        concurrency,
        rate_limit,
        fmt,
        use_colour(),
        propagation_wait=propagation_wait,
        readback_wait=readback_wait,
        expect_digest=expect_digest,
        projects=projects,
    )
    return run_apply(paths, Target(local, emulator, org_policy, timeout), settings)
