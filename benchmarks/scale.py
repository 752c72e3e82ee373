"""Scale benchmark: validate, plan and apply on generated trees, each beside
its baseline in the same run; figures recorded in benchmarks/README.md.

    python benchmarks/scale.py            # the full sizes (several minutes)
    python benchmarks/scale.py --quick    # smaller trees, under a minute
    python benchmarks/scale.py --before /tmp/scale-before   # also an older checkout
    python benchmarks/scale.py --smoke    # tens of topics, one run each: that it runs

Every measurement is a child process (wall time from outside, peak RSS from `wait4`):
- bare read: `yaml.load_all` with `yaml.CSafeLoader` over every file of the tree (the
  floor a validate is compared with);
- validate: `python -m reconciler validate TREE`;
- plan: `python -m reconciler plan TREE --emulator ADDR` against the local server (in
  this process, seeded with the tree's topics: 1% label drift, 0.5% missing);
- apply: `python -m reconciler apply TREE --emulator ADDR --auto-approve` creating every
  topic on an empty server; the server counts RPCs by method;
- cold start: validate of a 10-file tree, interleaved with check-jsonschema on the same
  files (medians).
`--before DIR` runs the same client commands with `PYTHONPATH=DIR` (an older checkout,
e.g. `git worktree add /tmp/scale-before <commit>`) interleaved with this tree's.
Both checkouts' bytecode is compiled first, as `pip install` does for check-jsonschema
and for an installed `reconcile`: with PYTHONDONTWRITEBYTECODE set (as on the shared
VM) a source checkout would otherwise recompile every module in every run (~20 ms of
a cold start).
The last line printed is one JSON object with every figure and ratio.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PER_FILE = 100
PROJECTS = 10

TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata:
  project: {project}
  name: {name}
spec:
  labels:
    team: team-{team}
    tier: standard
  messageStoragePolicy:
    allowedPersistenceRegions: [us-central1, us-east1]
    enforceInTransit: true
  publishers:
    regions: [us-east1]
    retry: {{initialRpcTimeout: 5s, totalTimeout: 60s}}
    hedging: low-latency
"""
PROFILE = """\
apiVersion: reconcile.pubsub/v1
kind: HedgingProfile
metadata: {name: low-latency}
spec: {hedgeDelay: 500ms, maxTokens: 100, refillRatio: 0.05}
"""
POLICY = """\
apiVersion: reconcile.pubsub/v1
kind: OrgPolicySnapshot
"""

BARE_READ = """\
import os, sys, yaml
for base, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        if name.endswith(('.yaml', '.yml')):
            with open(os.path.join(base, name), encoding='utf-8') as fh:
                for _ in yaml.load_all(fh.read(), Loader=yaml.CSafeLoader):
                    pass
"""


def project_of(index: int) -> str:
    return f"acme-project-{index % PROJECTS:02d}"


def make_tree(directory: Path, topics: int, per_file: int = PER_FILE) -> Path:
    """`topics` topics, `per_file` to a file, file f in project f % 10, plus a profile."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "profiles.yaml").write_text(PROFILE)
    for f in range((topics + per_file - 1) // per_file):
        count = min(per_file, topics - f * per_file)
        docs = [
            TOPIC.format(project=project_of(f), name=f"topic-{f:04d}-{t:03d}", team=t % 7)
            for t in range(count)
        ]
        (directory / f"topics-{f:04d}.yaml").write_text("---\n".join(docs))
    return directory


def small_tree(directory: Path) -> list[Path]:
    """Ten single-document files (check-jsonschema reads one instance per file)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = [directory / "profile.yaml"]
    files[0].write_text(PROFILE)
    for i in range(9):
        path = directory / f"topic-{i}.yaml"
        path.write_text(TOPIC.format(project="acme-payments", name=f"orders-{i}", team=i))
        files.append(path)
    return files


