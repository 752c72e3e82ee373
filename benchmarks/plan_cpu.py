"""A plan's CPU time beside another checkout's: the CPU seconds of the `reconcile plan`
process tree (the plan and its read-ahead process, which it waits for), this tree and
`--before DIR` (a checkout of an earlier commit, e.g. `git worktree add --detach DIR
REV`) run alternately (A B, then B A, ...) against one local server in this process,
whose own CPU is not counted. CPU time is steadier than wall time on a shared machine.

Two scenarios:
- `50k`: 50,000 topics in 10 projects (scale.py's tree), every one live but 1 in 200,
  1 in 100 with a drifted label;
- `10k-narrow`: 10,000 topics with 20,000 subscriptions, 1 topic in 100 of every project
  narrowed to one region, one message left in the removed region of each
  (residency.py's tree and seeding): the plan reads the left-behind gauges.

    python benchmarks/plan_cpu.py --before DIR [--pairs 7] [--only 50k 10k-narrow]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import residency  # noqa: E402  (its tree and seeding)
import scale  # noqa: E402  (its tree)


def cpu_of(command: list[str], pythonpath: Path, cwd: Path) -> tuple[float, float]:
    """CPU seconds (user + system) of the command and every descendant it waited for,
    and its wall seconds."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pythonpath), "HOME": str(cwd)}
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {err[-2000:]!r}")
    return usage.ru_utime + usage.ru_stime, wall


def seed_from_plan(server: Any, tree: Path, work: Path) -> int:
    """Live topics as an earlier apply left them (the requests of this tree's plan
    against the empty server): all but 1 in 200, 1 in 100 with a drifted label."""
    from reconciler.backends.topicproto import topic_to_proto

    done = subprocess.run(
        [sys.executable, "-m", "reconciler", "plan", str(tree), "--emulator", server.address,
         "--format", "json"],
        cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
    )
    if done.returncode not in (0, 2):
        raise SystemExit(done.stderr[-2000:])
    live = []
    for i, change in enumerate(json.loads(done.stdout)["resource_changes"]):
        if i % 200 == 3 or change.get("request") is None:
            continue
        pb = topic_to_proto(change["request"]["topic"])
        if i % 100 == 1:
            pb.labels["team"] = "drifted"
        live.append(type(pb).pb(pb))
    return int(server.state.create_topics(live))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", required=True, help="the other checkout's root")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=["50k", "10k-narrow"])
    args = parser.parse_args()
    before = Path(args.before).resolve()
    for checkout in (ROOT, before):  # as an install would
        compileall.compile_dir(checkout / "reconciler", quiet=1)

    from reconciler.localserver import LocalServer

    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for scenario in args.only:
            with LocalServer(state_dir=None, fsync=False) as server:
                if scenario == "50k":
                    tree = scale.make_tree(work / "50k", 50_000)
                    extra: list[str] = []
                    seeded = seed_from_plan(server, tree, work)
                    print(f"50k: {seeded} live topics", flush=True)
                else:
                    tree = residency.write_tree(work, 10, 10_000, narrow=True)
                    policy = work / "org-policy.yaml"  # restricts nothing
                    policy.write_text("[]\n")
                    extra = ["--org-policy", str(policy)]
                    subs = residency.seed(server, 10, 10_000, 2)
                    left = residency.leave_messages(server, 10, 10_000)
                    print(f"10k-narrow: {subs} subscriptions, {left} messages left",
                          flush=True)
                command = [sys.executable, "-m", "reconciler", "plan", str(tree),
                           "--emulator", server.address, *extra]
                runs: dict[str, list[tuple[float, float]]] = {"after": [], "before": []}
                order = [("after", ROOT), ("before", before)]
                for n in range(args.pairs):
                    for name, path in order if n % 2 == 0 else reversed(order):
                        runs[name].append(cpu_of(command, path, work))
                    print(f"  pair {n + 1}: after {runs['after'][-1][0]:.2f} s CPU, before "
                          f"{runs['before'][-1][0]:.2f} s CPU", flush=True)
                results[scenario] = runs
    for scenario, runs in results.items():
        cpu = {k: [c for c, _ in v] for k, v in runs.items()}
        wall = {k: [w for _, w in v] for k, v in runs.items()}
        pairs = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
        print(f"\n{scenario}: CPU median after {statistics.median(cpu['after']):.2f} s, before "
              f"{statistics.median(cpu['before']):.2f} s; ratio of medians "
              f"{statistics.median(cpu['after']) / statistics.median(cpu['before']):.3f}, "
              f"median of pair ratios {statistics.median(pairs):.3f} "
              f"(pairs {', '.join(f'{x:.2f}' for x in pairs)}); wall medians "
              f"{statistics.median(wall['after']):.2f} s / "
              f"{statistics.median(wall['before']):.2f} s")


if __name__ == "__main__":
    main()
