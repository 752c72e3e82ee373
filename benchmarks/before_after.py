"""Before and after, side by side: the same commands run with this checkout and with an
older one (`--before DIR`, e.g. `git archive main | tar -x -C DIR`), in alternating
pairs (A B, then B A, ...), each command its own process. The figure is the CPU time of
the command's process tree (user + system of the process and of the children it waited
for, from `wait4`: a plan's read-ahead process included), steadier than wall time on a
shared machine; medians, and the median of the per-pair ratios (after / before).

Scenarios (`--only` picks some):
  plan-50k             `plan` of 50,000 topics against the local server (scale.py's
                       tree and seeding: 1 topic in 200 missing, 1 in 100 drifted)
  plan-out-50k         the same with `--out FILE`
  show-50k             `show` of a 50,000-topic plan file (made once, by the older
                       checkout: both read the same file)
  residency-plan-10k   `plan` of 10,000 topics with 20,000 subscriptions, 1 topic in 100
                       narrowed to one region (residency.py's tree and seeding)
  validate-cold        `validate` of 10 single-document files
  validate-100k        `validate` of 100,000 topics
  plan-local-specs     `plan specs/ --local` of the repository's reference specs (3
                       projects), a command's whole cost at the size most runs have:
                       imports, the embedded server, every read (each side its own
                       state, seeded by a first run not counted)

    python benchmarks/before_after.py --before DIR [--pairs 7] [--only SCENARIO ...]
    python benchmarks/before_after.py --smoke   # this checkout against itself, 1/1000 of
                                                # the sizes, one pair: that it runs

The local servers run in this process (their CPU is not counted: the same for both).
Both checkouts' bytecode is compiled first, as an install does. The last line printed
is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import residency  # noqa: E402  (benchmarks/residency.py: its tree and seeding)
import scale  # noqa: E402  (benchmarks/scale.py: its trees and seeding)

SCENARIOS = ("plan-50k", "plan-out-50k", "show-50k", "residency-plan-10k", "validate-cold",
             "validate-100k", "plan-local-specs")


def run(command: list[str], checkout: Path, cwd: Path) -> tuple[float, float]:
    """CPU seconds of the command's process tree and its wall seconds."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}: {err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def reconcile(*args: str) -> list[str]:
    return [sys.executable, "-m", "reconciler", *args]


@contextmanager
def plan_50k(work: Path, stack: ExitStack, topics: int) -> Iterator[list[str]]:
    from reconciler.localserver import LocalServer

    tree = scale.make_tree(work / "t50k", topics)
    server = stack.enter_context(LocalServer(state_dir=None, fsync=False))
    scale.seed_live(server, tree)
    yield [str(tree), "--emulator", server.address]


@contextmanager
def residency_10k(work: Path, stack: ExitStack, topics: int) -> Iterator[list[str]]:
    from reconciler.localserver import LocalServer

    specs = residency.write_tree(work, 10, topics, narrow=True)
    policy = work / "org-policy.yaml"  # restricts nothing
    policy.write_text("[]\n")
    server = stack.enter_context(LocalServer(state_dir=None, fsync=False))
    residency.seed(server, 10, topics, 2)
    yield [str(specs), "--emulator", server.address, "--org-policy", str(policy)]


def commands(only: list[str], work: Path, before: Path, stack: ExitStack,
             divisor: int = 1) -> dict[str, Callable[[str], list[str]]]:
    """Each scenario's command for a side ("before" or "after"); `divisor` shrinks
    every tree (the smoke run's 1/1000)."""
    out: dict[str, Callable[[str], list[str]]] = {}
    if {"plan-50k", "plan-out-50k", "show-50k"} & set(only):
        target = stack.enter_context(plan_50k(work, stack, 50_000 // divisor))
        out["plan-50k"] = lambda side: reconcile("plan", *target)
        out["plan-out-50k"] = lambda side: reconcile(
            "plan", *target, "--out", str(work / f"plan-{side}.json"))
        shown = work / "plan-shown.json"
        run(reconcile("plan", *target, "--out", str(shown)), before, work)
        out["show-50k"] = lambda side: reconcile("show", str(shown))
    if "residency-plan-10k" in only:
        args = stack.enter_context(residency_10k(work, stack, 10_000 // divisor))
        out["residency-plan-10k"] = lambda side: reconcile("plan", *args)
    if "validate-cold" in only:
        small = work / "small"
        scale.small_tree(small)
        out["validate-cold"] = lambda side: reconcile("validate", str(small))
    if "validate-100k" in only:
        big = scale.make_tree(work / "t100k", 100_000 // divisor)
        out["validate-100k"] = lambda side: reconcile("validate", str(big))
    if "plan-local-specs" in only:
        sides = {"after": ROOT} if before == ROOT else {"before": before, "after": ROOT}
        for side, checkout in sides.items():
            repo = work / f"local-{side}"
            (repo / ".git").mkdir(parents=True)
            shutil.copytree(ROOT / "specs", repo / "specs")
            run(reconcile("plan", str(repo / "specs"), "--local"), checkout, work)  # seeds
        out["plan-local-specs"] = lambda side: reconcile(
            "plan", str(work / f"local-{side}" / "specs"), "--local")
    return {name: out[name] for name in SCENARIOS if name in only}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="the older checkout (required)")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds: this checkout against itself at tiny sizes (no figures)")
    args = parser.parse_args()
    divisor = 1
    if args.smoke:
        args.before, args.pairs, divisor = args.before or ROOT, 1, 1000
        if args.only == list(SCENARIOS):  # plan-out and validate-100k: the same code again
            args.only = [n for n in SCENARIOS if n not in ("plan-out-50k", "validate-100k")]
    if args.before is None:
        parser.error("--before DIR is required (an older checkout)")
    before = args.before.resolve()
    sides = {"before": before, "after": ROOT}
    for checkout in sides.values():
        compileall.compile_dir(checkout / "reconciler", quiet=1)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        started = time.perf_counter()
        scenarios = commands(args.only, work, before, stack, divisor)
        print(f"set up in {time.perf_counter() - started:.0f} s; {args.pairs} pairs each, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for name, command in scenarios.items():
            if args.smoke:  # each command once: that it runs
                cpu_s, _ = run(command("after"), ROOT, work)
                print(f"{name:20} ran ({cpu_s:.2f} s CPU)")
                continue
            cpu: dict[str, list[float]] = {"before": [], "after": []}
            wall: dict[str, list[float]] = {"before": [], "after": []}
            for pair in range(args.pairs):
                order = ("before", "after") if pair % 2 == 0 else ("after", "before")
                for side in order:
                    c, w = run(command(side), sides[side], work)
                    cpu[side].append(c)
                    wall[side].append(w)
            ratios = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
            figures[name] = {
                "cpu_before_s": round(statistics.median(cpu["before"]), 3),
                "cpu_after_s": round(statistics.median(cpu["after"]), 3),
                "ratio": round(statistics.median(ratios), 3),
                "pairs": [round(r, 3) for r in ratios],
                "wall_before_s": round(statistics.median(wall["before"]), 3),
                "wall_after_s": round(statistics.median(wall["after"]), 3),
            }
            f = figures[name]
            print(f"{name:20} CPU before {f['cpu_before_s']:.3f} s, after {f['cpu_after_s']:.3f} s"
                  f", after/before {f['ratio']:.3f} (pairs {', '.join(map(str, f['pairs']))})"
                  f"; wall {f['wall_before_s']:.2f} s / {f['wall_after_s']:.2f} s", flush=True)
    figures["load_average_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
