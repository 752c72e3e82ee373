"""`reconcile hedging advise`: the simulator's figures, both input formats, the
recommendation, its errors, and that it stays light (no google or gRPC import)."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.hedging.advise import advise, read_samples
from reconciler.hedging.distribution import Bucket, LatencyDistribution
from reconciler.hedging.profile import HedgingProfile
from reconciler.hedging.simulate import simulate

ROOT = Path(__file__).parents[2]
# 2% of publishes take 2 s, the rest 5 ms: the benchmark's tail case.
TAIL = [5.0] * 980 + [2000.0] * 20


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_simulated_hedging_cuts_the_tail_for_about_the_slow_fraction() -> None:
    off = simulate(TAIL, None)
    on = simulate(TAIL, HedgingProfile(hedge_delay_ms=100))
    assert (off.p50_ms, off.p99_ms) == (5.0, 2000.0)
    assert on.p99_ms == 105.0  # the hedge, sent at 100 ms, answers in 5 ms
    # Every slow original is hedged, and 2% of the hedges are slow too: 2% + 2%².
    assert on.extra_fraction == pytest.approx(0.0204, abs=0.003)
    assert on.dropped_fraction < 0.001  # only while the empty bucket fills
    # The hedge answers first for a slow original with a fast hedge: 2% x 98%; each such
    # batch's cancelled original may be stored too (issue 46: a duplicate per win).
    assert on.won_fraction == pytest.approx(0.02 * 0.98, abs=0.003)
    assert off.won_fraction == 0.0


def test_the_simulated_bucket_starts_empty_as_the_publishers() -> None:
    """Every batch slow: the first ten (0.1 each) earn the first token, batch 10 spends
    it, and every batch's next hedge is dropped (never requeued)."""
    on = simulate([2000.0], HedgingProfile(hedge_delay_ms=100, refill_ratio=0.1), batches=20)
    assert on.extra_fraction == 1 / 20
    assert on.dropped_fraction == 1.0


def test_batches_arriving_together_share_the_bucket() -> None:
    """At 500 batches/s many are in flight at once: the same tail, the same figures
    within sampling noise, whichever way batches arrive."""
    profile = HedgingProfile(hedge_delay_ms=100)
    alone, together = simulate(TAIL, profile), simulate(TAIL, profile, rate=500)
    assert together.p99_ms == alone.p99_ms == 105.0
    assert together.extra_fraction == pytest.approx(alone.extra_fraction, rel=0.15)


def test_tokens_limit_hedging_to_the_refill_ratio() -> None:
    slow = [5.0] * 50 + [2000.0] * 50
    on = simulate(slow, HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.1))
    assert on.extra_fraction <= 0.1 + 1 / 20_000
    assert on.dropped_fraction > 0.3


def test_the_client_overhead_is_added_to_every_batch_not_to_hedge_decisions() -> None:
    """The service's metric does not see the client's own time; the publisher's
    callback does: 10 ms more on every batch. Even 150 ms of it hedges nothing more:
    the publisher's probe notices an answer that has arrived before it decides."""
    profile = HedgingProfile(hedge_delay_ms=100)
    base, slower = simulate(TAIL, profile), simulate(TAIL, profile, overhead=[10.0])
    assert (slower.p50_ms, slower.p99_ms) == (base.p50_ms + 10, base.p99_ms + 10)
    assert simulate(TAIL, None, overhead=[10.0]).p50_ms == 15.0
    stalled = simulate(TAIL, profile, overhead=[150.0])
    assert stalled.extra_fraction == base.extra_fraction


def test_late_hedge_checks_delay_the_hedged_tail() -> None:
    """A hedge check 30 ms late sends the hedge 30 ms later: the hedged p99 moves by
    that much, the unhedged part not at all."""
    profile = HedgingProfile(hedge_delay_ms=100)
    base, late = simulate(TAIL, profile), simulate(TAIL, profile, hedge_lag=[30.0])
    assert late.p99_ms == base.p99_ms + 30 and late.p50_ms == base.p50_ms
    assert late.extra_fraction == pytest.approx(base.extra_fraction, rel=0.05)


