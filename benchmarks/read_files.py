"""The per-file reader on validate's hot path: `fileio.read_text` of this
checkout beside an older checkout's, over the same files, rounds interleaved.

    python benchmarks/read_files.py --before /tmp/read-before            # 100,000 files
    python benchmarks/read_files.py --before /tmp/read-before --files 1001 --topics 100
    python benchmarks/read_files.py --smoke   # 50 files, this checkout against itself

The files are spec files as `scale.py` writes them (`--topics` per file). Each round
reads every file once with each reader (alternating which goes first); the figures
are the medians over `--rounds` rounds and the median of the round-by-round ratios.
A bare `open(path, 'rb').read()` of the same files runs beside them as the floor.
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scale import PROFILE, TOPIC  # noqa: E402


def load_fileio(checkout: Path) -> Any:
    """That checkout's reconciler/fileio.py as a module of its own."""
    spec = importlib.util.spec_from_file_location(
        f"fileio_{abs(hash(checkout))}", checkout / "reconciler" / "fileio.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_files(root: Path, files: int, topics: int) -> list[Path]:
    out = []
    for i in range(files):
        body = "---\n".join(
            TOPIC.format(project=f"proj-{i % 10}", name=f"t{i}-{j}", team=j % 7)
            for j in range(topics)
        )
        path = root / f"d{i // 1000}" / f"f{i}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PROFILE if i == 0 else body)
        out.append(path)
    return out


def timed(read: Callable[[Path], object], paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        read(path)
    return time.perf_counter() - start


def bare(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", help="an older checkout (required)")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=1, help="topics per file")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds: this checkout against itself at tiny sizes (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.before, args.files, args.rounds = args.before or str(ROOT), 50, 1
    if args.before is None:
        parser.error("--before DIR is required (an older checkout)")
    after, before = load_fileio(ROOT), load_fileio(Path(args.before).resolve())
    limit = 8 * 1024 * 1024
    readers: dict[str, Callable[[Path], object]] = {
        "after": lambda p: after.read_text(p, limit),
        "before": lambda p: before.read_text(p, limit),
        "bare open().read()": bare,
    }
    times: dict[str, list[float]] = {name: [] for name in readers}
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_files(Path(tmp), args.files, args.topics)
        for name in readers:  # warm the page cache and the code
            timed(readers[name], paths[:1000])
        for round_no in range(args.rounds):
            order = list(readers) if round_no % 2 == 0 else list(reversed(readers))
            for name in order:
                times[name].append(timed(readers[name], paths))
    ratios = [a / b for a, b in zip(times["after"], times["before"], strict=True)]
    out = {
        "files": args.files,
        "topics_per_file": args.topics,
        "rounds": args.rounds,
        **{f"{name} median s": round(statistics.median(t), 4) for name, t in times.items()},
        "per file after us": round(statistics.median(times["after"]) / args.files * 1e6, 2),
        "per file before us": round(statistics.median(times["before"]) / args.files * 1e6, 2),
        "after / before (median of round ratios)": round(statistics.median(ratios), 3),
    }
    for key, value in out.items():
        print(f"{key}: {value}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
