"""`reconcile hedging advise`: choose a hedging profile from observed publish latencies,
a file of samples or the topic's own Cloud Monitoring metrics (`--topic`).

Light on purpose for a file: the spec loader (for `--profile`) and the pure-Python
simulator, never google-cloud or gRPC; `--topic` imports the backend and its
Monitoring reader when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.commands import output
from reconciler.commands._options import server_options
from reconciler.diagnostics import Diagnostics
from reconciler.errors import BackendError, InputError, UsageError
from reconciler.hedging.advise import advise, ms_text, read_samples, render
from reconciler.hedging.censored import Reconstruction
from reconciler.hedging.distribution import LatencyDistribution
from reconciler.hedging.labels import INLINE_NAME, PROFILE, LabelDecodeError
from reconciler.hedging.labels import decode as decode_labels
from reconciler.hedging.plot import plot_cdf, require_matplotlib
from reconciler.hedging.profile import HedgingProfile, format_ms
from reconciler.names import label_value_problem
from reconciler.render import escape
from reconciler.spec.documents import API_VERSION
from reconciler.spec.durations import DurationError, DurationRangeError, parse_duration_ms
from reconciler.spec.loader import load_tree
from reconciler.spec.profiles import profile_from_settings

if TYPE_CHECKING:
    from reconciler.hedging.observed import Observed

MIN_SINCE_S = 60  # Monitoring's sampling period: the shortest window it aligns
# CANCELLED and DEADLINE_EXCEEDED above this share of Publish calls: a warning.
ABANDONED_WARNING = 0.01


@click.group(name="hedging")
def command() -> None:
    """Publish hedging tools."""


@command.command(name="advise")
@click.argument("latencies", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--topic",
    metavar="projects/P/topics/T",
    help="Read the topic's publish latencies from Cloud Monitoring "
    "(topic/send_request_latencies, topic/send_request_count) instead of a file, and "
    "its current hedging profile from its labels.",
)
@click.option(
    "--since",
    default="1h",
    show_default=True,
    metavar="DURATION",
    help="With --topic: the window read, ending now (1m to 24h).",
)
@server_options
@click.option("--profile", "profile_name", help="HedgingProfile in the specs to start from.")
@click.option(
    "--specs",
    type=click.Path(path_type=Path),
    default=Path("specs"),
    show_default=True,
    help="Spec tree holding --profile.",
)
@click.option(
    "--p99-goal",
    metavar="DURATION",
    help="p99 to reach (e.g. 150ms): the fewest extra requests that meet it.",
)
@click.option(
    "--max-extra",
    type=click.FloatRange(0.0, 1.0),
    default=0.05,
    show_default=True,
    help="Extra-request budget (fraction of batches).",
)
@click.option(
    "--write-profile",
    metavar="NAME",
    help="Print the recommended HedgingProfile document named NAME on stdout "
    "(the report goes to stderr).",
)
@click.option("--plot", type=click.Path(path_type=Path, dir_okay=False), help="Write a CDF PNG.")
@click.option(
    "--batches",
    type=click.IntRange(100, 1_000_000),
    default=20_000,
    show_default=True,
    help="Batches simulated per candidate hedge delay.",
)
@click.option(
    "--client-overhead",
    metavar="DURATION",
    help="Time a publish takes at the publisher beyond the service's latency "
    "(round trip, client): added to every simulated batch (e.g. 2ms).",
)
@click.option(
    "--hedge-lateness",
    metavar="DURATION",
    help="How late the publisher's hedge checks run (its hedge_lateness counters): "
    "added to every simulated hedge check.",
)
@click.option(
    "--seed",
    type=int,
    default=2026,
    show_default=True,
    help="Seed of the simulation's random draws: the same seed, the same answer.",
)
def advise_command(
    latencies: Path | None,
    topic: str | None,
    since: str,
    local: bool,
    emulator: str | None,
    timeout: float,
    profile_name: str | None,
    specs: Path,
    p99_goal: str | None,
    max_extra: float,
    write_profile: str | None,
    plot: Path | None,
    batches: int,
    client_overhead: str | None,
    hedge_lateness: str | None,
    seed: int,
) -> None:
    """Simulate hedging over LATENCIES (milliseconds, or a Cloud Monitoring
    send_request_latencies JSON export) or over the --topic's own metrics, and
    recommend a hedge delay, max tokens and refill ratio."""
    _check_source(latencies, topic, local, emulator)
    goal_ms = float(_duration_ms("--p99-goal", p99_goal)) if p99_goal is not None else None
    overhead = _constant_ms("--client-overhead", client_overhead)
    hedge_lag = _constant_ms("--hedge-lateness", hedge_lateness)
    if write_profile is not None:
        _check_profile_name(write_profile)
    if plot is not None:
        require_matplotlib()
    profile = _profile(profile_name, specs) if profile_name else None
    rate: float | None = None
    warnings: list[str] = []
    notes: list[str] = []
    current: HedgingProfile | None = None
    count: int | None = None
    if topic is not None:
        window_s = _window_seconds(since)
        reading = _from_topic(topic, window_s, since, local, emulator, timeout)
        samples, rate, source = reading.latencies, reading.rate, reading.source
        current, count, notes, warnings = (
            reading.current, reading.samples, reading.notes, reading.warnings
        )
    else:
        assert latencies is not None
        if not latencies.exists():  # the reader names anything else
            raise UsageError(f"{latencies}: no such file", hint="pass a file of latency samples")
        samples = read_samples(latencies)
        # The report names the file: escaped before it goes into the report's lines.
        source = escape.text(str(latencies), backslash=False)
    advice = advise(samples, profile, max_extra=max_extra, batches=batches, seed=seed,
                    rate=rate, p99_goal_ms=goal_ms, overhead=overhead, hedge_lag=hedge_lag,
                    current=current, samples=count)
    report = output.stderr() if write_profile is not None else output.stdout()
    report.document(render(advice, source) + "\n")
    for note in notes:
        report.line(f"note: {note}")
    for warning in warnings:
        output.stderr().line(f"warning: {warning}")
    if plot is not None:
        plot_cdf(advice, plot)
        report.line(f"plot written to {plot}")
    if write_profile is not None:
        if advice.recommendation is None:
            raise InputError(
                f"no HedgingProfile written: hedging does not improve p99 or p99.9 for the "
                f"latencies of {source}",
                hint="leave hedging off for this topic",
            )
        output.stdout().document(profile_document(advice.recommendation, write_profile))


def _check_source(
    latencies: Path | None, topic: str | None, local: bool, emulator: str | None
) -> None:
    if latencies is not None and topic is not None:
        raise UsageError(
            "pass either a LATENCIES file or --topic, not both",
            hint="a file holds samples; --topic reads the topic's metrics",
        )
    if latencies is None and topic is None:
        raise UsageError(
            "nothing to advise on: pass a LATENCIES file or --topic projects/P/topics/T",
            hint="e.g. reconcile hedging advise --topic projects/my-project/topics/orders",
        )
    if topic is None and (local or emulator):
        raise UsageError("--local and --emulator choose where --topic's metrics are read")


def _duration_ms(option: str, text: str) -> int:
    try:
        return parse_duration_ms(text)
    except (DurationError, DurationRangeError) as exc:
        raise UsageError(f"{option}: {exc}") from None


def _constant_ms(option: str, text: str | None) -> list[float] | None:
    """A duration option as one latency (ms) the simulation adds every time."""
    return None if text is None else [float(_duration_ms(option, text))]


def _window_seconds(since: str) -> int:
    seconds = _duration_ms("--since", since) // 1000
    if seconds < MIN_SINCE_S:
        raise UsageError(
            f"--since {since} is shorter than 1m",
            hint="Cloud Monitoring aligns publish metrics per minute: pass 1m or more",
        )
    return seconds


def _check_profile_name(name: str) -> None:
    problem = label_value_problem(PROFILE, name) or (None if name else "it is empty")
    if problem or name == INLINE_NAME:
        raise UsageError(
            f"--write-profile {name!r}: a profile name must be 1 to 63 lowercase letters, "
            f"digits, '_' or '-', and not {INLINE_NAME!r}"
        )


@dataclass(frozen=True)
class TopicReading:
    """What `--topic` read: the latencies to simulate (rebuilt from the cut-short
    calls where there are any), how many calls they come from, the topic's batch
    rate, its current profile, the source line and what to tell the user."""

    latencies: LatencyDistribution
    samples: int
    rate: float | None
    current: HedgingProfile | None
    source: str
    notes: list[str]
    warnings: list[str]


def _from_topic(
    topic: str, window_s: int, since: str, local: bool, emulator: str | None, timeout: float
) -> TopicReading:
    """The topic's labels (its profile) and its publish metrics."""
    # google-cloud (the backend and its Monitoring reader) only for --topic.
    from reconciler.backends.base import TargetOptions
    from reconciler.backends.connect import open_backend
    from reconciler.backends.metrics import MetricsUnavailable
    from reconciler.hedging.observed import BadPoint, NoLatencies, observe, split_topic

    try:
        project, topic_id = split_topic(topic)
    except ValueError as exc:
        raise UsageError(f"--topic: {exc}") from None
    backend = open_backend(TargetOptions(local, emulator, None, timeout))
    where = backend.info.label
    try:
        live = backend.get_topic(topic)
        if live is None:
            raise InputError(
                f"topic {topic_id} not found in project {project} ({where})",
                hint=f"check the name: `gcloud pubsub topics list --project {project}` "
                "lists the project's topics",
            )
        current, warnings = _current_profile(topic, live.shape.labels)
        observed = observe(backend.metrics(), topic, window_s)
    except MetricsUnavailable as exc:
        hint = (
            f"grant {exc.role} on project {project} to the caller"
            if exc.role
            else "read the metrics where the topic's publishers publish (Google Cloud, or "
            "`reconcile local-server` with --emulator), or pass a LATENCIES file"
        )
        raise BackendError(
            f"topic {topic_id} (project {project}): cannot read its publish metrics: "
            f"{exc.reason}",
            hint=hint,
        ) from None
    except BadPoint as exc:
        raise BackendError(
            f"topic {topic_id} (project {project}): Cloud Monitoring returned a "
            f"topic/send_request_latencies value that breaks its Distribution rules "
            f"({where}): {exc.where}: {exc.problem}; no advice is drawn from it",
            hint="read another window (--since), or export the metric and pass the file "
            "as LATENCIES once the service answers a valid distribution",
        ) from None
    except NoLatencies:
        hint = "publish to it first, or widen --since"
        if local:
            hint = (
                "the embedded server records publish metrics only while it runs: publish "
                "through `reconcile local-server` and read them with --emulator HOST:PORT"
            )
        raise InputError(
            f"topic {topic_id} (project {project}): no successful publish recorded in the "
            f"last {since} ({where})",
            hint=hint,
        ) from None
    finally:
        backend.close()
    source = f"topic/send_request_latencies of {topic} (last {since}, {where})"
    rebuilt = observed.attempts()
    notes = _cut_short_notes(rebuilt, current)
    warnings += _abandoned_warnings(observed, topic, since, current)
    return TopicReading(rebuilt.latencies, rebuilt.completed + rebuilt.cut_short,
                        observed.batch_rate, current, source, notes, warnings)