def test_a_histogram_mean_and_variance_place_the_draws_within_wide_buckets() -> None:
    """12% at 1,005 ms inside a x1.4 bucket (837, 1171]: spread across the bucket the
    p99 reads ~1,140 ms; narrowed to the histogram's mean and variance (what Cloud
    Monitoring's distributions carry) it reads where the calls were."""
    bounds = [1.4**i for i in range(40)]
    counts = [0] * 41
    counts[5], counts[21] = 880, 120  # 5 ms in (3.8, 5.4], 1,005 ms in (837, 1171]
    spread = LatencyDistribution.from_buckets(bounds, counts, geometric=True)
    values = [5.0] * 880 + [1005.0] * 120
    mean = sum(values) / len(values)
    ssd = sum((x - mean) ** 2 for x in values)
    fitted = spread.fitted(mean, ssd)
    assert fitted.mean() == pytest.approx(mean, rel=1e-3)
    assert fitted.variance() == pytest.approx(ssd / 1000, rel=1e-2)

    def p99(dist: LatencyDistribution) -> float:
        return simulate(dist, None, batches=20_000).p99_ms

    assert abs(p99(spread) - 1005) > 100
    assert abs(p99(fitted) - 1005) < 15
    assert spread.fitted(mean).mean() == pytest.approx(mean, rel=1e-3)  # mean alone
    assert spread.fitted(float("nan")) is spread  # no mean given: as before


def test_a_json_export_with_its_mean_is_fitted_to_it(tmp_path: Path) -> None:
    dist = {
        "count": "100", "mean": 900.0, "sumOfSquaredDeviation": 100 * 50.0**2,
        "bucketOptions": {"explicitBuckets": {"bounds": [0, 100, 1000]}},
        "bucketCounts": ["0", "10", "90", "0"],
    }
    samples = read_samples(write(tmp_path, "d.json", json.dumps(dist)))
    assert samples.mean() == pytest.approx(900.0, rel=1e-3)


