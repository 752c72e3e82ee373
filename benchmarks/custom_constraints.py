"""What custom constraints cost `reconcile validate`, figures recorded in
benchmarks/README.md.

    python benchmarks/custom_constraints.py [--topics 10000] [--pairs 7] [--set mixed]
    python benchmarks/custom_constraints.py --smoke   # 20 topics, one pair, one cold pair
                                                      # against this checkout: that it runs

1. Scale: validate of the same generated tree (benchmarks/scale.py's topics, ten
   projects) with two snapshots: the location and in-transit policies alone, and the
   same plus 20 custom constraints on topics enforced on every project (conditions on
   regions, in-transit, labels and the name, ALLOW and DENY, two of them reading a
   field the specs do not manage). Whole processes in alternating pairs; CPU time
   (user + system, from `wait4`) and wall time of each; the median of the per-pair
   ratios with their range.
   With `--before DIR`, also validate with the custom constraints of this checkout
   against an older one (`PYTHONPATH=DIR`), the same tree and snapshot, alternating.
2. Cold start: validate of the project's `specs/` (no custom constraints) with this
   checkout and, with `--before DIR`, the older one, alternating.
3. `--floor`: the CEL library's own cost, in one process, for the conditions on
   `resource.name` (the ones no two topics share): each alone and the five as one
   list, per call, back to back and with other work between the calls (as when
   validate judged each topic during its walk of the tree).

The last line printed is one JSON object with every figure.
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

ROOT = Path(__file__).resolve().parents[1]

from scale import PROJECTS, make_tree, project_of  # noqa: E402  (a script beside it)

ORG = "organizations/4242"
BASE_POLICIES = """\
name: {org}/policies/gcp.resourceLocations
spec:
  rules:
    - values:
        allowedValues: [us-central1, us-east1, europe-west1]
---
name: {org}/policies/pubsub.enforceInTransitRegions
spec:
  rules:
    - enforce: true
"""
# (condition, action): what organizations write for topics.
CONDITIONS = [
    ("resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r.startsWith('us-') "
     "|| r.startsWith('europe-'))", "ALLOW"),
    ("has(resource.messageStoragePolicy) && "
     "size(resource.messageStoragePolicy.allowedPersistenceRegions) >= 1", "ALLOW"),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, r == 'asia-east1')",
     "DENY"),
    ("has(resource.messageStoragePolicy.enforceInTransit) && "
     "resource.messageStoragePolicy.enforceInTransit", "ALLOW"),
    ("'team' in resource.labels", "ALLOW"),
    ("'tier' in resource.labels && resource.labels['tier'] in ['standard', 'critical']",
     "ALLOW"),
    ("size(resource.labels) <= 20", "ALLOW"),
    ("resource.labels.exists(k, k.startsWith('tmp-'))", "DENY"),
    ("resource.labels.all(k, k.matches('^[a-z][a-z0-9_-]*$'))", "ALLOW"),
    ("'owner' in resource.labels && resource.labels['owner'] == 'nobody'", "DENY"),
    ("resource.name.matches('^projects/[a-z0-9-]+/topics/[a-z0-9-]+$')", "ALLOW"),
    ("resource.name.endsWith('-test')", "DENY"),
    ("resource.name.startsWith('projects/acme-')", "ALLOW"),
    ("resource.name.contains('/topics/tmp')", "DENY"),
    ("size(resource.name) < 255", "ALLOW"),
    ("resource.labels['team'].startsWith('team-')", "ALLOW"),
    ("!resource.messageStoragePolicy.allowedPersistenceRegions.exists(r, "
     "r in ['me-central2', 'africa-south1'])", "ALLOW"),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.size() <= 5", "ALLOW"),
    ("has(resource.kmsKeyName)", "ALLOW"),  # unmanaged: decided at plan time
    ("!has(resource.messageRetentionDuration) || "
     "resource.messageRetentionDuration == '604800s'", "ALLOW"),  # unmanaged too
]


# The same number of constraints, none reading `resource.name` (a value every topic
# has its own of, so no two topics share an evaluation): the name conditions are
# replaced by conditions on labels and regions.
SHARED = [c for c in CONDITIONS if "resource.name" not in c[0]] + [
    ("'tier' in resource.labels", "ALLOW"),
    ("resource.labels.all(k, size(k) <= 63)", "ALLOW"),
    ("!('legacy' in resource.labels)", "ALLOW"),
    ("resource.messageStoragePolicy.allowedPersistenceRegions.all(r, r != 'us-west1')",
     "ALLOW"),
    ("size(resource.messageStoragePolicy.allowedPersistenceRegions) > 0", "ALLOW"),
]
SETS = {"mixed": CONDITIONS, "shared": SHARED}


def snapshot(path: Path, custom: bool, conditions: list[tuple[str, str]] = CONDITIONS) -> Path:
    docs = [BASE_POLICIES.format(org=ORG)]
    if custom:
        for i, (condition, action) in enumerate(conditions):
            docs.append(
                f"name: {ORG}/customConstraints/custom.rule{i}\n"
                "resourceTypes: [pubsub.googleapis.com/Topic]\n"
                "methodTypes: [CREATE, UPDATE]\n"
                f"condition: {json.dumps(condition)}\n"
                f"actionType: {action}\n"
                f"description: Rule {i}.\n"
            )
            docs.append(
                f"name: {ORG}/policies/custom.rule{i}\nspec: {{rules: [{{enforce: true}}]}}\n"
            )
    projects = "".join(f"  projects/{project_of(p)}: {ORG}\n" for p in range(PROJECTS))
    docs.append(f"ancestry:\n{projects}")
    path.write_text("---\n".join(docs))
    return path


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """CPU seconds (user + system), wall seconds, exit code and stdout of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return usage.ru_utime + usage.ru_stime, wall, os.waitstatus_to_exitcode(status), out


