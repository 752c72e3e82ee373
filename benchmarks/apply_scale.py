"""Apply at scale: 1,000 UpdateTopic calls with 20 ms injected latency.

Creates N topics on the local server (no latency), then, for each concurrency in
1, 8, 32, applies one label update to every topic with the apply executor over the
real client library (ClientBackend, client retry off, exactly as `reconcile apply` runs
it) while the server delays every RPC by 20 ms. Records wall time beside the ideal
(updates x latency / concurrency) and checks the server saw exactly N UpdateTopic
calls per run.

The client-side rate limiter is disabled here: at its default (80 admin ops/s per
project, sized for Pub/Sub's administrator-operation quota) 1,000 updates take at
least 12.5 s whatever the concurrency; this benchmark measures the executor.

    python benchmarks/apply_scale.py                 # 1,000 updates, concurrency 1, 8, 32
    python benchmarks/apply_scale.py --updates 200   # quicker
    python benchmarks/apply_scale.py --creates 5000  # creates: RPCs by method
    python benchmarks/apply_scale.py --smoke         # 10 updates, 10 creates: that it runs

`--creates N` plans N absent topics with `make_plan` and applies the plan with the
executor (in-process server, so its RPC counters are read directly), 20 ms per RPC,
concurrency 8: what `reconcile apply` costs per created topic, by method.

The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from reconciler.apply.executor import Executor
from reconciler.apply.guard import Guard, GuardedBackend
from reconciler.apply.ratelimit import ProjectRateLimiter
from reconciler.backends.base import BackendInfo
from reconciler.backends.client_backend import ClientBackend
from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer
from reconciler.orgpolicy.store import PolicyStore
from reconciler.plan.model import Action, Change, Plan, ResourceChange

PROJECT = "bench-project"
LATENCY = 0.020
TARGET_RATIO_AT_8 = 1.5
CALLS_PER_UPDATE = 2


def update_changes(
    n: int, value: str, previous: str = "", action: Action = "update"
) -> list[ResourceChange]:
    """Label updates wave: previous -> value (the executor merges them onto a fresh read
    of each topic, so `before` must be what the topic carries); or the creates of the
    topics with `value`. Each request is derived from its change (UpdateTopic of the
    labels, or CreateTopic)."""
    out = []
    for i in range(n):
        name = f"projects/{PROJECT}/topics/t{i:04d}"
        after = {"labels": {"reconcile-managed": "true", "wave": value}}
        before = {"labels": {"reconcile-managed": "true", "wave": previous}}
        out.append(
            ResourceChange(
                address=name,
                project=PROJECT,
                topic=f"t{i:04d}",
                change=Change(
                    actions=[action], before=None if action == "create" else before, after=after
                ),
                update_mask=["labels"] if action == "update" else [],
            )
        )
    return out


class ServerProcess:
    """`reconcile local-server` in its own process (own GIL, as `--emulator` users run
    it), with every RPC delayed by `latency`. Counters live in that process, so the
    calls are counted from the per-topic results instead."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reconciler",
                "local-server",
                "--port",
                "0",
                "--fault",
                f"*:delay={latency * 1000:g}ms",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = re.search(r"on (\S+:\d+)", line)
        if not found:
            self.proc.kill()
            raise RuntimeError(f"local server did not start: {line!r}")
        self.address = found.group(1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@contextlib.contextmanager
def server_at(mode: str, latency: float) -> Iterator[tuple[str, Any]]:
    """(address, in-process server or None)."""
    if mode == "process":
        proc = ServerProcess(latency)
        try:
            yield proc.address, None
        finally:
            proc.stop()
        return
    with LocalServer(state_dir=None, host="127.0.0.1", port=0) as server:
        server.faults.add(method="*", delay=latency)
        yield server.address, server


def run(updates: int, levels: list[int], mode: str) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "updates": updates,
        "latency_ms": LATENCY * 1000,
        "server": mode,
        "runs": [],
    }
    with server_at(mode, LATENCY) as (address, server):
        backend = ClientBackend(
            publisher_client(address), None, BackendInfo("emulator", address), client_retry=False
        )
        guarded = GuardedBackend(backend, Guard(ProjectRateLimiter(None)))
        creates = update_changes(updates, "0", action="create")
        created = Executor(guarded, concurrency=32).run(Plan(resource_changes=creates))
        assert not created.failed, "setup failed"
        for n, level in enumerate(levels, start=1):
            if server is not None:
                server.counters.reset()
            executor = Executor(guarded, concurrency=level)
            changes = update_changes(updates, str(n), str(n - 1))
            start = time.perf_counter()
            result = executor.run(Plan(resource_changes=changes))
            wall = time.perf_counter() - start
            calls = (
                server.counters.get("UpdateTopic")
                if server is not None
                else sum(r.attempts for r in result.results)
            )
            # Each label update is two calls: the fresh GetTopic, then UpdateTopic.
            ideal = updates * CALLS_PER_UPDATE * LATENCY / level
            row = {
                "concurrency": level,
                "wall_s": round(wall, 3),
                "ideal_s": round(ideal, 3),
                "ratio": round(wall / ideal, 3),
                "update_calls": calls,
                "failed": sum(1 for r in result.results if r.status != "applied"),
            }
            figures["runs"].append(row)
            print(
                f"concurrency {level:>3}: {wall:7.2f} s  ideal {ideal:6.2f} s  "
                f"ratio {wall / ideal:5.2f}  UpdateTopic calls {calls}",
                flush=True,
            )
        backend.close()
    at8 = next((r for r in figures["runs"] if r["concurrency"] == 8), None)
    figures["target_at_8"] = TARGET_RATIO_AT_8
    figures["target_met"] = bool(at8 and at8["ratio"] <= TARGET_RATIO_AT_8)
    return figures


