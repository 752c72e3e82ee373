"""Publish hedging benchmark (issue 6): tail latency with and without hedging.

Publishes N messages in batches of one to the local server, where 2% of Publish
calls take 2 s and the rest about 5 ms, once with hedging off and once with hedging
on (hedge delay 100 ms, other settings at their defaults), in one run. Records p50,
p99 and p99.9 publish latency (from the message's due time to its future being
done) and the extra-request ratio ((server Publish calls - messages) / messages)
for both.

Load is open loop: messages are due at a fixed rate (default 500/s, at most 200
outstanding), so both modes face the same offered load. A closed loop would let
the hedged run go faster and saturate this 2-core machine's CPU (client and server
share one process), which measures the CPU, not hedging.

    python benchmarks/hedging.py            # 10,000 messages per mode
    python benchmarks/hedging.py --quick    # 1,500 messages per mode, < 1 minute

The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

from reconciler.backends.clients import publisher_client
from reconciler.hedging.batching import BatchSettings
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from reconciler.hedging.publisher import HedgedPublisher
from reconciler.localserver import LocalServer

TOPIC = "projects/bench-project/topics/hedging-bench"
FAST_DELAY = 0.005
TAIL_FRACTION = 0.02
TAIL_DELAY = 2.0
HEDGE_DELAY_MS = 100


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile: the value at or below which p% of samples fall."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def run_mode(
    srv: LocalServer,
    client: Any,
    profile: HedgingProfile | None,
    messages: int,
    inflight: int,
    rate: float,
) -> dict[str, Any]:
    srv.counters.reset()
    stored_before = len(srv.messages(TOPIC))
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    slots = threading.BoundedSemaphore(inflight)
    publisher = HedgedPublisher(
        client,
        TOPIC,
        profile,
        RetryTimeouts(),
        batch_settings=BatchSettings(max_messages=1),
    )
    min_tokens = [publisher.counters().tokens_available]
    stop_sampling = threading.Event()

    def sample_tokens() -> None:
        # Watch the bucket: with 2% slow calls and a 0.1 refill it should never empty.
        while not stop_sampling.wait(0.02):
            tokens = publisher.counters().tokens_available
            if tokens is not None and (min_tokens[0] is None or tokens < min_tokens[0]):
                min_tokens[0] = tokens

    sampler = threading.Thread(target=sample_tokens, daemon=True)
    sampler.start()

    def done(start: float, future: Future[str]) -> None:
        elapsed = time.perf_counter() - start
        error = future.exception()
        with lock:
            latencies.append(elapsed)
            if error is not None:
                errors.append(str(error))
        slots.release()

    began = time.perf_counter()
    for i in range(messages):
        # Open loop: message i is due at began + i / rate, whatever happened before,
        # so both modes see the same offered load; latency counts from the due time
        # (a publisher that falls behind is charged for it: no coordinated omission).
        due = began + i / rate if rate else time.perf_counter()
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        slots.acquire()
        future = publisher.publish(f"message {i}".encode())
        future.add_done_callback(lambda f, s=due: done(s, f))
    publisher.close()
    wall = time.perf_counter() - began
    stop_sampling.set()
    sampler.join()

    counters = publisher.counters()
    calls = srv.counters.get("Publish")
    # Cancelled slow attempts still finish on the server (cancellation is best effort)
    # and store their copy: wait out the tail delay before counting what was stored.
    time.sleep(TAIL_DELAY + 0.5 if profile is not None else 0.0)
    stored = len(srv.messages(TOPIC)) - stored_before
    latencies.sort()
    return {
        "hedging": None
        if profile is None
        else {
            "hedge_delay_ms": profile.hedge_delay_ms,
            "max_tokens": profile.max_tokens,
            "refill_ratio": profile.refill_ratio,
        },
        "messages": messages,
        "errors": len(errors),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "p999_ms": round(percentile(latencies, 99.9) * 1000, 1),
        "max_ms": round(latencies[-1] * 1000, 1),
        "server_publish_calls": calls,
        "extra_request_ratio": round((calls - messages) / messages, 4),
        "stored_messages": stored,
        "stored_duplicates": stored - messages,
        "client_attempts": counters.attempts,
        "hedged_attempts": counters.hedged_attempts,
        "retried_attempts": counters.retried_attempts,
        "throttled_hedges": counters.throttled_hedges,
        "wins_by_attempt": {str(k): v for k, v in sorted(counters.wins_by_attempt.items())},
        "cancelled_attempts": counters.cancelled_attempts,
        "duplicates_seen_by_client": counters.duplicates,
        "min_tokens": min_tokens[0],
        "wall_s": round(wall, 2),
        "throughput_msg_s": round(messages / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,500 messages per mode")
    parser.add_argument("--messages", type=int, help="messages per mode (default 10,000)")
    parser.add_argument(
        "--rate", type=float, default=500.0, help="offered load, messages/s (0 = closed loop)"
    )
    parser.add_argument("--inflight", type=int, default=200, help="max outstanding publishes")
    parser.add_argument("--seed", type=int, default=2026, help="fault injection seed")
    parser.add_argument(
        "--server-workers",
        type=int,
        default=256,
        help="local server handler threads (slow calls sleep on one each)",
    )
    args = parser.parse_args(argv)
    messages = args.messages or (1_500 if args.quick else 10_000)

    srv = LocalServer(
        host="127.0.0.1", port=0, max_workers=args.server_workers, fault_seed=args.seed
    )
    srv.start()
    client = publisher_client(srv.address)
    try:
        client.create_topic(name=TOPIC)
        srv.faults.add(
            method="Publish",
            delay=FAST_DELAY,
            tail_fraction=TAIL_FRACTION,
            tail_delay=TAIL_DELAY,
        )
        results: dict[str, Any] = {}
        for mode, profile in (
            ("unhedged", None),
            ("hedged", HedgingProfile(hedge_delay_ms=HEDGE_DELAY_MS)),
        ):
            results[mode] = run_mode(srv, client, profile, messages, args.inflight, args.rate)
            r = results[mode]
            print(
                f"{mode:>9}: p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms  "
                f"p99.9 {r['p999_ms']} ms  extra requests {r['extra_request_ratio']:.2%}  "
                f"({r['server_publish_calls']} calls, {r['errors']} errors, {r['wall_s']} s)",
                file=sys.stderr,
            )
    finally:
        client.transport.close()
        srv.stop()

    hedged, unhedged = results["hedged"], results["unhedged"]
    summary = {
        "benchmark": "publish-hedging",
        "messages_per_mode": messages,
        "rate_msg_s": args.rate,
        "inflight": args.inflight,
        "fault_seed": args.seed,
        "server_workers": args.server_workers,
        "server": {
            "fast_delay_ms": FAST_DELAY * 1000,
            "tail_fraction": TAIL_FRACTION,
            "tail_delay_ms": TAIL_DELAY * 1000,
        },
        "unhedged": unhedged,
        "hedged": hedged,
        "targets": {
            "hedged_p99_le_150ms": hedged["p99_ms"] <= 150,
            "unhedged_p99_ge_2s": unhedged["p99_ms"] >= 2000,
            "hedged_extra_requests_le_3pct": hedged["extra_request_ratio"] <= 0.03,
        },
    }
    print(json.dumps(summary, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
