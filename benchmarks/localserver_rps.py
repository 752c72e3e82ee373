"""Local server throughput: RPCs per second for GetTopic and UpdateTopic from 8
concurrent clients against 10,000 topics; with --publish-cpu, the server
CPU per 100-message Publish beside Google's emulator, and with --publish-soak, the
server's RSS over a sustained publish of 1M messages.

The server runs in its own process (as `reconcile local-server` does), seeded with
10,000 topics; the clients are threads in this process, each with its own channel and
real `google.pubsub_v1.PublisherClient`. Each phase runs for a fixed time; figures are
completed RPCs per second and client-side latency percentiles. Runs once in memory and
once with --state (journal + fsync per acknowledged UpdateTopic, shared by concurrent
writers). The last line printed is one JSON object.

    python benchmarks/localserver_rps.py [--seconds 5] [--clients 8] [--topics 10000]
    python benchmarks/localserver_rps.py --publish-cpu [--batches 2000] [--rounds 5]
    python benchmarks/localserver_rps.py --publish-soak [--messages 1000000]
    python benchmarks/localserver_rps.py --publish-pull [--batches 1000] [--rounds 5]
    python benchmarks/localserver_rps.py --publish-pull --front-only   # the front's cost
    python benchmarks/localserver_rps.py --publish-pull --before /tmp/before  # vs a commit
    python benchmarks/localserver_rps.py --smoke   # seconds: the RPC mode, the soak and the
                                                   # front-only publish-pull, tiny (no JVM)

--publish-pull measures publish -> pull end to end beside Google's emulator:
per round and server, B Publish calls of 100 messages, then B Pull calls of 100, then
B Acknowledge calls of 100, each phase's server CPU divided by B; ours runs in memory
and with --state (journal + fsync before each reply); peak RSS is VmHWM. Ours in memory
runs twice: as `reconcile local-server` serves (gRPC and REST on one port,
the gRPC connections relayed by the front to the gRPC server's internal socket), and
with gRPC alone on the port (`LocalServer(front=False)`), so the front's cost shows.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
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


# ------------------------------------------------------------------------ Publish

BATCH = 100
MESSAGE_BYTES = 1024
TICKS = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parents[1]


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (the emulator's JVM runs under gcloud's wrapper)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes (all their threads), from /proc/<pid>/stat."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def _rss_mb(pids: list[int]) -> float:
    kib = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                kib += int(line.split()[1])
    return kib / 1024


class _Child:
    """A server process this benchmark started (own session, so that it can stop the
    emulator's whole process group) and the address it serves on."""

    def __init__(self, argv: list[str], address: str, name: str, cwd: Path = ROOT) -> None:
        self.name = name
        self.address = address
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
        )

    def ready(self, timeout: float) -> None:
        import grpc

        channel = grpc.insecure_channel(self.address)
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        finally:
            channel.close()

    def pids(self) -> list[int]:
        return _tree(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ours(extra: list[str] | None = None, tree: Path = ROOT) -> _Child:
    """`reconcile local-server` from the checkout `tree` (`python -m reconciler` run in
    it imports that tree's package: --before measures an older commit this way)."""
    port = _free_port()
    argv = [sys.executable, "-m", "reconciler", "local-server", "--port", str(port), *(extra or [])]
    child = _Child(argv, f"127.0.0.1:{port}", "reconcile local-server", cwd=tree)
    child.ready(60)
    return child


# The server as it was before the front: gRPC alone on the port, nothing relayed.
_GRPC_ONLY = """
import signal, sys, threading
from reconciler.localserver import LocalServer
server = LocalServer(port=int(sys.argv[1]), front=False).start()
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
server.stop()
"""


# The floor: Python gRPC's sync server answering Publish with a fixed 100-ID response
# (no parsing, no storage), configured as the local server configures it.
_FLOOR = """
import signal, sys, threading
from concurrent import futures
import grpc
from reconciler.localserver import MAX_WORKERS
from reconciler.localserver.api import protos
answer = protos.PublishResponse(message_ids=[str(i) for i in range(100)]).SerializeToString()
server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_WORKERS))
server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
    "google.pubsub.v1.Publisher",
    {"Publish": grpc.unary_unary_rpc_method_handler(lambda request, context: answer),
     "CreateTopic": grpc.unary_unary_rpc_method_handler(lambda request, context: b"")})])
server.add_insecure_port("127.0.0.1:" + sys.argv[1])
server.start()
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
server.stop(None)
"""


def _script(source: str, name: str) -> _Child:
    """A server run by a Python `source` given its port as argv[1]."""
    port = _free_port()
    child = _Child([sys.executable, "-c", source, str(port)], f"127.0.0.1:{port}", name)
    child.ready(60)
    return child


def _floor() -> _Child:
    return _script(_FLOOR, "Python gRPC floor (fixed answer)")


def _ours_grpc_only() -> _Child:
    return _script(_GRPC_ONLY, "reconcile (memory, no front)")


def _emulator() -> tuple[_Child | None, str]:
    """Google's emulator when gcloud and its pubsub-emulator component are installed;
    otherwise None and why."""
    import shutil

    if shutil.which("gcloud") is None:
        return None, "gcloud is not installed"
    port = _free_port()
    argv = ["gcloud", "beta", "emulators", "pubsub", "start", f"--host-port=127.0.0.1:{port}"]
    child = _Child(argv, f"127.0.0.1:{port}", "Google's Pub/Sub emulator")
    try:
        child.ready(90)
    except Exception as exc:
        child.stop()
        return None, f"the emulator did not start ({type(exc).__name__})"
    return child, ""


def _add_emulator(servers: list[_Child]) -> tuple[_Child | None, str]:
    """Start Google's emulator beside `servers` when it can be; (it, why not)."""
    emulator, why = _emulator()
    if emulator is None:
        print(f"Google's emulator not measured: {why}", flush=True)
    else:
        servers.append(emulator)
    return emulator, why


def _request(topic: str) -> Any:
    from google.pubsub_v1.types import PublishRequest, PubsubMessage

    messages = [PubsubMessage(data=bytes([i % 251]) * MESSAGE_BYTES) for i in range(BATCH)]
    return PublishRequest(topic=topic, messages=messages)


def _publisher(child: _Child, topic: str) -> Any:
    from reconciler.backends.clients import publisher_client

    client = publisher_client(child.address)
    client.create_topic(name=topic)
    return client


def publish_cpu(
    batches: int,
    rounds: int,
    warmup: int,
    floor: bool = False,
    before: Path | None = None,
    no_front: bool = False,
) -> None:
    """Server CPU (utime + stime of the server process tree) per 100-message Publish,
    ours and the emulator's, rounds interleaved, same client, same requests; with
    `floor`, also a Python gRPC server answering a fixed response (what any handler
    costs at least); with `no_front`, also ours with gRPC alone on the port (what the
    front costs); with `before`, ours from that checkout too."""
    topic = f"{PROJECT}/topics/publish-cpu"
    servers = [_ours()]
    if before is not None:
        old = _ours(tree=before)
        old.name = "reconcile (before)"
        servers.append(old)
    if no_front:
        servers.append(_ours_grpc_only())
    if floor:
        servers.append(_floor())
    emulator, why = _add_emulator(servers)
    try:
        clients = {s.name: _publisher(s, topic) for s in servers}
        request = _request(topic)
        for s in servers:  # warm-up: JIT for the JVM, allocator pools for both
            for _ in range(warmup):
                clients[s.name].publish(request=request, retry=None, timeout=30)
        cpu: dict[str, list[float]] = {s.name: [] for s in servers}
        wall: dict[str, list[float]] = {s.name: [] for s in servers}
        for r in range(rounds):
            for s in servers:
                pids = s.pids()
                c0, t0 = _cpu_seconds(pids), time.perf_counter()
                for _ in range(batches):
                    clients[s.name].publish(request=request, retry=None, timeout=30)
                cpu[s.name].append((_cpu_seconds(pids) - c0) / batches * 1000)
                wall[s.name].append((time.perf_counter() - t0) / batches * 1000)
                print(
                    f"round {r + 1}: {s.name:26} server CPU {cpu[s.name][-1]:.3f} ms/batch, "
                    f"wall {wall[s.name][-1]:.3f} ms/batch",
                    flush=True,
                )
    finally:
        for s in servers:
            s.stop()
    summary = {
        name: {
            "cpu_ms_median": round(statistics.median(v), 3),
            "wall_ms_median": round(statistics.median(wall[name]), 3),
            "cpu_ms_min": round(min(v), 3),
            "cpu_ms_rounds": [round(x, 3) for x in v],
        }
        for name, v in cpu.items()
    }
    ours = summary[servers[0].name]["cpu_ms_median"]
    if emulator is not None:
        # NaN where the emulator read no CPU at all (below the clock's tick, --smoke)
        theirs = summary[emulator.name]
        ratio = ours / theirs["cpu_ms_median"] if theirs["cpu_ms_median"] else math.nan
        best = (summary[servers[0].name]["cpu_ms_min"] / theirs["cpu_ms_min"]
                if theirs["cpu_ms_min"] else math.nan)
        print(
            f"server CPU ratio (ours / emulator): medians {ratio:.2f}x, best rounds {best:.2f}x",
            flush=True,
        )
    print(
        json.dumps(
            {
                "benchmark": "publish_cpu",
                "batch": BATCH,
                "message_bytes": MESSAGE_BYTES,
                "batches_per_round": batches,
                "warmup_batches": warmup,
                "rounds": rounds,
                "summary": summary,
                "emulator": why or "measured",
                "cpus": mp.cpu_count(),
                "python": platform.python_version(),
            }
        )
    )


def publish_soak(messages: int) -> None:
    """RSS of `reconcile local-server` (default --keep-messages) while one client
    publishes `messages` 1 KiB messages to one topic in 100-message batches."""
    topic = f"{PROJECT}/topics/publish-soak"
    server = _ours()
    samples: list[tuple[int, float]] = []
    try:
        client = _publisher(server, topic)
        request = _request(topic)
        total = messages // BATCH
        marks = {0, total // 10, total // 2, total}
        marks |= {total * k // 10 for k in range(1, 10)}
        t0 = time.perf_counter()
        for i in range(total + 1):
            if i in marks:
                samples.append((i * BATCH, _rss_mb(server.pids())))
                print(f"{i * BATCH:>9,} messages: server RSS {samples[-1][1]:.1f} MB", flush=True)
            if i < total:
                client.publish(request=request, retry=None, timeout=30)
        elapsed = time.perf_counter() - t0
    finally:
        server.stop()
    start, middle, end = samples[0][1], samples[len(samples) // 2][1], samples[-1][1]
    print(
        f"start {start:.1f} MB, middle {middle:.1f} MB, end {end:.1f} MB "
        f"({messages:,} messages in {elapsed:.0f} s)",
        flush=True,
    )
    print(
        json.dumps(
            {
                "benchmark": "publish_soak",
                "messages": messages,
                "rss_mb": [[n, round(mb, 1)] for n, mb in samples],
                "seconds": round(elapsed, 1),
                "python": platform.python_version(),
            }
        )
    )


def _rss_peak_mb(pids: list[int]) -> float:
    kib = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        kib += next((int(x.split()[1]) for x in lines if x.startswith("VmHWM:")), 0)
    return kib / 1024


def _subscriber(child: _Child) -> Any:
    from google.pubsub_v1 import SubscriberClient
    from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

    from reconciler.backends.clients import insecure_channel

    channel = insecure_channel(child.address)
    return SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))


def publish_pull(
    batches: int,
    rounds: int,
    warmup: int,
    front_only: bool = False,
    before: Path | None = None,
) -> None:
    """Server CPU per 100-message Publish, Pull and Acknowledge: ours (in memory, and
    durable with --state) beside Google's emulator, rounds interleaved; with
    `front_only`, ours in memory with and without the front alone; with `before`,
    ours in memory from that checkout too (the same rounds: before and after side
    by side)."""
    topic = f"{PROJECT}/topics/publish-pull"
    sub_name = f"{PROJECT}/subscriptions/publish-pull"
    with tempfile.TemporaryDirectory() as tmp:
        servers = [_ours()]
        servers[0].name = "reconcile (memory)"
        if before is not None:
            old = _ours(tree=before)
            old.name = "reconcile (memory, before)"
            servers.append(old)
        servers.append(_ours_grpc_only())
        why = "not run (--front-only)"
        if not front_only:
            durable = _ours(["--state", tmp])
            durable.name = "reconcile (--state)"
            servers.append(durable)
            _, why = _add_emulator(servers)
        try:
            _publish_pull_rounds(servers, topic, sub_name, batches, rounds, warmup, why)
        finally:
            for s in servers:
                s.stop()


def _cpu_ratios(
    summary: dict[str, dict[str, Any]], num: str, den: str, digits: int
) -> dict[str, float]:
    """Median server CPU per call of `num` over `den`, per phase."""
    return {
        k: (
            round(summary[num][f"{k}_cpu_ms_median"] / summary[den][f"{k}_cpu_ms_median"], digits)
            if summary[den][f"{k}_cpu_ms_median"] else math.nan  # below the clock's tick (--smoke)
        )
        for k in ("publish", "pull", "ack")
    }


def _publish_pull_rounds(
    servers: list[_Child],
    topic: str,
    sub_name: str,
    batches: int,
    rounds: int,
    warmup: int,
    why: str,
) -> None:
    request = _request(topic)
    pubs = {s.name: _publisher(s, topic) for s in servers}
    subs = {s.name: _subscriber(s) for s in servers}
    for s in servers:
        subs[s.name].create_subscription(
            request={"name": sub_name, "topic": topic, "ack_deadline_seconds": 600}
        )

    def cycle(s: _Child, n: int, cpu: dict[str, list[float]] | None) -> None:
        pub, sub = pubs[s.name], subs[s.name]
        pids = s.pids()
        c0 = _cpu_seconds(pids)
        for _ in range(n):
            pub.publish(request=request, retry=None, timeout=30)
        c1 = _cpu_seconds(pids)
        acks: list[list[str]] = []
        while len(acks) < n:
            got = sub.pull(
                request={"subscription": sub_name, "max_messages": BATCH},
                retry=None,
                timeout=30,
            ).received_messages
            if got:
                acks.append([m.ack_id for m in got])
        c2 = _cpu_seconds(pids)
        for ids in acks:
            sub.acknowledge(
                request={"subscription": sub_name, "ack_ids": ids}, retry=None, timeout=30
            )
        c3 = _cpu_seconds(pids)
        if cpu is not None:
            cpu["publish"].append((c1 - c0) / n * 1000)
            cpu["pull"].append((c2 - c1) / n * 1000)
            cpu["ack"].append((c3 - c2) / n * 1000)

    for s in servers:  # warm-up: the JVM's JIT, allocator pools
        for _ in range(max(1, warmup // 500)):
            cycle(s, min(500, warmup), None)
    results: dict[str, dict[str, list[float]]] = {
        s.name: {"publish": [], "pull": [], "ack": []} for s in servers
    }
    for r in range(rounds):
        for s in servers:
            cycle(s, batches, results[s.name])
            last = {k: round(v[-1], 3) for k, v in results[s.name].items()}
            print(f"round {r + 1}: {s.name:26} server CPU ms per call {last}", flush=True)
    by_name = {s.name: s for s in servers}
    summary = {
        name: {
            **{f"{k}_cpu_ms_median": round(statistics.median(v), 3) for k, v in phases.items()},
            **{f"{k}_cpu_ms_rounds": [round(x, 3) for x in v] for k, v in phases.items()},
            "peak_rss_mb": round(_rss_peak_mb(by_name[name].pids()), 1),
        }
        for name, phases in results.items()
    }
    emulator_name = "Google's Pub/Sub emulator"
    ratios = {}
    if emulator_name in summary:
        for name in summary:
            if name != emulator_name:
                ratios[name] = _cpu_ratios(summary, name, emulator_name, 2)
                print(f"ratio {name} / emulator (medians): {ratios[name]}", flush=True)
    pairs = {}
    for num, den in (
        ("reconcile (memory)", "reconcile (memory, before)"),
        ("reconcile (memory)", "reconcile (memory, no front)"),
    ):
        if num in summary and den in summary:
            pairs[den] = _cpu_ratios(summary, num, den, 3)
            print(f"ratio {num} / {den} (medians): {pairs[den]}", flush=True)
    before_ratio = pairs.get("reconcile (memory, before)", {})
    front_ratio = pairs.get("reconcile (memory, no front)", {})
    for name, row in summary.items():
        print(
            f"{name:26} publish {row['publish_cpu_ms_median']:.3f} ms, pull "
            f"{row['pull_cpu_ms_median']:.3f} ms, ack {row['ack_cpu_ms_median']:.3f} ms, "
            f"peak RSS {row['peak_rss_mb']} MB",
            flush=True,
        )
    print(
        json.dumps(
            {
                "benchmark": "publish_pull",
                "batch": BATCH,
                "message_bytes": MESSAGE_BYTES,
                "batches_per_round": batches,
                "rounds": rounds,
                "warmup_batches": warmup,
                "summary": summary,
                "ratios": ratios,
                "front_ratio": front_ratio,
                "before_ratio": before_ratio,
                "emulator": why or "measured",
                "cpus": mp.cpu_count(),
                "python": platform.python_version(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--publish-cpu", action="store_true", help="Publish CPU vs emulator")
    parser.add_argument("--publish-soak", action="store_true", help="RSS over a long publish")
    parser.add_argument("--batches", type=int, default=2000, help="measured batches per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--warmup", type=int, default=15_000, help="batches before measuring (the JVM's JIT)"
    )
    parser.add_argument("--messages", type=int, default=1_000_000, help="soak length")
    parser.add_argument(
        "--publish-pull", action="store_true", help="publish -> pull -> ack CPU vs emulator"
    )
    parser.add_argument(
        "--front-only",
        action="store_true",
        help="with --publish-pull: only ours in memory, with and without the front",
    )
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="with --publish-pull or --publish-cpu: also measure ours in memory from this "
        "checkout of an older commit (e.g. `git worktree add --detach /tmp/before <commit>`)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="with --publish-cpu: also a Python gRPC server answering a fixed response",
    )
    parser.add_argument(
        "--no-front",
        action="store_true",
        help="with --publish-cpu: also ours with gRPC alone on the port (no front)",
    )
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.clients, args.topics = 0.3, 2, 20
        publish_soak(2_000)
        publish_pull(20, 1, 20, True, None)
    before = Path(args.before).resolve() if args.before else None
    if before is not None and not (before / "reconciler" / "__main__.py").is_file():
        parser.error(f"--before {args.before}: not a checkout of this repository")
    if args.publish_pull:
        publish_pull(args.batches, args.rounds, args.warmup, args.front_only, before)
        return
    if args.publish_cpu or args.publish_soak:
        if args.publish_cpu:
            publish_cpu(
                args.batches, args.rounds, args.warmup, args.floor, before, args.no_front
            )
        if args.publish_soak:
            publish_soak(args.messages)
        return

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
