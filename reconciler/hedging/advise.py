"""`reconcile hedging advise`: read publish latencies, simulate candidate hedge delays
with the publisher's semantics (simulate.py), recommend one. Pure Python (no google
or gRPC imports).

Latencies come from a text file (milliseconds, one or more per line, `#` comments)
or from Cloud Monitoring's `topic/send_request_latencies` distribution exported as
JSON (a `timeSeries` list as `projects.timeSeries.list` returns it, one time series,
or one `distributionValue`): each distribution is checked against the service's
rules (histogram.py: an error names the file and the JSON path), and every bucket
keeps its count, its draws spread across it (distribution.py). Bounds are in the time
series' `unit` (`us` as the service reports the metric, `ms`, `s`), in milliseconds
where the export gives none. `advise` takes any `LatencyDistribution`, so a caller that
reads the metric itself passes its buckets straight in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler.errors import InputError
from reconciler.fileio import FileProblem, read_bytes
from reconciler.hedging import histogram
from reconciler.hedging.distribution import LatencyDistribution
from reconciler.hedging.profile import (
    DEFAULT_MAX_TOKENS,
    HEDGE_DELAY_MS,
    HedgingProfile,
    format_ms,
)
from reconciler.hedging.simulate import Outcome, as_distribution, simulate

CANDIDATES_MS = (100, 150, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000)
MAX_SAMPLES = 2_000_000
MAX_FILE_BYTES = 256 * 1024 * 1024


# The bucket settings tried for a recommendation (within the rules' ranges). Never
# fewer tokens than the default 50: the simulation draws attempts independently, while
# real slow periods come in bursts that a small bucket would leave unhedged.
REFILL_LADDER = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
TOKENS_LADDER = (DEFAULT_MAX_TOKENS, 100, 250)


@dataclass(frozen=True)
class Advice:
    samples: int  # observations in the distribution
    baseline: Outcome
    candidates: tuple[Outcome, ...]  # one per delay, with `profile`'s bucket
    recommended: Outcome  # with `recommendation`'s bucket
    profile: HedgingProfile  # the bucket the candidates were simulated with
    max_extra: float
    rate: float | None = None  # batches per second simulated (None: one after another)
    recommendation: HedgingProfile | None = None  # None: leave hedging off
    p99_goal_ms: float | None = None
    # The profile the topic's labels say its publishers hedge with, and what it does
    # to these latencies (None: the topic does not hedge, or it was not asked).
    current_profile: HedgingProfile | None = None
    current: Outcome | None = None

    @property
    def goal_met(self) -> bool | None:
        if self.p99_goal_ms is None:
            return None
        return self.recommended.p99_ms <= self.p99_goal_ms


def read_samples(path: Path) -> LatencyDistribution:
    """Latencies in milliseconds; InputError naming file and line for bad input."""
    try:
        text = read_bytes(path, MAX_FILE_BYTES).decode("utf-8")
    except FileProblem as exc:  # not a regular file (a FIFO, a device), unreadable
        if exc.code == "file-too-large":
            limit = MAX_FILE_BYTES // 2**20
            raise InputError(f"{path}: larger than {limit} MiB; sample it") from None
        raise InputError(f"{exc.where(path)}: {exc.message}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        samples = _from_json(path, stripped)
    else:
        samples = LatencyDistribution.from_samples(_from_text(path, text))
    if not samples.count:
        raise InputError(
            f"{path}: no latency samples found",
            hint="write one latency in milliseconds per line, or export "
            "topic/send_request_latencies from Cloud Monitoring as JSON",
        )
    return samples


def _from_text(path: Path, text: str) -> list[float]:
    out: list[float] = []
    for number, line in enumerate(text.splitlines(), 1):
        for token in line.split("#", 1)[0].replace(",", " ").split():
            try:
                value = float(token.removesuffix("ms"))
            except ValueError:
                raise InputError(
                    f"{path}:{number}: {token!r} is not a latency in milliseconds",
                    hint="write numbers such as 5.2 or 2000, one or more per line",
                ) from None
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{path}:{number}: latency {token} must be 0 or more")
            out.append(value)
            if len(out) > MAX_SAMPLES:
                raise InputError(f"{path}:{number}: more than {MAX_SAMPLES} samples; sample it")
    return out


def _from_json(path: Path, text: str) -> LatencyDistribution:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, [[[[...]]]]
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(f"{path}: not a JSON document reconcile reads ({reason})") from None
    out = LatencyDistribution()
    found = False
    for where, dist, unit_ms in _distributions(path, data):
        found = True
        try:
            out += histogram.read(dist, where).latencies(unit_ms)
        except histogram.HistogramError as exc:
            raise InputError(
                f"{path}: {exc.where or 'the distribution'}: {exc.what}",
                hint="no advice from a histogram that breaks Cloud Monitoring's "
                "Distribution rules: export topic/send_request_latencies again, unedited",
            ) from None
    if not found:
        raise InputError(
            f"{path}: no Cloud Monitoring distribution found",
            hint="expected timeSeries[].points[].value.distributionValue",
        )
    return out


# What the bounds of an exported time series are in (its `unit`), as milliseconds; an
# export without one is read in milliseconds.
UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
_WALKED = ("timeSeries", "points", "value", "distributionValue")


def _distributions(path: Path, data: Any) -> Iterator[tuple[str, Any, float]]:
    """Each distribution in an export: (its JSON path, the value, its unit in ms). A
    `timeSeries` list, one time series, its points, one point, its value or one
    `distributionValue`; walked without recursion (any depth of nesting)."""
    stack: list[tuple[str, Any, float]] = [("", data, 1.0)]
    while stack:
        where, item, unit_ms = stack.pop()
        if isinstance(item, list):
            stack += reversed([(f"{where}[{i}]", x, unit_ms) for i, x in enumerate(item)])
        elif isinstance(item, dict):
            if "bucketCounts" in item or "bucketOptions" in item:
                yield where, item, unit_ms
                continue
            if "unit" in item:
                unit_ms = _unit_ms(path, where, item["unit"])
            stack += reversed([
                (f"{where}.{key}" if where else key, item[key], unit_ms)
                for key in _WALKED if key in item
            ])


def _unit_ms(path: Path, where: str, unit: Any) -> float:
    if unit in UNITS_MS:
        return UNITS_MS[unit]
    at = f"{where}.unit" if where else "unit"
    raise InputError(
        f"{path}: {at}: {unit!r} is not a unit of latency reconcile reads",
        hint=f"export topic/send_request_latencies (unit {', '.join(map(repr, UNITS_MS))})",
    )


def advise(
    latencies: LatencyDistribution | Sequence[float],
    profile: HedgingProfile | None = None,
    max_extra: float = 0.05,
    batches: int = 20_000,
    seed: int = 2026,
    rate: float | None = None,
    p99_goal_ms: float | None = None,
    overhead: LatencyDistribution | Sequence[float] | None = None,
    hedge_lag: LatencyDistribution | Sequence[float] | None = None,
    current: HedgingProfile | None = None,
    samples: int | None = None,
) -> Advice:
    """Simulate every candidate delay (batches arriving at `rate` per second if known,
    the bucket starting empty) and recommend one.

    Without `p99_goal_ms`: the lowest p99 within `max_extra` extra requests (ties
    within 1%: the fewer extra requests). With it: the fewest extra requests whose p99
    meets the goal (within `max_extra`), else the lowest p99. With `profile`, its
    maxTokens and refillRatio are kept; without, the candidates run with the largest
    refill ratio within the budget (so the bucket itself holds hedging to it) and
    250 tokens, then the smallest refill ratio and maxTokens that keep the chosen
    delay's p99 are recommended. `overhead` and `hedge_lag`: what the client adds to
    each attempt and each hedge check (simulate.py), in milliseconds. `current`: the
    profile the publishers hedge with now (the topic's labels), simulated beside the
    candidates. `samples`: the observations behind `latencies` where its counts are
    weights (a reconstruction, censored.py)."""
    dist = as_distribution(latencies)
    tune = profile is None
    base = profile or HedgingProfile(
        max_tokens=TOKENS_LADDER[-1], refill_ratio=_refill_for(max_extra)
    )
    baseline = simulate(dist, None, batches, seed, overhead=overhead)

    def run(p: HedgingProfile) -> Outcome:
        return simulate(dist, p, batches, seed, rate, overhead=overhead, hedge_lag=hedge_lag)

    delays = sorted({*CANDIDATES_MS, base.hedge_delay_ms})
    lo, hi = HEDGE_DELAY_MS
    outcomes = tuple(run(replace(base, hedge_delay_ms=d)) for d in delays if lo <= d <= hi)
    best = _choose(outcomes, max_extra, p99_goal_ms)
    assert best.hedge_delay_ms is not None
    chosen, result = replace(base, hedge_delay_ms=best.hedge_delay_ms), best
    if tune:
        chosen, result = _smallest_bucket(chosen, best, p99_goal_ms, run)
    helps = result.p99_ms < baseline.p99_ms * 0.99 or result.p999_ms < baseline.p999_ms * 0.99
    return Advice(
        samples if samples is not None else dist.count, baseline, outcomes, result, base,
        max_extra, rate,
        recommendation=replace(chosen, name=None) if helps else None, p99_goal_ms=p99_goal_ms,
        current_profile=current, current=run(current) if current is not None else None,
    )


def _refill_for(max_extra: float) -> float:
    """The largest refill ratio of the ladder within the budget (the smallest if none):
    in the long run a bucket refilled so never lets hedges exceed it."""
    within = [r for r in REFILL_LADDER if r <= max_extra + 1e-12]
    return within[-1] if within else REFILL_LADDER[0]


def _choose(outcomes: Sequence[Outcome], max_extra: float, goal: float | None) -> Outcome:
    allowed = [o for o in outcomes if o.extra_fraction <= max_extra]
    if not allowed:
        return min(outcomes, key=lambda o: o.extra_fraction)
    if goal is not None:
        meeting = [o for o in allowed if o.p99_ms <= goal]
        if meeting:
            return min(meeting, key=lambda o: (o.extra_fraction, -(o.hedge_delay_ms or 0)))
    low = min(o.p99_ms for o in allowed)
    near = [o for o in allowed if o.p99_ms <= low * 1.01]
    return min(near, key=lambda o: (o.extra_fraction, -(o.hedge_delay_ms or 0)))


def _smallest_bucket(
    chosen: HedgingProfile,
    outcome: Outcome,
    goal: float | None,
    run: Callable[[HedgingProfile], Outcome],
) -> tuple[HedgingProfile, Outcome]:
    """The smallest refill ratio, then the fewest tokens, whose p99 stays within 1% of
    the chosen delay's (or meets the goal): a smaller bucket bounds the extra requests
    more tightly if the latencies get worse."""
    target = max(outcome.p99_ms * 1.01, goal or 0.0)
    for refill in (r for r in REFILL_LADDER if r < chosen.refill_ratio):
        trial = run(replace(chosen, refill_ratio=refill))
        if trial.p99_ms <= target:
            chosen, outcome = replace(chosen, refill_ratio=refill), trial
            break
    for tokens in (t for t in TOKENS_LADDER if t < chosen.max_tokens):
        trial = run(replace(chosen, max_tokens=tokens))
        if trial.p99_ms <= target:
            chosen, outcome = replace(chosen, max_tokens=tokens), trial
            break
    return chosen, outcome


def render(advice: Advice, source: str) -> str:
    b, p = advice.baseline, advice.profile
    arrival = f"at {advice.rate:.3g}/s" if advice.rate else "one after another"
    bucket = f"maxTokens {p.max_tokens}, refillRatio {p.refill_ratio:g}"
    lines = [
        f"{advice.samples} latency samples from {source}",
        f"{f'profile {p.name}: ' if p.name else 'candidates with '}{bucket} "
        f"(simulated {len(b.latencies_ms)} batches {arrival}, attempts drawn "
        "independently, token bucket starting empty)",
        "",
        f"{'hedge delay':<12} {'p50':>10} {'p99':>10} {'p99.9':>10} {'extra requests':>15}",
    ]
    r, rec = advice.recommended, advice.recommendation
    for o in (b, *advice.candidates):
        delay = "off" if o.hedge_delay_ms is None else format_ms(o.hedge_delay_ms)
        mark = "  <- recommended delay" if rec and o.hedge_delay_ms == r.hedge_delay_ms else ""
        current = "  (profile)" if p.name and o.hedge_delay_ms == p.hedge_delay_ms else ""
        lines.append(
            f"{delay:<12} {ms_text(o.p50_ms):>10} {ms_text(o.p99_ms):>10} {ms_text(o.p999_ms):>10} "
            f"{o.extra_fraction:>14.2%}{mark}{current}"
        )
    goal = advice.p99_goal_ms
    unmet = f"p99 goal {ms_text(goal)}: NOT met: no profile within the budget reaches it" if (
        goal is not None) else ""
    now, c = advice.current_profile, advice.current
    if now is not None and c is not None:
        lines += [
            "",
            f"current (the topic's labels{f', profile {now.name}' if now.name else ''}): "
            f"hedgeDelay {format_ms(now.hedge_delay_ms)}, maxTokens {now.max_tokens}, "
            f"refillRatio {now.refill_ratio:g}",
            f"predicted: p99 {ms_text(b.p99_ms)} -> {ms_text(c.p99_ms)}, p99.9 "
            f"{ms_text(b.p999_ms)} -> {ms_text(c.p999_ms)}, {c.extra_fraction:.2%} extra "
            "requests",
            *duplicates_lines(c),
        ]
    if rec is None:
        verb = "turn it off" if now is not None else "leave it off"
        lines += ["", f"hedging does not improve p99 or p99.9 for these latencies: {verb}"]
        if goal is not None and not advice.goal_met:
            lines.append(unmet)
        return "\n".join(lines)
    lines += [
        "",
        f"recommended: hedgeDelay {format_ms(rec.hedge_delay_ms)}, maxTokens {rec.max_tokens}, "
        f"refillRatio {rec.refill_ratio:g}",
        f"predicted: p99 {ms_text(b.p99_ms)} -> {ms_text(r.p99_ms)}, p99.9 {ms_text(b.p999_ms)} -> "
        f"{ms_text(r.p999_ms)}, {r.extra_fraction:.2%} extra requests "
        f"(budget {advice.max_extra:.1%})",
        *duplicates_lines(r),
    ]
    if goal is not None:
        lines.append(f"p99 goal {ms_text(goal)}: met" if advice.goal_met else unmet)
    if r.dropped_fraction > 0:
        lines.append(
            f"note: {r.dropped_fraction:.2%} of batches found no token for a hedge (dropped); "
            "raise maxTokens or refillRatio for more"
        )
    return "\n".join(lines)


# Where Pub/Sub says that a message published twice is two messages, each with its own
# ID (docs/hedging.md cites it too).
DUPLICATES_SOURCE = (
    "Pub/Sub API reference, Subscription.enable_exactly_once_delivery: copies of a "
    "message published more than once are distinct, with distinct message_id values"
)


def duplicates_lines(o: Outcome) -> list[str]:
    """What extra requests cost besides requests: each batch a hedge answers first
    may be stored twice (its original was cancelled, which does not undo a publish
    the service already stored), and subscribers see two message IDs."""
    return [
        f"duplicates: a hedge answers first in {o.won_fraction:.2%} of batches; each such "
        "batch can be delivered twice, under a new message ID (its cancelled original may "
        "be stored too): deduplicate on a key of your own, not on the message ID",
        f"  source: {DUPLICATES_SOURCE}",
    ]


def ms_text(value: float) -> str:
    return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"