def _current_profile(
    topic: str, labels: Mapping[str, str]
) -> tuple[HedgingProfile | None, list[str]]:
    """The profile the topic's labels give its publishers (None: they hedge not)."""
    try:
        decoded = decode_labels(labels)
    except LabelDecodeError as exc:
        return None, [f"{topic}: {exc}; advised as if its publishers do not hedge"]
    return (decoded[0] if decoded is not None else None), []


def _cut_short_notes(rebuilt: Reconstruction, current: HedgingProfile | None) -> list[str]:
    if not rebuilt.cut_short:
        return []
    why = ("the losing attempts of hedged batches, and any the deadline ended"
           if current is not None else "cancelled by the client or ended by its deadline")
    notes = [
        f"{rebuilt.cut_short} calls were cut short ({why}): read as attempts that ran at "
        "least as long as recorded, with the completed ones (Kaplan-Meier), so the "
        "table is for one attempt's latency as if nothing had cut it short"
    ]
    if rebuilt.unresolved > 0:
        notes.append(
            f"{rebuilt.unresolved:.2%} of attempts ran past {ms_text(rebuilt.unresolved_above_ms)} "
            "and none that slow completed: they are simulated at that time, so the p99 "
            "without hedging, and any hedge delay from then on, are judged from a lower "
            "bound"
        )
    return notes


