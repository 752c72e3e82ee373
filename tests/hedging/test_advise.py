"""`reconcile hedging advise`: the simulator's figures, both input formats, the
recommendation, its errors, and that it stays light (no google or gRPC import)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.hedging.advise import advise, read_samples
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
    assert on.throttled_fraction == 0


def test_tokens_limit_hedging_to_the_refill_ratio() -> None:
    slow = [5.0] * 50 + [2000.0] * 50
    on = simulate(slow, HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.1))
    assert on.extra_fraction <= 0.1 + 1 / 20_000
    assert on.throttled_fraction > 0.3


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
    assert "recommended: hedgeDelay 100ms: p99 2000 ms -> 105 ms" in result.stdout


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
    assert len(samples) == 1000
    assert all(4 <= s <= 8 for s in samples[:980]) and all(s >= 1000 for s in samples[980:])
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
    assert len(samples) == 6
    assert all(1 <= s <= 10 for s in samples[:2]) and all(10 <= s <= 100 for s in samples[2:5])
    assert samples[5] == 1000  # overflow: its lower bound


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
        assert "pip install 'reconcile[plot]'" in result.stderr
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
