"""Benchmark for `reconcile validate`, figures recorded in benchmarks/README.md.

1. Cold start on a small tree, side by side with check-jsonschema using the generated
   schema on the same files (runs interleaved, medians and their ratio).
2. Scale: 10,000 topics in 100 files; wall time and peak RSS of the whole process.

    python benchmarks/validate_bench.py [--runs 15] [--scale-runs 3]
    python benchmarks/validate_bench.py --smoke   # one run each, 2 files of 10: that it runs

Prints a human summary and, on its last line, one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# The same generated specs as the scale benchmark (benchmarks/scale.py).
from scale import PROFILE, TOPIC, small_tree  # noqa: E402  (a script beside it: its folder is on sys.path)


def run(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, os.waitstatus_to_exitcode(status), usage.ru_maxrss


def big_tree(directory: Path, files: int = 100, per_file: int = 100) -> int:
    (directory / "profiles.yaml").write_text(PROFILE)
    for f in range(files):
        docs = [
            TOPIC.format(project=f"acme-project-{f % 10:02d}", name=f"topic-{f:03d}-{t:03d}",
                         team=t % 7)
            for t in range(per_file)
        ]
        (directory / f"topics-{f:03d}.yaml").write_text("---\n".join(docs))
    return files * per_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--scale-runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    big_files, per_file = 100, 100
    if args.smoke:
        args.runs, args.scale_runs, big_files, per_file = 1, 1, 2, 10
    reconcile = str(BIN / "reconcile")
    check_jsonschema = shutil.which("check-jsonschema", path=str(BIN)) or "check-jsonschema"
    schema = str(ROOT / "specs" / "schema.json")
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small"
        files = [str(p) for p in small_tree(small)]
        ours, theirs = [], []
        for _ in range(args.runs):  # interleaved, so both see the same machine noise
            wall, code, _ = run([reconcile, "validate", str(small)])
            assert code == 0, "reconcile validate failed on the small tree"
            ours.append(wall)
            wall, code, _ = run([check_jsonschema, "--schemafile", schema, *files])
            assert code == 0, "check-jsonschema failed on the small tree"
            theirs.append(wall)
        figures["cold_start_reconcile_median_s"] = round(statistics.median(ours), 3)
        figures["cold_start_check_jsonschema_median_s"] = round(statistics.median(theirs), 3)
        figures["cold_start_ratio"] = round(statistics.median(ours) / statistics.median(theirs), 2)

        big = Path(tmp) / "big"
        big.mkdir()
        topics = big_tree(big, big_files, per_file)
        walls, rss = [], []
        for _ in range(args.scale_runs):
            wall, code, maxrss = run([reconcile, "validate", str(big)])
            assert code == 0, "reconcile validate failed on the big tree"
            walls.append(wall)
            rss.append(maxrss)
        figures["scale_topics"] = topics
        figures["scale_files"] = big_files + 1  # and the profiles file
        figures["scale_wall_median_s"] = round(statistics.median(walls), 2)
        figures["scale_peak_rss_mib"] = round(max(rss) / 1024, 1)
    print(
        f"cold start (10 files): reconcile {figures['cold_start_reconcile_median_s']} s, "
        f"check-jsonschema {figures['cold_start_check_jsonschema_median_s']} s "
        f"(ratio {figures['cold_start_ratio']}), medians of {args.runs}"
    )
    print(
        f"scale: {topics} topics in {big_files + 1} files: "
        f"{figures['scale_wall_median_s']} s median of {args.scale_runs}, "
        f"peak RSS {figures['scale_peak_rss_mib']} MiB"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