def test_client_overhead_and_hedge_lateness_options(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    path = write(tmp_path, "lat.txt", "\n".join(map(str, TAIL)))
    plain = run_cli("hedging", "advise", str(path), "--batches", "2000")
    slower = run_cli("hedging", "advise", str(path), "--batches", "2000",
                     "--client-overhead", "10ms", "--hedge-lateness", "20ms")
    assert plain.exit_code == slower.exit_code == 0
    assert "predicted: p99 2000 ms -> 105 ms" in plain.stdout
    assert "predicted: p99 2010 ms -> 135 ms" in slower.stdout  # 10 + 20 ms later
    bad = run_cli("hedging", "advise", str(path), "--client-overhead", "soon")
    assert bad.exit_code == 1 and "--client-overhead: 'soon' is not a duration" in bad.stderr


def test_text_samples_and_the_recommendation(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    path = write(tmp_path, "lat.txt", "# publish latency, ms\n" + "\n".join(map(str, TAIL)))
    result = run_cli("hedging", "advise", str(path))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"1000 latency samples from {path}"
    assert any(line.startswith("off ") and "2000 ms" in line for line in lines)
    rec = next(line for line in lines if "<- recommended" in line)
    assert rec.split()[0] == "100ms"
    # 2% of batches need a hedge: a 5% budget bounds the bucket's refill to 0.05.
    assert "recommended: hedgeDelay 100ms, maxTokens " in result.stdout
    assert "predicted: p99 2000 ms -> 105 ms" in result.stdout
    # Issue 46: besides extra requests, the duplicates each winning hedge can make,
    # with where the service says so.
    duplicates = lines[lines.index(next(x for x in lines if x.startswith("predicted:"))) + 1]
    assert duplicates.startswith("duplicates: a hedge answers first in 1.")
    assert duplicates.endswith(
        "% of batches; each such batch can be delivered twice, under a new message ID "
        "(its cancelled original may be stored too): deduplicate on a key of your own, "
        "not on the message ID"
    )
    assert (
        "  source: Pub/Sub API reference, Subscription.enable_exactly_once_delivery"
    ) in result.stdout


def test_fast_latencies_get_no_hedging(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    path = write(tmp_path, "lat.txt", "5 6 7 8\n")
    result = run_cli("hedging", "advise", str(path))
    assert result.exit_code == 0
    assert "hedging does not improve p99 or p99.9 for these latencies" in result.stdout


def test_cloud_monitoring_distribution_export(tmp_path: Path) -> None:
    export = {
        "timeSeries": [
            {
                "metric": {"type": "pubsub.googleapis.com/topic/send_request_latencies"},
                "points": [
                    {
                        "value": {
                            "distributionValue": {
                                "count": "1000",
                                "bucketOptions": {
                                    "explicitBuckets": {"bounds": [0, 4, 8, 1000, 3000]}
                                },
                                "bucketCounts": ["0", "0", "980", "0", "20", "0"],
                            }
                        }
                    }
                ],
            }
        ]
    }
    path = write(tmp_path, "export.json", json.dumps(export))
    samples = read_samples(path)
    assert samples.count == 1000
    assert samples.buckets == (Bucket(4, 8, 980), Bucket(1000, 3000, 20))
    advice = advise(samples, HedgingProfile(hedge_delay_ms=100))
    assert advice.recommended.hedge_delay_ms == 100
    assert advice.recommended.p99_ms < 120 and advice.baseline.p99_ms > 1000


def test_exponential_buckets(tmp_path: Path) -> None:
    dist = {
        "bucketOptions": {"exponentialBuckets": {"numFiniteBuckets": 3, "growthFactor": 10,
                                                 "scale": 1}},
        "bucketCounts": ["0", "2", "3", "0", "1"],
    }
    samples = read_samples(write(tmp_path, "d.json", json.dumps(dist)))
    assert samples.count == 6
    # The overflow bucket has no upper bound: its draws sit on its lower bound.
    assert samples.buckets == (Bucket(1, 10, 2, True), Bucket(10, 100, 3, True),
                               Bucket(1000, 1000, 1, True))
    draw = samples.sampler(random.Random(1))
    drawn = [draw() for _ in range(3000)]
    assert all(1 <= d <= 100 or d == 1000 for d in drawn)
    assert sum(d == 1000 for d in drawn) == pytest.approx(500, rel=0.15)


def test_a_distribution_from_buckets_feeds_the_advisor_directly() -> None:
    """What a metrics reader hands over: bucket bounds (ms) and counts, and the batch
    rate it saw."""
    dist = LatencyDistribution.from_buckets([4, 8, 1000, 3000], [0, 980, 0, 20, 0])
    advice = advise(dist, rate=200.0, batches=5_000)
    assert advice.samples == 1000 and advice.rate == 200.0
    assert advice.recommended.p99_ms < 200 < 1000 < advice.baseline.p99_ms


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.txt", "5\n6\nslow\n", "bad.txt:3: 'slow' is not a latency in milliseconds"),
        ("neg.txt", "5\n-1\n", "neg.txt:2: latency -1 must be 0 or more"),
        ("empty.txt", "# nothing\n", "empty.txt: no latency samples found"),
        ("broken.json", '{"timeSeries": [\n', "broken.json:2: not valid JSON"),
        ("other.json", '{"rows": []}', "other.json: no Cloud Monitoring distribution found"),
    ],
)
def test_bad_input_names_file_and_line(
    run_cli: Callable[..., Any], tmp_path: Path, name: str, text: str, message: str
) -> None:
    result = run_cli("hedging", "advise", str(write(tmp_path, name, text)))
    assert result.exit_code == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


PROFILES = """\
apiVersion: reconcile.pubsub/v1
kind: HedgingProfile
metadata:
  name: low-latency
spec: {hedgeDelay: 500ms, maxTokens: 100, refillRatio: 0.05}
---
apiVersion: reconcile.pubsub/v1
kind: HedgingProfile
metadata:
  name: stingy
spec: {hedgeDelay: 200ms, maxTokens: 1}
"""


def test_profile_from_the_specs(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    path = write(tmp_path, "lat.txt", "\n".join(map(str, TAIL)))
    specs = tmp_path / "specs"
    specs.mkdir()
    write(specs, "profiles.yaml", PROFILES)
    result = run_cli("hedging", "advise", str(path), "--profile", "low-latency",
                     "--specs", str(specs))
    assert result.exit_code == 0, result.stderr
    assert "profile low-latency: maxTokens 100, refillRatio 0.05" in result.stdout
    assert "(profile)" in next(x for x in result.stdout.splitlines() if x.startswith("500ms"))
    stingy = run_cli("hedging", "advise", str(path), "--profile", "stingy", "--specs", str(specs))
    assert "profile stingy: maxTokens 1, refillRatio 0.1" in stingy.stdout  # default refill
    missing = run_cli("hedging", "advise", str(path), "--profile", "nope", "--specs", str(specs))
    assert missing.exit_code == 1
    assert f"no HedgingProfile named 'nope' under {specs}" in missing.stderr
    assert "known profiles: low-latency, stingy" in missing.stderr


def test_plot(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """With matplotlib: a PNG. Without it: a clear error naming the extra."""
    path = write(tmp_path, "lat.txt", "\n".join(map(str, TAIL)))
    out = tmp_path / "cdf.png"
    result = run_cli("hedging", "advise", str(path), "--plot", str(out))
    if importlib.util.find_spec("matplotlib") is None:
        assert result.exit_code == 1
        assert "--plot needs matplotlib, which is not installed" in result.stderr
        assert "pip install 'pubsub-reconcile[plot]'" in result.stderr
        assert not out.exists()
    else:
        assert result.exit_code == 0, result.stderr
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_advise_imports_no_google_or_grpc(tmp_path: Path) -> None:
    path = write(tmp_path, "lat.txt", "\n".join(map(str, TAIL)))
    probe = (
        "import sys\n"
        "from reconciler.cli import main\n"
        "try:\n"
        "    main(['hedging', 'advise', sys.argv[1], '--batches', '1000'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('google', 'grpc'))\n"
        "print('HEAVY', heavy, 'EXIT', code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert "HEAVY [] EXIT 0" in result.stdout, result.stdout + result.stderr