def floor(topics: int) -> dict[str, float]:
    """Microseconds per call of the library (best of five rounds over `topics`
    names), for the conditions on the name."""
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"resource": cel.Type.DYN})
    names = [f"projects/{project_of(i % PROJECTS)}/topics/topic-{i:05d}" for i in range(topics)]
    texts = [c for c, _ in CONDITIONS if "resource.name" in c]
    programs = {c: env.compile(c) for c in ["true", *texts]}
    programs["the five as one list"] = env.compile("[" + ", ".join(texts) + "]")
    other = [{"k": str(i), "v": [i]} for i in range(200_000)]  # work between calls

    def best(program: Any, between: bool) -> float:
        """The CPU time inside the calls alone (timed one by one), best round."""
        rounds = []
        for _ in range(5):
            spent = 0.0
            for i, name in enumerate(names):
                if between:
                    sum(len(d["k"]) for d in other[i * 20 % 190_000: i * 20 % 190_000 + 2000])
                start = time.process_time()
                program.eval(data={"resource": {"name": name}}).plain_value()
                spent += time.process_time() - start
            rounds.append(spent)
        return min(rounds) / len(names) * 1e6

    out = {text: round(best(program, False), 1) for text, program in programs.items()}
    out["the five as one list, other work between calls"] = round(
        best(programs["the five as one list"], True), 1
    )
    return out


def _env(checkout: Path) -> dict[str, str]:
    """This interpreter's site-packages with `checkout`'s reconciler first."""
    site = [p for p in sys.path if p.endswith("site-packages")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site])}


