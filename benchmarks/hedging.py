"""Hedged publishing benchmark (issues 6 and 15): the official client beside ours.

Three cases, side by side in one run, each through the three clients built as a
user would (`PUBSUB_EMULATOR_HOST`): the official `google.cloud.pubsub_v1`
PublisherClient, `reconciler.hedging.PublisherClient` with hedging off, and with
hedging on (hedge delay 100 ms, 50 tokens, 0.1 refill). The local server runs in a
child process, so the client's CPU is its own.

- throughput: closed loop, 1 KiB messages, default batching (100 messages / 10 ms),
  at most 5,000 outstanding: messages/s and client CPU per message.
- saturation: the same, with two application threads in the client process that
  want the CPU all the time (GIL-bound): every response is noticed late, so a
  naive hedge timer fires on the client's own lag. Target: extra requests <= 1%,
  throughput >= the official client's.
- tail: open loop (500 messages/s due at fixed times), batches of one; the server
  waits 5 ms, and 2 s on 2% of calls (seeded). p50/p99/p99.9 from due time to done.
  The advisor's simulator predicts the hedged p99 and extra requests from the
  injected distribution (and, for comparison, from the official client's measured
  latencies); both are compared with the hedged run's measured figures.

    python benchmarks/hedging.py            # 60,000 / 10,000 messages per client
    python benchmarks/hedging.py --quick    # 15,000 / 1,500
    python benchmarks/hedging.py --latencies-out lat.txt   # then: reconcile hedging advise lat.txt

The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

TOPIC = "projects/bench-project/topics/hedging-bench"
FAST_DELAY = 0.005
TAIL_FRACTION = 0.02
TAIL_DELAY = 2.0
HEDGE_DELAY = 0.1
KINDS = ("official", "ours", "ours-hedged")


def serve(conn: Any, seed: int, workers: int) -> None:
    """Child process: the local server, driven by (command, argument) messages."""
    from reconciler.localserver import LocalServer

    srv = LocalServer(host="127.0.0.1", port=0, max_workers=workers, fault_seed=seed)
    srv.start()
    conn.send(srv.address)
    while True:
        command, arg = conn.recv()
        if command == "stop":
            srv.stop()
            conn.send(None)
            return
        if command == "faults":
            srv.faults.clear()
            for kwargs in arg:
                srv.faults.add(**kwargs)
            conn.send(None)
        elif command == "publish_calls":
            conn.send(srv.counters.get("Publish"))
        elif command == "stored":
            conn.send(len(srv.messages(arg)))


class Server:
    def __init__(self, seed: int, workers: int) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=serve, args=(child, seed, workers), daemon=True)
        self._proc.start()
        self.address: str = self._conn.recv()

    def ask(self, command: str, arg: Any = None) -> Any:
        self._conn.send((command, arg))
        return self._conn.recv()

    def stop(self) -> None:
        self.ask("stop")
        self._proc.join(10)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile: the value at or below which p% of samples fall."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def make_client(kind: str, batch: Any) -> Any:
    from google.cloud import pubsub_v1

    from reconciler.hedging import HedgingSettings, PublisherClient

    if kind == "official":
        return pubsub_v1.PublisherClient(batch_settings=batch)
    hedging = HedgingSettings(hedge_delay=HEDGE_DELAY) if kind == "ours-hedged" else None
    return PublisherClient(batch_settings=batch, hedging=hedging)


def burn(stop: threading.Event) -> None:
    """An application thread that wants the CPU (and the GIL) all the time."""
    x = 0
    while not stop.is_set():
        for i in range(2_000):
            x += i * i


def run(
    srv: Server,
    kind: str,
    topic: str,
    messages: int,
    size: int,
    batch: Any,
    rate: float,
    inflight: int,
    burners: int = 0,
) -> dict[str, Any]:
    stop_burning = threading.Event()
    for _ in range(burners):
        threading.Thread(target=burn, args=(stop_burning,), daemon=True).start()
    client = make_client(kind, batch)
    client.create_topic(name=topic)
    calls_before = srv.ask("publish_calls")
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    slots = threading.BoundedSemaphore(inflight)
    data = os.urandom(size)

    def done(start: float, future: Future[str]) -> None:
        elapsed = time.perf_counter() - start
        error = future.exception()
        with lock:
            latencies.append(elapsed)
            if error is not None:
                errors.append(str(error))
        slots.release()

    cpu0 = time.process_time()
    began = time.perf_counter()
    for i in range(messages):
        # Open loop: message i is due at began + i / rate whatever happened before,
        # and latency counts from the due time (no coordinated omission).
        due = began + i / rate if rate else time.perf_counter()
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        slots.acquire()
        future = client.publish(topic, data)
        future.add_done_callback(lambda f, s=due: done(s, f))
    for _ in range(inflight):
        slots.acquire()  # every future done
    wall = time.perf_counter() - began
    cpu = time.process_time() - cpu0
    stop_burning.set()
    counters = client.counters() if kind != "official" else None
    if kind == "official":
        client.stop()
    else:
        client.close()
    client.transport.close()
    calls = srv.ask("publish_calls") - calls_before
    latencies.sort()
    out: dict[str, Any] = {
        "latencies_ms": [x * 1000 for x in latencies],
        "messages": messages,
        "errors": len(errors),
        "wall_s": round(wall, 2),
        "throughput_msg_s": round(messages / wall),
        "client_cpu_us_per_msg": round(cpu / messages * 1e6, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "p999_ms": round(percentile(latencies, 99.9) * 1000, 1),
        "server_publish_calls": calls,
    }
    if counters is not None:
        batches = counters.batches_succeeded + counters.batches_failed
        out |= {
            "batches": batches,
            "extra_request_ratio": round((counters.attempts - batches) / batches, 4),
            "hedged_attempts": counters.hedged_attempts,
            "lag_paused_hedges": counters.lag_paused_hedges,
            "throttled_hedges": counters.throttled_hedges,
            "duplicates_counted": counters.duplicates,
            "wins_by_attempt": {str(k): v for k, v in sorted(counters.wins_by_attempt.items())},
        }
    if TAIL_DELAY and rate:
        time.sleep(TAIL_DELAY + 0.5)  # cancelled slow attempts still land: wait them out
    out["stored_duplicates"] = srv.ask("stored", topic) - messages
    return out


def injected_samples(seed: int, n: int = 20_000) -> list[float]:
    """Draws from the server's injected Publish latency: 5 ms, plus 2 s on 2%."""
    import random

    rng = random.Random(seed)
    return [
        (FAST_DELAY + (TAIL_DELAY if rng.random() < TAIL_FRACTION else 0.0)) * 1000
        for _ in range(n)
    ]