def run_creates(n: int, concurrency: int) -> dict[str, Any]:
    """Plan N absent topics, then create them; the server's counters by method for the
    plan and for the apply, and the apply's wall time."""
    from reconciler.plan.make import make_plan
    from reconciler.plan.observe import observe
    from reconciler.spec.desired import DesiredState, DesiredTopic

    desired = DesiredState(
        [DesiredTopic(PROJECT, f"t{i:06d}", labels={"wave": "0"}) for i in range(n)]
    )
    with server_at("inprocess", LATENCY) as (address, server):
        # An empty snapshot stands in for the org policy (no location constraint).
        backend = ClientBackend(
            publisher_client(address),
            None,
            BackendInfo("emulator", address, org_policy="snapshot"),
            policy_store=PolicyStore(),
            client_retry=False,
        )
        guarded = GuardedBackend(backend, Guard(ProjectRateLimiter(None)))
        server.counters.reset()
        plan = make_plan(desired, observe(backend, desired))
        plan_rpcs = server.counters.snapshot()
        assert sum(rc.action == "create" for rc in plan.resource_changes) == n
        server.counters.reset()
        start = time.perf_counter()
        result = Executor(guarded, concurrency=concurrency).run(plan)
        wall = time.perf_counter() - start
        apply_rpcs = server.counters.snapshot()
        backend.close()
    failed = sum(1 for r in result.results if r.status != "applied")
    total = sum(plan_rpcs.values()) + sum(apply_rpcs.values())
    print(
        f"creates {n}: plan RPCs {plan_rpcs}, apply RPCs {apply_rpcs}, "
        f"{total} RPCs in all ({total / n:.3f} per topic), apply {wall:.2f} s, {failed} failed",
        flush=True,
    )
    return {
        "creates": n,
        "concurrency": concurrency,
        "latency_ms": LATENCY * 1000,
        "plan_rpcs": plan_rpcs,
        "apply_rpcs": apply_rpcs,
        "rpcs_total": total,
        "rpcs_per_topic": round(total / n, 4),
        "apply_wall_s": round(wall, 3),
        "failed": failed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--server",
        choices=["process", "inprocess"],
        default="process",
        help="run the local server in its own process (default) or in this one",
    )
    parser.add_argument(
        "--creates", type=int, default=0, help="measure creating N topics instead"
    )
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args(argv)
    if args.smoke:
        print(json.dumps(run(10, [1, 8], args.server)))
        print(json.dumps(run_creates(10, 8)))
        return 0
    if args.creates:
        level = args.concurrency[0] if len(args.concurrency) == 1 else 8
        print(json.dumps(run_creates(args.creates, level)))
        return 0
    figures = run(args.updates, args.concurrency, args.server)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
