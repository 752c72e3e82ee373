"""Plan at scale: 10,000 topics across 10 projects, 20 ms per RPC.

Compares `make_plan` as reconcile does it (one ListTopics pager per project, projects in
parallel) with the way Terraform's refresh does it (one GetTopic per declared topic, 10
at a time), in the same run, against the same local server. Each mode runs in its own
child process so that its wall time and peak memory (ru_maxrss) are its own; the server
(in this process) counts the RPCs by method.

    python benchmarks/plan_scale.py [--projects 10] [--topics 10000] [--latency 0.02]
    python benchmarks/plan_scale.py --smoke   # 2 projects, 20 topics: that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reconciler.spec.desired import DesiredState, DesiredTopic, StorageIntent  # noqa: E402

BASELINE_CONCURRENCY = 10
REGIONS = ("us-central1", "us-east1")


def desired_state(projects: int, topics: int) -> DesiredState:
    """Deterministic specs: 1% label updates, 1% region updates, 0.5% creates, the rest
    unchanged (what a steady-state GitOps repository looks like)."""
    state = DesiredState()
    per = topics // projects
    for p in range(projects):
        for t in range(per):
            i = p * per + t
            labels = {"team": "t2" if i % 100 == 1 else "t1"}
            regions = ("us-central1",) if i % 100 == 2 else REGIONS
            state.topics.append(
                DesiredTopic(
                    f"bench-{p:02d}", f"topic-{t:05d}", labels,
                    StorageIntent("explicit", regions, None),
                )
            )
    return state


def seed(server: Any, projects: int, topics: int) -> int:
    """Live topics: every declared topic but one in 200 (those are creates)."""
    from reconciler.localserver.api import protos

    live = []
    for topic in desired_state(projects, topics).topics:
        index = int(topic.topic.rsplit("-", 1)[1]) + topics  # any stable number
        if index % 200 == 3:
            continue
        pb = protos.Topic(
            name=topic.address,
            labels={"team": "t1", "reconcile-managed": "true", "reconcile-owner": "default",
                    "owner": "someone"},
        )
        pb.message_storage_policy.allowed_persistence_regions.extend(REGIONS)
        live.append(pb)
    return int(server.state.create_topics(live))


class TerraformStyle:
    """The baseline backend: a refresh reads every declared topic with GetTopic, 10 at
    a time (one shared pool across projects)."""

    def __init__(self, inner: Any, desired: DesiredState) -> None:
        self.inner = inner
        self.info = inner.info
        self.by_project: dict[str, list[str]] = {}
        for t in desired.topics:
            self.by_project.setdefault(t.project, []).append(t.address)
        self.pool = ThreadPoolExecutor(max_workers=BASELINE_CONCURRENCY)

    def list_topics(self, project: str) -> list[Any]:
        found = self.pool.map(self.inner.get_topic, self.by_project.get(project, []))
        return [t for t in found if t is not None]

    def effective_policy(self, project: str) -> Any:
        return self.inner.effective_policy(project)

    # Every other read (ancestry, custom constraints, subscriptions, gauges) as
    # reconcile makes it: only the topic reads differ between the two modes.
    def ancestry(self, project: str) -> Any:
        return self.inner.ancestry(project)

    def custom_constraints(self, project: str, organization: str | None) -> Any:
        return self.inner.custom_constraints(project, organization)

    def list_subscriptions(self, project: str) -> Any:
        return self.inner.list_subscriptions(project)

    def stored(self, queries: Any) -> list[Any]:
        return self.inner.stored(queries)

    def close(self) -> None:
        self.pool.shutdown()
        self.inner.close()


def child(mode: str, address: str, projects: int, topics: int) -> None:
    """One plan, measured; prints a JSON line."""
    from reconciler.backends.base import BackendInfo
    from reconciler.backends.client_backend import ClientBackend
    from reconciler.backends.clients import orgpolicy_client, publisher_client
    from reconciler.plan.make import make_plan
    from reconciler.plan.observe import observe

    desired = desired_state(projects, topics)
    info = BackendInfo("emulator", address)
    backend: Any = ClientBackend(publisher_client(address), orgpolicy_client(address), info)
    if mode == "baseline":
        backend = TerraformStyle(backend, desired)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    plan = make_plan(desired, observe(backend, desired))
    wall = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    backend.close()
    print(
        json.dumps(
            {
                "mode": mode,
                "wall_s": round(wall, 3),
                "peak_rss_mb": round(rss_after / 1024, 1),
                "rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
                "counts": plan.counts(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--child", choices=["list", "baseline"])
    parser.add_argument("--address")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.projects, args.topics, args.latency = 2, 20, 0.0
    if args.child:
        child(args.child, args.address, args.projects, args.topics)
        return

    from reconciler.localserver import LocalServer

    with LocalServer(state_dir=None, fsync=False) as server:
        seeded = seed(server, args.projects, args.topics)
        server.faults.add(method="*", delay=args.latency)
        print(
            f"{args.topics} declared topics in {args.projects} projects, {seeded} live; "
            f"{args.latency * 1000:.0f} ms injected per RPC",
            flush=True,
        )
        results = {}
        for mode in ("list", "baseline"):
            server.counters.reset()
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--address", server.address,
                 "--projects", str(args.projects), "--topics", str(args.topics)],
                check=True, capture_output=True, text=True, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["rpcs"] = dict(sorted(server.counters.snapshot().items()))
            result["rpc_total"] = sum(result["rpcs"].values())
            results[mode] = result
            print(json.dumps(result), flush=True)
    ours, base = results["list"], results["baseline"]
    assert ours["counts"] == base["counts"], "both ways must make the same plan"
    rpc_ratio = base["rpc_total"] / ours["rpc_total"]
    wall_ratio = base["wall_s"] / ours["wall_s"]
    if args.smoke:
        print("smoke run: both ways made the same plan; no figures at this size")
        return
    print(
        f"\nRPCs: {ours['rpc_total']} vs {base['rpc_total']} ({rpc_ratio:.0f}x fewer; "
        f"target >= 10x: {'met' if rpc_ratio >= 10 else 'NOT met'})\n"
        f"Wall: {ours['wall_s']:.2f} s vs {base['wall_s']:.2f} s ({wall_ratio:.1f}x less; "
        f"target >= 5x: {'met' if wall_ratio >= 5 else 'NOT met'})\n"
        f"Peak RSS: {ours['peak_rss_mb']} MB vs {base['peak_rss_mb']} MB"
    )


if __name__ == "__main__":
    main()
