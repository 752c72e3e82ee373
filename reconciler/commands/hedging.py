"""`reconcile hedging advise`: choose a hedge delay from observed publish latencies.

Light on purpose: the spec loader (for `--profile`) and the pure-Python simulator,
never google-cloud or gRPC.
"""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.commands import output
from reconciler.diagnostics import Diagnostics
from reconciler.errors import InputError, UsageError
from reconciler.hedging.advise import advise, read_samples, render
from reconciler.hedging.profile import HedgingProfile
from reconciler.render import escape
from reconciler.spec.loader import load_tree


@click.group(name="hedging")
def command() -> None:
    """Publish hedging tools."""


@command.command(name="advise")
@click.argument("latencies", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--profile", "profile_name", help="HedgingProfile in the specs to start from.")
@click.option(
    "--specs",
    type=click.Path(path_type=Path),
    default=Path("specs"),
    show_default=True,
    help="Spec tree holding --profile.",
)
@click.option("--plot", type=click.Path(path_type=Path, dir_okay=False), help="Write a CDF PNG.")
@click.option(
    "--max-extra",
    type=click.FloatRange(0.0, 1.0),
    default=0.05,
    show_default=True,
    help="Largest extra-request fraction to recommend.",
)
@click.option(
    "--batches",
    type=click.IntRange(100, 1_000_000),
    default=20_000,
    show_default=True,
    help="Batches simulated per candidate hedge delay.",
)
@click.option(
    "--seed",
    type=int,
    default=2026,
    show_default=True,
    help="Seed of the simulation's random draws: the same seed, the same answer.",
)
def advise_command(
    latencies: Path,
    profile_name: str | None,
    specs: Path,
    plot: Path | None,
    max_extra: float,
    batches: int,
    seed: int,
) -> None:
    """Simulate hedging over LATENCIES (milliseconds, or a Cloud Monitoring
    send_request_latencies JSON export) and recommend a hedge delay."""
    if not latencies.exists():  # the reader names anything else
        raise UsageError(f"{latencies}: no such file", hint="pass a file of latency samples")
    profile = _profile(profile_name, specs) if profile_name else None
    samples = read_samples(latencies)
    advice = advise(samples, profile, max_extra=max_extra, batches=batches, seed=seed)
    # The report names the file: escaped before it goes into the report's lines.
    source = escape.text(str(latencies), backslash=False)
    output.stdout().document(render(advice, source) + "\n")
    if plot is not None:
        from reconciler.hedging.plot import plot_cdf  # matplotlib, an optional extra

        plot_cdf(advice, plot)
        output.stdout().line(f"plot written to {plot}")


def _profile(name: str, specs: Path) -> HedgingProfile:
    diags = Diagnostics()
    tree = load_tree([specs], diags)
    for located in tree.profiles:
        if located.model.metadata.name == name:
            s, base = located.model.spec, HedgingProfile()
            profile = HedgingProfile(
                hedge_delay_ms=s.hedge_delay if s.hedge_delay is not None else base.hedge_delay_ms,
                max_tokens=s.max_tokens if s.max_tokens is not None else base.max_tokens,
                refill_ratio=float(s.refill_ratio)
                if s.refill_ratio is not None
                else base.refill_ratio,
                name=name,
            )
            problems = profile.problems()
            if problems:
                raise InputError(
                    f"{located.path}: profile {name!r}: {problems[0].message}",
                    hint="run `reconcile validate` and fix the profile first",
                )
            return profile
    known = sorted(p.model.metadata.name for p in tree.profiles)
    raise UsageError(
        f"no HedgingProfile named {name!r} under {specs}",
        hint=f"known profiles: {', '.join(known)}" if known else "pass --specs DIR",
    )
