"""Residency's cost: a plan of 10,000 topics in 10 projects with
20,000 subscriptions against the local server, with this tree's code and without the
subscription and gauge reads (the same code, copied, with the backend's ListSubscriptions and
by-region gauge reads answering "none" at once: the plan without them; or `--before
REV`: `git archive REV`, for a historical baseline), side by side in one run
(A B, then B A, ...), medians and ratios, in two scenarios: no change removes a
region (a label change on 1 topic in 100), and 1 topic in 100 of every project is
narrowed to one region (every project then reads the left-behind gauges), first with
nothing stored, then with one message left in the removed region of each narrowed
topic; the RPCs each plan made, per project; and `reconcile residency` beside
`reconcile validate` of the same tree (the same --org-policy).

    python benchmarks/residency.py [--projects 10] [--topics 10000] [--subs-per-topic 2]
        [--runs 3] [--before REV]
    python benchmarks/residency.py --smoke   # 2 projects, 20 topics, one run: that it runs
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REGIONS = ["us-central1", "us-east1"]
PER_FILE = 100


def project(p: int) -> str:
    return f"bench-{p:02d}"


def write_tree(root: Path, projects: int, topics: int, narrow: bool) -> Path:
    """Specs: every topic explicit in two regions, 1 in 100 narrowed to one (`narrow`:
    a change that removes a region) or relabelled (a change that removes none)."""
    specs = root / ("specs-narrow" if narrow else "specs-same")
    specs.mkdir()
    per = topics // projects
    docs: list[str] = []
    n = 0
    for p in range(projects):
        for t in range(per):
            changed = t % 100 == 7
            regions = REGIONS[:1] if changed and narrow else REGIONS
            team = "t2" if changed and not narrow else "t1"
            docs.append(
                "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
                f"metadata: {{project: {project(p)}, name: topic-{t:05d}}}\n"
                f"spec:\n  labels: {{team: {team}}}\n  messageStoragePolicy:\n"
                f"    allowedPersistenceRegions: [{', '.join(regions)}]\n"
                "    enforceInTransit: false\n"
            )
            if len(docs) == PER_FILE:
                (specs / f"topics-{n:04d}.yaml").write_text("---\n".join(docs))
                docs, n = [], n + 1
    if docs:
        (specs / f"topics-{n:04d}.yaml").write_text("---\n".join(docs))
    return specs


def seed(server: Any, projects: int, topics: int, subs_per_topic: int) -> int:
    """Every declared topic live (managed by this tree, both regions) with its
    subscriptions."""
    from reconciler.backends.clients import subscriber_client
    from reconciler.localserver.api import protos

    per = topics // projects
    live = []
    for p in range(projects):
        for t in range(per):
            pb = protos.Topic(
                name=f"projects/{project(p)}/topics/topic-{t:05d}",
                labels={"team": "t1", "reconcile-managed": "true", "reconcile-owner": "default"},
            )
            pb.message_storage_policy.allowed_persistence_regions.extend(REGIONS)
            pb.message_storage_policy.enforce_in_transit = False
            live.append(pb)
    server.state.create_topics(live)
    client = subscriber_client(server.address)

    def create(index: int) -> None:
        topic = live[index // subs_per_topic].name
        name = topic.replace("/topics/", "/subscriptions/") + f"-s{index % subs_per_topic}"
        client.create_subscription(request={"name": name, "topic": topic}, retry=None)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, range(len(live) * subs_per_topic)))
    client.transport.close()
    return len(live) * subs_per_topic


# The baseline: the backend's two new reads answer "nothing" without a call.
NO_READS = {
    "    def list_subscriptions(self, project: str) -> SubscriptionListing:\n":
        "        return SubscriptionListing()\n",
    "    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:\n":
        "        return [StoredMessages({}, {}) for _ in queries]\n",
}


def without_reads(into: Path) -> None:
    """This tree's `reconciler` under `into`, its client backend's list_subscriptions
    and stored answering "none" at once (the plan then reads and shows no consumer)."""
    shutil.copytree(ROOT / "reconciler", into / "reconciler",
                    ignore=shutil.ignore_patterns("__pycache__"))
    module = into / "reconciler" / "backends" / "client_backend.py"
    text = module.read_text()
    for anchor, body in NO_READS.items():
        end = text.index(anchor) + len(anchor)
        text = text[:end] + body + text[end:]
    module.write_text(text)


def timed(command: list[str], pythonpath: Path, cwd: Path) -> tuple[float, int]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pythonpath), "HOME": str(cwd)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, done.returncode


def run_rounds(
    commands: dict[str, tuple[list[str], Path]], runs: int, server: Any, work: Path,
    walls: dict[str, list[float]], rpcs: dict[str, Counter[str]],
    by_project: dict[str, dict[str, Counter[str]]],
) -> None:
    """Each command once a round, its wall time and the RPCs it made (in all, and per
    project: the server counts each method per project, the PromQL queries of its REST
    face as `PromQLQuery`). Every other round runs them in the reverse order (A B, B A,
    ...): a pair's two plans stay side by side, and neither is always the first."""
    for round_no in range(runs):
        order = list(commands.items())
        for name, (command, path) in order if round_no % 2 == 0 else reversed(order):
            server.counters.reset()
            wall, _code = timed(command, path, work)
            walls[name].append(wall)
            rpcs[name] = Counter(server.counters.snapshot())
            by_project[name] = {
                p: Counter({m: server.counters.for_project(m, p) for m in rpcs[name]})
                for m in rpcs[name] for p in server.counters.projects(m)
            }


