"""Local server throughput: RPCs per second for GetTopic and UpdateTopic from 8
concurrent clients against 10,000 topics (issue 3).

The server runs in its own process (as `reconcile local-server` does), seeded with
10,000 topics; the clients are threads in this process, each with its own channel and
real `google.pubsub_v1.PublisherClient`. Each phase runs for a fixed time; figures are
completed RPCs per second and client-side latency percentiles. Runs once in memory and
once with --state (journal + fsync per acknowledged UpdateTopic, shared by concurrent
writers). The last line printed is one JSON object.

    python benchmarks/localserver_rps.py [--seconds 5] [--clients 8] [--topics 10000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import random
import statistics
import tempfile
import threading
import time
from typing import Any

PROJECT = "projects/bench-project"


def _serve(state_dir: str | None, topics: int, conn: Any) -> None:
    from reconciler.localserver import LocalServer

    server = LocalServer(state_dir=state_dir)
    server.seed_topics(f"{PROJECT}/topics/topic-{i:05d}" for i in range(topics))
    server.start()
    conn.send(server.address)
    conn.recv()  # until told to stop
    conn.send(server.counters.snapshot())
    server.stop()


def _phase(address: str, method: str, clients: int, seconds: float, topics: int) -> dict[str, Any]:
    from reconciler.backends.clients import publisher_client

    stubs = [publisher_client(address) for _ in range(clients)]
    for stub in stubs:  # connect and warm up outside the timed window
        stub.get_topic(topic=f"{PROJECT}/topics/topic-00000")
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def run(i: int) -> None:
        rng = random.Random(i)
        client = stubs[i]
        mine = latencies[i]
        n = 0
        start.wait()
        while True:
            t0 = time.perf_counter()
            if t0 >= deadline[0]:
                return
            name = f"{PROJECT}/topics/topic-{rng.randrange(topics):05d}"
            try:
                if method == "GetTopic":
                    client.get_topic(topic=name, retry=None, timeout=30)
                else:
                    n += 1
                    client.update_topic(
                        request={
                            "topic": {"name": name, "labels": {"writer": str(i), "n": str(n)}},
                            "update_mask": {"paths": ["labels"]},
                        },
                        retry=None,
                        timeout=30,
                    )
            except Exception:  # counted, not fatal
                errors[i] += 1
                continue
            mine.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    deadline[0] = time.perf_counter() + seconds
    t_start = time.perf_counter()
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t_start
    for stub in stubs:
        stub.transport.close()
    flat = sorted(x for per in latencies for x in per)
    q = statistics.quantiles(flat, n=100) if len(flat) > 100 else [float("nan")] * 99
    return {
        "method": method,
        "rpcs": len(flat),
        "errors": sum(errors),
        "rps": round(len(flat) / elapsed, 1),
        "p50_ms": round(q[49] * 1000, 2),
        "p99_ms": round(q[98] * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--topics", type=int, default=10_000)
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode, state_dir in (("memory", None), ("state+fsync", tmp)):
            parent, child = mp.Pipe()
            proc = mp.get_context("spawn").Process(
                target=_serve, args=(state_dir, args.topics, child)
            )
            proc.start()
            address = parent.recv()
            for method in ("GetTopic", "UpdateTopic"):
                r = _phase(address, method, args.clients, args.seconds, args.topics)
                r["mode"] = mode
                results.append(r)
                print(
                    f"{mode:12} {method:12} {r['rps']:8.1f} rpc/s  p50 {r['p50_ms']:6.2f} ms  "
                    f"p99 {r['p99_ms']:7.2f} ms  ({r['rpcs']} rpcs, {r['errors']} errors)",
                    flush=True,
                )
            parent.send("stop")
            counters = parent.recv()
            proc.join()
            print(f"{mode:12} server counters: {counters}", flush=True)
    print(
        json.dumps(
            {
                "benchmark": "localserver_rps",
                "clients": args.clients,
                "topics": args.topics,
                "seconds": args.seconds,
                "cpus": mp.cpu_count(),
                "python": platform.python_version(),
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