def against_before(arguments: list[str], before: Path, pairs: int) -> dict[str, object]:
    """`validate ARGUMENTS` with this checkout and with `before`, alternating pairs:
    CPU medians and the median of the per-pair ratios (here / before)."""
    compileall.compile_dir(before / "reconciler", quiet=1)
    here: list[float] = []
    there: list[float] = []
    for i in range(pairs):
        runs = [(here, ROOT), (there, before)]
        for into, checkout in runs if i % 2 == 0 else reversed(runs):
            c, _, code, out = run(
                [sys.executable, "-S", "-m", "reconciler", "validate", *arguments],
                _env(checkout),
            )
            assert code == 0, f"validate with {checkout} exited {code}: {out[-2000:]}"
            into.append(c)
    ratios = [h / t for h, t in zip(here, there, strict=True)]
    figures: dict[str, object] = {
        "custom_here_cpu_median_s": round(statistics.median(here), 3),
        "custom_before_cpu_median_s": round(statistics.median(there), 3),
        "custom_before_ratio": round(statistics.median(ratios), 3),
        "custom_before_ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
    }
    print(f"validate with the custom constraints, CPU medians of {pairs}: "
          f"{figures['custom_here_cpu_median_s']} s here, "
          f"{figures['custom_before_cpu_median_s']} s before; per-pair ratio "
          f"{figures['custom_before_ratio']}x ({figures['custom_before_ratio_range']})")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--cold-pairs", type=int, default=21)
    parser.add_argument("--before", type=Path, help="an older checkout, for the cold start")
    parser.add_argument(
        "--set", choices=sorted(SETS), default="mixed",
        help="mixed: 5 of the 20 conditions read resource.name; shared: none does",
    )
    parser.add_argument("--no-scale", action="store_true", help="the cold start only")
    parser.add_argument("--floor", action="store_true",
                        help="only the library's cost per call for the conditions on the name")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.topics, args.pairs, args.cold_pairs = 20, 1, 1
        args.before = args.before or ROOT
        for what, micros in floor(args.topics).items():
            print(f"{micros:7.1f} us  {what}")
    if args.floor:
        for what, micros in floor(args.topics).items():
            print(f"{micros:7.1f} us  {what}")
        return
    compileall.compile_dir(ROOT / "reconciler", quiet=1)
    validate = [sys.executable, "-m", "reconciler", "validate"]
    conditions = SETS[args.set]
    figures: dict[str, object] = {
        "topics": args.topics, "custom_constraints": len(conditions), "set": args.set,
    }
    with tempfile.TemporaryDirectory() as tmp:
        if args.no_scale:
            args.pairs = 0
        tree = make_tree(Path(tmp) / "tree", args.topics)
        plain = snapshot(Path(tmp) / "plain.yaml", custom=False)
        custom = snapshot(Path(tmp) / "custom.yaml", custom=True, conditions=conditions)
        cpu: dict[str, list[float]] = {"plain": [], "custom": []}
        wall: dict[str, list[float]] = {"plain": [], "custom": []}
        for i in range(args.pairs):
            order = [("plain", plain), ("custom", custom)]
            for name, snap in order if i % 2 == 0 else reversed(order):
                c, w, code, out = run([*validate, str(tree), "--org-policy", str(snap)])
                assert code == 0, f"validate with the {name} snapshot exited {code}: {out[-2000:]}"
                cpu[name].append(c)
                wall[name].append(w)
        for name in cpu if args.pairs else ():
            figures[f"{name}_cpu_median_s"] = round(statistics.median(cpu[name]), 3)
            figures[f"{name}_wall_median_s"] = round(statistics.median(wall[name]), 3)
        if args.before is not None and args.pairs:
            figures.update(against_before(
                [str(tree), "--org-policy", str(custom)], args.before, args.pairs
            ))
    if args.pairs:
        for what, times in (("cpu", cpu), ("wall", wall)):
            ratios = [c / p for c, p in zip(times["custom"], times["plain"], strict=True)]
            figures[f"{what}_ratio"] = round(statistics.median(ratios), 3)
            figures[f"{what}_ratio_range"] = [round(min(ratios), 3), round(max(ratios), 3)]
        print(f"validate {args.topics} topics, CPU medians of {args.pairs}: "
              f"{figures['plain_cpu_median_s']} s without, {figures['custom_cpu_median_s']} s "
              f"with {len(conditions)} custom constraints; per-pair ratio "
              f"{figures['cpu_ratio']}x ({figures['cpu_ratio_range']}); wall "
              f"{figures['wall_ratio']}x")
    if args.before is not None:
        compileall.compile_dir(args.before / "reconciler", quiet=1)
        ours: list[float] = []
        theirs: list[float] = []
        for i in range(args.cold_pairs):
            runs = [(ours, ROOT), (theirs, args.before)]
            for into, checkout in runs if i % 2 == 0 else reversed(runs):
                c, _, code, _ = run(
                    [sys.executable, "-S", "-m", "reconciler", "validate", str(ROOT / "specs")],
                    _env(checkout),
                )
                assert code == 0
                into.append(c)
        figures["cold_cpu_median_s"] = round(statistics.median(ours), 4)
        figures["cold_cpu_before_median_s"] = round(statistics.median(theirs), 4)
        ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
        figures["cold_ratio"] = round(statistics.median(ratios), 3)
        figures["cold_ratio_range"] = [round(min(ratios), 3), round(max(ratios), 3)]
        print(f"cold start (specs/), CPU medians of {args.cold_pairs}: "
              f"{figures['cold_cpu_median_s']} s here, {figures['cold_cpu_before_median_s']} s "
              f"before ({figures['cold_ratio']}x)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