def _abandoned_warnings(
    observed: Observed, topic: str, since: str, current: HedgingProfile | None
) -> list[str]:
    """A deadline too short for the topic's latencies shows as calls the client gave
    up on; a hedging publisher's cancelled losers are not that."""
    from reconciler.hedging.observed import CANCELLED, DEADLINE_EXCEEDED  # with --topic only

    abandoned = observed.fraction(DEADLINE_EXCEEDED)
    codes = "DEADLINE_EXCEEDED"
    if current is None:
        abandoned += observed.fraction(CANCELLED)
        codes = "CANCELLED or DEADLINE_EXCEEDED"
    if abandoned <= ABANDONED_WARNING:
        return []
    return [
        f"{abandoned:.1%} of the {observed.total_calls} Publish calls to {topic} in the "
        f"last {since} ended {codes}: the publishers' request deadline is likely too "
        "short for this topic's latencies (raise initialRpcTimeout/totalTimeout)"
    ]


def profile_document(profile: HedgingProfile, name: str) -> str:
    """The HedgingProfile spec document for `profile`, to add to the spec tree: it
    starts with `---`, so that it can be appended to a file of profiles."""
    return (
        "---\n"
        f"apiVersion: {API_VERSION}\n"
        "kind: HedgingProfile\n"
        f"metadata: {{name: {name}}}\n"
        f"spec: {{hedgeDelay: {format_ms(profile.hedge_delay_ms)}, "
        f"maxTokens: {profile.max_tokens}, refillRatio: {profile.refill_ratio:g}}}\n"
    )


def _profile(name: str, specs: Path) -> HedgingProfile:
    diags = Diagnostics()
    tree = load_tree([specs], diags)
    for located in tree.profiles:
        if located.model.metadata.name == name:
            profile = profile_from_settings(located.model.spec, name)
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