def validate_advisor(unhedged_ms: list[float], hedged: dict[str, Any]) -> dict[str, Any]:
    """The advisor's prediction from unhedged latencies against the hedged run."""
    from reconciler.hedging.profile import HedgingProfile
    from reconciler.hedging.simulate import simulate

    profile = HedgingProfile(hedge_delay_ms=round(HEDGE_DELAY * 1000))
    predicted = simulate(unhedged_ms, profile, batches=max(20_000, len(unhedged_ms) * 2))
    p99, extra = hedged["p99_ms"], hedged["extra_request_ratio"]
    return {
        "predicted_p99_ms": round(predicted.p99_ms, 1),
        "measured_p99_ms": p99,
        "p99_error": round(abs(predicted.p99_ms - p99) / p99, 3),
        "predicted_extra": round(predicted.extra_fraction, 4),
        "measured_extra": extra,
        "extra_error": round(abs(predicted.extra_fraction - extra) / extra, 3) if extra else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages, < 1 minute")
    parser.add_argument("--seed", type=int, default=2026, help="fault injection seed")
    parser.add_argument("--rate", type=float, default=500.0, help="tail case offered load")
    parser.add_argument("--server-workers", type=int, default=256)
    parser.add_argument(
        "--latencies-out", help="write the official client's tail-case latencies (ms) here"
    )
    args = parser.parse_args(argv)
    bulk = 15_000 if args.quick else 60_000
    tail = 1_500 if args.quick else 10_000

    from google.cloud.pubsub_v1 import types

    srv = Server(args.seed, args.server_workers)
    os.environ["PUBSUB_EMULATOR_HOST"] = srv.address
    results: dict[str, dict[str, Any]] = {"throughput": {}, "saturation": {}, "tail": {}}
    try:
        srv.ask("faults", [])
        for case, kinds, burners in (
            ("throughput", KINDS, 0),
            ("saturation", ("official", "ours-hedged"), 2),
        ):
            for kind in kinds:
                r = run(srv, kind, f"{TOPIC}-{case}-{kind}", bulk, 1024,
                        types.BatchSettings(), 0, 5_000, burners)
                results[case][kind] = r
                print(f"{case} {kind:>11}: {r['throughput_msg_s']} msg/s, "
                      f"{r['client_cpu_us_per_msg']} us CPU/msg, extra "
                      f"{r.get('extra_request_ratio', 0):.2%}", file=sys.stderr)
        srv.ask("faults", [{"method": "Publish", "delay": FAST_DELAY,
                            "tail_fraction": TAIL_FRACTION, "tail_delay": TAIL_DELAY}])
        one = types.BatchSettings(max_messages=1)
        for kind in KINDS:
            r = run(srv, kind, f"{TOPIC}-tail-{kind}", tail, 100, one, args.rate, 200)
            results["tail"][kind] = r
            print(f"tail {kind:>11}: p50 {r['p50_ms']} p99 {r['p99_ms']} p99.9 "
                  f"{r['p999_ms']} ms, extra {r.get('extra_request_ratio', 0):.2%}",
                  file=sys.stderr)
    finally:
        srv.stop()

    sat, tail_r = results["saturation"], results["tail"]
    advisor = {
        "from_injected_distribution": validate_advisor(
            injected_samples(args.seed), tail_r["ours-hedged"]
        ),
        "from_official_client_latencies": validate_advisor(
            tail_r["official"]["latencies_ms"], tail_r["ours-hedged"]
        ),
    }
    if args.latencies_out:
        with open(args.latencies_out, "w", encoding="utf-8") as out:
            out.write("# publish latency (ms), official client, benchmarks/hedging.py tail case\n")
            out.writelines(f"{x:.2f}\n" for x in tail_r["official"]["latencies_ms"])
    for case in results.values():
        for r in case.values():
            del r["latencies_ms"]
    summary = {
        "benchmark": "publish-hedging",
        "messages": {"throughput": bulk, "tail": tail},
        "fault_seed": args.seed,
        "tail_server": {"fast_delay_ms": FAST_DELAY * 1000, "tail_fraction": TAIL_FRACTION,
                        "tail_delay_ms": TAIL_DELAY * 1000, "rate_msg_s": args.rate},
        **results,
        "advisor": advisor,
        "targets": {
            "saturation_extra_requests_le_1pct": sat["ours-hedged"]["extra_request_ratio"] <= 0.01,
            "saturation_throughput_ge_official":
                sat["ours-hedged"]["throughput_msg_s"] >= sat["official"]["throughput_msg_s"],
            "advisor_p99_within_20pct":
                advisor["from_injected_distribution"]["p99_error"] <= 0.2,
            "advisor_extra_within_20pct":
                advisor["from_injected_distribution"]["extra_error"] <= 0.2,
            "tail_hedged_p99_le_150ms": tail_r["ours-hedged"]["p99_ms"] <= 150,
            "tail_unhedged_p99_ge_2s": tail_r["official"]["p99_ms"] >= 2000,
        },
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
