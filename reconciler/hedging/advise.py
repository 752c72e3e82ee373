"""`reconcile hedging advise`: read publish latencies, simulate candidate hedge delays
with the publisher's semantics (simulate.py), recommend one. Pure Python (no google
or gRPC imports).

Latencies come from a text file (milliseconds, one or more per line, `#` comments)
or from Cloud Monitoring's `topic/send_request_latencies` distribution exported as
JSON (a `timeSeries` list as `projects.timeSeries.list` returns it, one time series,
or one `distributionValue`): every bucket keeps its count, its draws spread across
it (distribution.py). `advise` takes any `LatencyDistribution`, so a caller that
reads the metric itself passes its buckets straight in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler.errors import InputError
from reconciler.fileio import FileProblem, read_bytes
from reconciler.hedging.distribution import LatencyDistribution, buckets_from_bounds
from reconciler.hedging.profile import HEDGE_DELAY_MS, HedgingProfile, format_ms
from reconciler.hedging.simulate import Outcome, as_distribution, simulate

CANDIDATES_MS = (100, 150, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000)
MAX_SAMPLES = 2_000_000
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Advice:
    samples: int  # observations in the distribution
    baseline: Outcome
    candidates: tuple[Outcome, ...]
    recommended: Outcome
    profile: HedgingProfile
    max_extra: float
    rate: float | None = None  # batches per second simulated (None: one after another)


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
    out = LatencyDistribution()
    found = False
    for dist in _distributions(data):
        found = True
        try:
            out += _buckets(dist)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{path}: a distributionValue cannot be read ({exc})",
                hint="export topic/send_request_latencies with its bucketOptions and "
                "bucketCounts",
            ) from None
    if not found:
        raise InputError(
            f"{path}: no Cloud Monitoring distribution found",
            hint="expected timeSeries[].points[].value.distributionValue",
        )
    return out


def _distributions(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for item in data:
            yield from _distributions(item)
    elif isinstance(data, dict):
        if "bucketCounts" in data or "bucketOptions" in data:
            yield data
            return
        for key in ("timeSeries", "points", "value", "distributionValue"):
            if key in data:
                yield from _distributions(data[key])


def _bounds(options: dict[str, Any]) -> list[float]:
    """The finite boundaries between the buckets (underflow ... overflow)."""
    if "explicitBuckets" in options:
        return [float(b) for b in options["explicitBuckets"]["bounds"]]
    if "linearBuckets" in options:
        o = options["linearBuckets"]
        width, offset = float(o["width"]), float(o.get("offset", 0))
        return [offset + width * i for i in range(int(o["numFiniteBuckets"]) + 1)]
    o = options["exponentialBuckets"]
    scale, growth = float(o["scale"]), float(o["growthFactor"])
    return [scale * growth**i for i in range(int(o["numFiniteBuckets"]) + 1)]


def _buckets(dist: dict[str, Any]) -> LatencyDistribution:
    counts = [int(c) for c in dist.get("bucketCounts", [])]
    options = dist["bucketOptions"]
    geometric = "exponentialBuckets" in options
    buckets = buckets_from_bounds(_bounds(options), counts, geometric)
    return LatencyDistribution(buckets=tuple(buckets))


def advise(
    latencies: LatencyDistribution | Sequence[float],
    profile: HedgingProfile | None = None,
    max_extra: float = 0.05,
    batches: int = 20_000,
    seed: int = 2026,
    rate: float | None = None,
) -> Advice:
    """Simulate every candidate delay (with `profile`'s tokens and refill, batches
    arriving at `rate` per second if known); recommend the lowest p99 within
    `max_extra` extra requests (ties within 1%: the fewer extra requests)."""
    dist = as_distribution(latencies)
    base = profile or HedgingProfile()
    baseline = simulate(dist, None, batches, seed)
    delays = sorted({*CANDIDATES_MS, base.hedge_delay_ms})
    lo, hi = HEDGE_DELAY_MS
    outcomes = tuple(
        simulate(dist, replace(base, hedge_delay_ms=d), batches, seed, rate)
        for d in delays
        if lo <= d <= hi
    )
    allowed = [o for o in outcomes if o.extra_fraction <= max_extra]
    if not allowed:
        best = min(outcomes, key=lambda o: o.extra_fraction)
    else:
        low = min(o.p99_ms for o in allowed)
        near = [o for o in allowed if o.p99_ms <= low * 1.01]
        best = min(near, key=lambda o: (o.extra_fraction, -(o.hedge_delay_ms or 0)))
    return Advice(dist.count, baseline, outcomes, best, base, max_extra, rate)


def render(advice: Advice, source: str) -> str:
    b, p = advice.baseline, advice.profile
    name = p.name or "default"
    arrival = f"at {advice.rate:g}/s" if advice.rate else "one after another"
    lines = [
        f"{advice.samples} latency samples from {source}",
        f"profile {name}: maxTokens {p.max_tokens}, refillRatio {p.refill_ratio:g} "
        f"(simulated {len(b.latencies_ms)} batches {arrival}, attempts drawn "
        "independently, token bucket starting empty)",
        "",
        f"{'hedge delay':<12} {'p50':>10} {'p99':>10} {'p99.9':>10} {'extra requests':>15}",
    ]
    for o in (b, *advice.candidates):
        delay = "off" if o.hedge_delay_ms is None else format_ms(o.hedge_delay_ms)
        mark = "  <- recommended" if o is advice.recommended else ""
        current = "  (profile)" if p.name and o.hedge_delay_ms == p.hedge_delay_ms else ""
        lines.append(
            f"{delay:<12} {_ms(o.p50_ms):>10} {_ms(o.p99_ms):>10} {_ms(o.p999_ms):>10} "
            f"{o.extra_fraction:>14.2%}{mark}{current}"
        )
    r = advice.recommended
    assert r.hedge_delay_ms is not None
    if r.p99_ms >= b.p99_ms * 0.99 and r.p999_ms >= b.p999_ms * 0.99:
        lines += ["", "hedging does not improve p99 or p99.9 for these latencies: leave it off"]
        return "\n".join(lines)
    lines += [
        "",
        f"recommended: hedgeDelay {format_ms(r.hedge_delay_ms)}: p99 {_ms(b.p99_ms)} -> "
        f"{_ms(r.p99_ms)}, p99.9 {_ms(b.p999_ms)} -> {_ms(r.p999_ms)}, "
        f"{r.extra_fraction:.2%} extra requests (limit {advice.max_extra:.0%})",
    ]
    if r.dropped_fraction > 0:
        lines.append(
            f"note: {r.dropped_fraction:.2%} of batches found no token for a hedge (dropped); "
            "raise maxTokens or refillRatio for more"
        )
    return "\n".join(lines)


def _ms(value: float) -> str:
    return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"