# Children are started by this small launcher, not by the benchmark process: on Linux a
# child's peak RSS (ru_maxrss) starts at its parent's peak at fork time, and this
# process grows (it serves and seeds the local server).
LAUNCHER = """
import json, os, sys, threading, time

def tree_rss(pid):
    # Resident KiB of `pid` and every process below it (a plan's read-ahead child).
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, StopIteration, ValueError):
            pass
    return total

def sample(pid, peak, done):
    while not done.is_set():
        peak[0] = max(peak[0], tree_rss(pid))
        done.wait(0.005)

for line in sys.stdin:
    cmd, env = json.loads(line)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir("/")  # `python -m` puts the cwd first on sys.path: never a checkout
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    peak, done = [0], threading.Event()
    sampler = threading.Thread(target=sample, args=(pid, peak, done))
    sampler.start()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    print(json.dumps([wall, os.waitstatus_to_exitcode(status), usage.ru_maxrss, peak[0]]),
          flush=True)
"""


class Launcher:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
        )

    def run(self, cmd: list[str], pythonpath: str | None = None) -> tuple[float, int, float]:
        """Wall seconds, exit code and peak RSS (MiB) of one child process: the larger of
        its own peak (ru_maxrss, exact) and the peak of it and its children together
        (sampled every 5 ms: a plan's read-ahead runs beside it)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = pythonpath or str(ROOT)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([cmd, env]) + "\n")
        self.proc.stdin.flush()
        wall, code, rss_kib, tree_kib = json.loads(self.proc.stdout.readline())
        return wall, code, max(rss_kib, tree_kib) / 1024

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def reconcile(*args: str) -> list[str]:
    return [sys.executable, "-m", "reconciler", *args]


class Figures:
    """Named measurements: medians of wall seconds, max of peak RSS."""

    def __init__(self) -> None:
        self.launcher = Launcher()
        self.walls: dict[str, list[float]] = {}
        self.rss: dict[str, list[float]] = {}
        self.extra: dict[str, Any] = {}

    def measure(self, name: str, cmd: list[str], pythonpath: str | None = None,
                *, quiet: bool = False) -> None:
        wall, code, rss = self.launcher.run(cmd, pythonpath)
        if code != 0:
            raise SystemExit(f"{name}: {' '.join(cmd)} exited {code}")
        self.walls.setdefault(name, []).append(wall)
        self.rss.setdefault(name, []).append(rss)
        if not quiet:
            print(f"  {name}: {wall:.2f} s, {rss:.0f} MiB", flush=True)

    def wall(self, name: str) -> float:
        return statistics.median(self.walls[name])

    def ratio(self, a: str, b: str) -> float:
        """Median of the run-by-run ratios a/b (runs i of both were made moments apart:
        machine-speed drift cancels out)."""
        return round(statistics.median(x / y for x, y in zip(self.walls[a], self.walls[b],
                                                             strict=True)), 2)

    def peak(self, name: str) -> float:
        return max(self.rss[name])


def seed_live(server: Any, tree: Path) -> int:
    """Live topics as an earlier apply left them: every declared topic but one in 200,
    one in 100 with a drifted label."""
    from reconciler.backends.base import OrgInputs
    from reconciler.backends.topicproto import topic_to_proto
    from reconciler.plan.make import make_plan
    from reconciler.plan.observation import Observation
    from reconciler.spec.validate import validate_paths

    result = validate_paths([tree])
    empty = Observation(org={p: OrgInputs(None, None, "seed") for p in result.desired.projects})
    plan = make_plan(result.desired, empty)
    live = []
    for i, change in enumerate(plan.resource_changes):
        if i % 200 == 3 or change.request is None:
            continue
        pb = topic_to_proto(change.request.topic)
        if i % 100 == 1:
            pb.labels["team"] = "drifted"
        live.append(type(pb).pb(pb))
    return int(server.state.create_topics(live))


def cold_start(fig: Figures, runs: int, small: Path, files: list[str],
               before: str | None) -> None:
    """validate on 10 files, interleaved with check-jsonschema (and the older checkout)."""
    check = shutil.which("check-jsonschema", path=str(BIN)) or "check-jsonschema"
    schema = str(ROOT / "specs" / "schema.json")
    for _ in range(runs):
        fig.measure("cold validate", reconcile("validate", str(small)), quiet=True)
        fig.measure("cold check-jsonschema", [check, "--schemafile", schema, *files],
                    quiet=True)
        if before:
            fig.measure("cold validate (before)", reconcile("validate", str(small)), before,
                        quiet=True)


def side_by_side(fig: Figures, runs: int, trees: dict[str, Path], before: str | None) -> None:
    """bare read, validate (and validate before) of each tree, all sizes in each round,
    so that a ratio is taken between runs made moments apart."""
    for _ in range(runs):
        for label, tree in trees.items():
            fig.measure(f"bare read {label}", [sys.executable, "-c", BARE_READ, str(tree)])
            fig.measure(f"validate {label}", reconcile("validate", str(tree)))
            if before:
                fig.measure(f"validate {label} (before)", reconcile("validate", str(tree)),
                            before)


def plan_vs_validate(fig: Figures, runs: int, label: str, tree: Path,
                     before: str | None) -> None:
    from reconciler.localserver import LocalServer

    with LocalServer(state_dir=None, fsync=False) as server:
        seeded = seed_live(server, tree)
        fig.extra[f"plan {label} live topics"] = seeded
        cmd = reconcile("plan", str(tree), "--emulator", server.address)
        for _ in range(runs):
            fig.measure(f"validate {label}", reconcile("validate", str(tree)))
            server.counters.reset()
            fig.measure(f"plan {label}", cmd)
            fig.extra[f"plan {label} rpcs"] = sum(server.counters.snapshot().values())
            if before:
                fig.measure(f"plan {label} (before)", cmd, before)


def apply_creates(fig: Figures, label: str, tree: Path, topics: int,
                  before: str | None) -> None:
    from reconciler.localserver import LocalServer

    for name, path in (("", None), (" (before)", before)):
        if name and not path:
            continue
        with LocalServer(state_dir=None, fsync=False) as server:
            cmd = reconcile("apply", str(tree), "--emulator", server.address, "--auto-approve",
                            "--rate-limit", "0")
            fig.measure(f"apply {label}{name}", cmd, path)
            rpcs = dict(server.counters.snapshot())
            mutating = sum(v for k, v in rpcs.items()
                           if k in ("CreateTopic", "UpdateTopic", "DeleteTopic"))
            fig.extra[f"apply {label}{name} rpcs"] = dict(sorted(rpcs.items()))
            fig.extra[f"apply {label}{name} mutating per topic"] = round(mutating / topics, 3)
            created = server.state.topic_count()
            if created != topics:
                raise SystemExit(f"apply {label}{name}: {created} topics, expected {topics}")


def _label(n: int) -> str:
    """10k for 10,000; a smoke run's sizes as they are."""
    return f"{n // 1000}k" if n >= 1000 else str(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small trees, under a minute")
    parser.add_argument("--before", help="an older checkout to run beside this one")
    parser.add_argument("--runs", type=int, help="runs of each large measurement")
    parser.add_argument("--cold-runs", type=int, help="runs of each cold start")
    parser.add_argument("--only", nargs="*", default=["cold", "validate", "plan", "apply"])
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        small_n, big_n, plan_n, apply_n = 20, 200, 100, 20
        runs, cold_runs = 1, 1
    elif args.quick:
        small_n, big_n, plan_n, apply_n = 2_000, 20_000, 10_000, 2_000
        runs, cold_runs = args.runs or 1, args.cold_runs or 5
    else:
        small_n, big_n, plan_n, apply_n = 10_000, 100_000, 50_000, 10_000
        runs, cold_runs = args.runs or 3, args.cold_runs or 15
    before = str(Path(args.before).resolve()) if args.before else None
    for checkout in (str(ROOT), before):
        if checkout:  # as an install would
            compileall.compile_dir(Path(checkout) / "reconciler", quiet=1)
    fig = Figures()
    out: dict[str, Any] = {"quick": args.quick, "sizes": {
        "validate_small": small_n, "validate_big": big_n, "plan": plan_n, "apply": apply_n}}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if "cold" in args.only:
            print("cold start (10 files)", flush=True)
            files = [str(p) for p in small_tree(base / "small")]
            cold_start(fig, cold_runs, base / "small", files, before)
            ours, theirs = fig.wall("cold validate"), fig.wall("cold check-jsonschema")
            out["cold_validate_s"] = round(ours, 3)
            out["cold_check_jsonschema_s"] = round(theirs, 3)
            out["cold_ratio"] = fig.ratio("cold validate", "cold check-jsonschema")
            if before:
                out["cold_ratio_before"] = fig.ratio("cold validate (before)",
                                                     "cold check-jsonschema")
        if "validate" in args.only:
            s_label, b_label = _label(small_n), _label(big_n)
            print(f"validate {s_label} and {b_label}", flush=True)
            trees = {s_label: make_tree(base / s_label, small_n),
                     b_label: make_tree(base / b_label, big_n)}
            side_by_side(fig, runs, trees, before)
            for suffix in ("", " (before)") if before else ("",):
                tag = "_before" if suffix else ""
                big = f"validate {b_label}{suffix}"
                out[f"validate_big_vs_bare{tag}"] = fig.ratio(big, f"bare read {b_label}")
                out[f"validate_big_vs_small{tag}"] = fig.ratio(big, f"validate {s_label}{suffix}")
                out[f"validate_big_rss_mib{tag}"] = round(fig.peak(big))
                out[f"validate_big_s{tag}"] = round(fig.wall(big), 2)
            out["bare_read_big_s"] = round(fig.wall(f"bare read {b_label}"), 2)
        if "plan" in args.only:
            label = _label(plan_n)
            print(f"plan {label}", flush=True)
            tree = base / label
            if not tree.exists():
                make_tree(tree, plan_n)
            plan_vs_validate(fig, runs, label, tree, before)
            for suffix in ("", " (before)") if before else ("",):
                tag = "_before" if suffix else ""
                out[f"plan_vs_validate{tag}"] = fig.ratio(f"plan {label}{suffix}",
                                                          f"validate {label}")
                out[f"plan_rss_mib{tag}"] = round(fig.peak(f"plan {label}{suffix}"))
                out[f"plan_s{tag}"] = round(fig.wall(f"plan {label}{suffix}"), 2)
        if "apply" in args.only:
            label = _label(apply_n)
            print(f"apply {label} (creates)", flush=True)
            tree = base / label
            if not tree.exists():
                make_tree(tree, apply_n)
            apply_creates(fig, label, tree, apply_n, before)
            for suffix in ("", " (before)") if before else ("",):
                tag = "_before" if suffix else ""
                out[f"apply_mutating_per_topic{tag}"] = fig.extra[
                    f"apply {label}{suffix} mutating per topic"]
                out[f"apply_rss_mib{tag}"] = round(fig.peak(f"apply {label}{suffix}"))
                out[f"apply_s{tag}"] = round(fig.wall(f"apply {label}{suffix}"), 2)
                out[f"apply_rpcs{tag}"] = fig.extra[f"apply {label}{suffix} rpcs"]
    fig.launcher.close()
    print()
    print("| measurement | median wall | peak RSS | runs |")
    print("| --- | --- | --- | --- |")
    for name in fig.walls:
        print(f"| {name} | {fig.wall(name):.3f} s | {fig.peak(name):.0f} MiB | "
              f"{len(fig.walls[name])} |")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