def leave_messages(server: Any, projects: int, topics: int) -> int:
    """One message published from us-east1 on each topic the narrowed tree narrows."""
    from reconciler.backends.clients import close_client, publisher_client
    from reconciler.localserver import CLIENT_REGION_KEY

    client = publisher_client(server.address)
    n = 0
    for p in range(projects):
        for t in range(topics // projects):
            if t % 100 == 7:
                client.publish(
                    topic=f"projects/{project(p)}/topics/topic-{t:05d}",
                    messages=[{"data": b"x" * 10}],
                    metadata=[(CLIENT_REGION_KEY, "us-east1")], retry=None,
                )
                n += 1
    close_client(client)
    return n


def per_project(counts: dict[str, int], projects: int) -> str:
    return ", ".join(f"{m} {c / projects:g}" for m, c in sorted(counts.items()))


def most_extra(ours: dict[str, Counter[str]], theirs: dict[str, Counter[str]]) -> str:
    """The largest number of extra calls any one project cost, and what they were."""
    worst: tuple[int, str, Counter[str]] = (0, "-", Counter())
    for p, counts in ours.items():
        extra = counts - theirs.get(p, Counter())
        worst = max(worst, (sum(extra.values()), p, extra), key=lambda w: w[0])
    total, p, extra = worst
    return f"{total} ({p}: {', '.join(f'{m} {n}' for m, n in sorted(extra.items())) or '-'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--subs-per-topic", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default=None,
                        help="a commit as the baseline (default: this tree without the reads)")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.projects, args.topics, args.runs = 2, 20, 1

    from reconciler.localserver import LocalServer

    with tempfile.TemporaryDirectory() as tmp, LocalServer(state_dir=None, fsync=False) as server:
        work = Path(tmp)
        before = work / "before"
        before.mkdir()
        if args.before:
            archive = subprocess.run(["git", "archive", args.before, "reconciler"], cwd=ROOT,
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        else:
            without_reads(before)
        trees = {narrow: write_tree(work, args.projects, args.topics, narrow)
                 for narrow in (False, True)}
        policy = work / "org-policy.yaml"  # restricts nothing
        policy.write_text("[]\n")
        started = time.perf_counter()
        subs = seed(server, args.projects, args.topics, args.subs_per_topic)
        print(f"{args.topics} topics in {args.projects} projects, {subs} subscriptions "
              f"(seeded in {time.perf_counter() - started:.0f} s); runs: {args.runs} each, "
              "alternating", flush=True)
        target = ["--emulator", server.address, "--org-policy", str(policy)]
        py = sys.executable
        commands: dict[str, tuple[list[str], Path]] = {}
        for narrow, specs in trees.items():
            case = "narrowed" if narrow else "no region removed"
            plan = [py, "-m", "reconciler", "plan", str(specs), *target]
            commands[f"plan, {case} (this tree)"] = (plan, ROOT)
            commands[f"plan, {case} (without)"] = (plan, before)
        specs = trees[True]
        commands["residency"] = ([py, "-m", "reconciler", "residency", str(specs), *target], ROOT)
        commands["validate"] = (
            [py, "-m", "reconciler", "validate", str(specs), "--org-policy", str(policy)], ROOT
        )
        walls: dict[str, list[float]] = {k: [] for k in commands}
        rpcs: dict[str, Counter[str]] = {}
        by_project: dict[str, dict[str, Counter[str]]] = {}
        run_rounds(commands, args.runs, server, work, walls, rpcs, by_project)
        # Then something to leave behind: one message in us-east1 on each narrowed topic.
        left = leave_messages(server, args.projects, args.topics)
        stored = "narrowed, messages left"
        later = {f"plan, {stored} ({who})": commands[f"plan, narrowed ({who})"]
                 for who in ("this tree", "without")}
        walls.update({k: [] for k in later})
        run_rounds(later, args.runs, server, work, walls, rpcs, by_project)
        commands.update(later)
        print(f"(then {left} messages left in us-east1, one per narrowed topic)")
        med = {k: statistics.median(v) for k, v in walls.items()}
        for name in commands:
            print(f"{name:36} median {med[name]:.2f} s (min {min(walls[name]):.2f}, max "
                  f"{max(walls[name]):.2f}); RPCs per project: "
                  f"{per_project(rpcs[name], args.projects)}")
        for case in ("no region removed", "narrowed", stored):
            ours, theirs = f"plan, {case} (this tree)", f"plan, {case} (without)"
            extra = rpcs[ours] - rpcs[theirs]
            pairs = [a / b for a, b in zip(walls[ours], walls[theirs], strict=True)]
            print(f"\n{case}: extra plan RPCs per project: "
                  f"{per_project(dict(extra), args.projects)} "
                  f"(total {sum(extra.values()) / args.projects:g}; target <= 3); most in one "
                  f"project: {most_extra(by_project[ours], by_project[theirs])}")
            print(f"{case}: plan wall ratio this tree / without: median "
                  f"{statistics.median(pairs):.2f} (pairs {', '.join(f'{x:.2f}' for x in pairs)}"
                  "; target <= 1.15)")
        rv = [a / b for a, b in zip(walls["residency"], walls["validate"], strict=True)]
        print(f"\nresidency / validate: median {statistics.median(rv):.2f} "
              f"(pairs {', '.join(f'{x:.2f}' for x in rv)}; target <= 1.5)")

if __name__ == "__main__":
    main()
