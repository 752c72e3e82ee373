"""Publish to a topic with an Avro schema: server CPU per 100-message
Publish on `reconcile local-server`, beside the same Publish to a topic without a
schema on the same server, and beside Google's emulator with the same schema, in one
run.

Each server runs in its own process (ours as `reconcile local-server` serves, the
emulator as `gcloud beta emulators pubsub start`); one client in this process (the
real `google.pubsub_v1.PublisherClient`, no retries) publishes the same request to
each (server, topic) pair: 100 records of a five-field Avro schema (a US state: name,
abbreviation, population, area, three cities), binary-encoded (--encoding BINARY, the
default) or JSON-encoded, and to the topic without a schema the same bytes. Every
pair is warmed up (the JVM's JIT), then the pairs take turns for each round; server
CPU is utime + stime of the server's process tree over the round, divided by the
batches (medians of rounds reported, each round's figure printed).

    python benchmarks/schema_publish.py [--encoding BINARY|JSON] [--batches 1000]
        [--rounds 7] [--warmup 5000]

With --handler, where ours spends it instead, in this process without a transport:
CPU per batch of the Publish handler (`PublisherService.publish`) to each topic, and
of the schema check alone on the 100 messages (the compiled definition's check),
taking turns, medians of the rounds after the first.

    python benchmarks/schema_publish.py --handler [--encoding BINARY|JSON]
    python benchmarks/schema_publish.py --smoke   # both modes, a few batches, no emulator

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing as mp
import platform
import statistics
import time
from typing import Any

from localserver_rps import PROJECT, _add_emulator, _Child, _cpu_seconds, _ours

BATCH = 100
SCHEMA = {
    "type": "record",
    "name": "State",
    "namespace": "bench",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "post_abbr", "type": "string"},
        {"name": "population", "type": "long"},
        {"name": "area_km2", "type": "double"},
        {"name": "cities", "type": {"type": "array", "items": "string"}},
    ],
}


def _records() -> list[dict[str, Any]]:
    return [
        {
            "name": f"State number {i:03d}",
            "post_abbr": f"S{i % 10}",
            "population": 1_000_000 + 7919 * i,
            "area_km2": 1000.5 + i,
            "cities": [f"City {i}-{j}" for j in range(3)],
        }
        for i in range(BATCH)
    ]


def _payloads(encoding: str) -> list[bytes]:
    import fastavro

    parsed = fastavro.parse_schema(SCHEMA)
    out = []
    for record in _records():
        if encoding == "JSON":
            out.append(json.dumps(record).encode())
        else:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, record)
            out.append(buf.getvalue())
    return out


def _setup(server: _Child, encoding: str) -> tuple[Any, str, str]:
    """The server's publisher client, its topic with the schema and one without."""
    from google.pubsub_v1 import SchemaServiceClient
    from google.pubsub_v1.services.schema_service.transports import SchemaServiceGrpcTransport

    from reconciler.backends.clients import insecure_channel, publisher_client

    schemas = SchemaServiceClient(
        transport=SchemaServiceGrpcTransport(channel=insecure_channel(server.address))
    )
    schema = schemas.create_schema(
        parent=PROJECT, schema={"type_": "AVRO", "definition": json.dumps(SCHEMA)},
        schema_id="bench-state",
    )
    client = publisher_client(server.address)
    with_schema, plain = f"{PROJECT}/topics/with-avro", f"{PROJECT}/topics/plain"
    client.create_topic(request={
        "name": with_schema, "schema_settings": {"schema": schema.name, "encoding": encoding}
    })
    client.create_topic(name=plain)
    return client, with_schema, plain


def _handler(encoding: str, batches: int, rounds: int) -> None:
    """The --handler measurement (see the module docstring)."""
    from reconciler.localserver import LocalServer
    from reconciler.localserver.api import protos
    from reconciler.localserver.api.rpc import CallInfo
    from reconciler.localserver.schemas.definitions import AVRO, compile_definition

    server = LocalServer()  # not started: its services are called directly
    schema = server.schema_service.create_schema(protos.CreateSchemaRequest(
        parent=PROJECT, schema_id="bench-state",
        schema=protos.Schema(type_=AVRO, definition=json.dumps(SCHEMA)),
    ), CallInfo(None))
    code = {"BINARY": 2, "JSON": 1}[encoding]
    payloads = _payloads(encoding)
    requests = {}
    for label, settings in (("Avro schema", {"schema": schema.name, "encoding": code}),
                            ("no schema", None)):
        name = f"{PROJECT}/topics/{label.replace(' ', '-')}"
        server.publisher.create_topic(
            protos.Topic(name=name, schema_settings=settings), CallInfo(None)
        )
        requests[label] = protos.PublishRequest(
            topic=name, messages=[protos.PubsubMessage(data=p) for p in payloads]
        ).SerializeToString()
    compiled = compile_definition(AVRO, json.dumps(SCHEMA))
    check = compiled.check_binary if encoding == "BINARY" else compiled.check_json

    def publish(raw: bytes) -> None:
        wire = protos.WirePublishRequest.FromString(raw)
        server.publisher.publish(wire, CallInfo(None, raw=raw, serialized_reply=True))

    work = {
        "handler, Avro schema": lambda: publish(requests["Avro schema"]),
        "handler, no schema": lambda: publish(requests["no schema"]),
        "the check alone": lambda: [check(p) for p in payloads],
    }
    cpu: dict[str, list[float]] = {label: [] for label in work}
    for r in range(rounds + 1):
        for label, run in work.items():
            c0 = time.process_time()
            for _ in range(batches):
                run()
            if r:  # the first round warms up
                cpu[label].append((time.process_time() - c0) / batches * 1000)
    summary = {label: round(statistics.median(v), 3) for label, v in cpu.items()}
    for label, value in summary.items():
        print(f"{label:25} CPU {value:.3f} ms/batch of {BATCH}", flush=True)
    print(json.dumps({
        "benchmark": "schema_publish --handler", "encoding": encoding, "batch": BATCH,
        "batches_per_round": batches, "rounds": rounds, "cpu_ms_median": summary,
        "python": platform.python_version(),
    }))


def _ratio(num: float, den: float) -> float:
    """num / den, or NaN when the denominator read no CPU at all: a --smoke run's few
    batches can fall below the clock's tick, which is no figure, not a crash."""
    return num / den if den else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoding", choices=("BINARY", "JSON"), default="BINARY")
    parser.add_argument("--batches", type=int, default=1000, help="measured batches per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--warmup", type=int, default=5000, help="batches per pair before measuring"
    )
    parser.add_argument(
        "--handler", action="store_true", help="the handler's and the check's CPU in-process"
    )
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.batches, args.rounds, args.warmup = 5, 1, 5
        _handler(args.encoding, args.batches, args.rounds)
    if args.handler:
        _handler(args.encoding, args.batches, args.rounds)
        return

    from google.pubsub_v1.types import PublishRequest, PubsubMessage

    servers = [_ours()]
    servers[0].name = "reconcile local-server"
    emulator, why = (None, "not run (--smoke)") if args.smoke else _add_emulator(servers)
    payloads = _payloads(args.encoding)
    pairs: list[tuple[str, Any, Any]] = []  # (label, client, request)
    try:
        for server in servers:
            client, with_schema, plain = _setup(server, args.encoding)
            for label, topic in ((f"{server.name}, Avro schema", with_schema),
                                 (f"{server.name}, no schema", plain)):
                request = PublishRequest(
                    topic=topic, messages=[PubsubMessage(data=p) for p in payloads]
                )
                client.publish(request=request, retry=None, timeout=30)  # accepted at all
                pairs.append((label, client, request))
        owner = {label: s for s in servers for label, _, _ in pairs if label.startswith(s.name)}
        for _, client, request in pairs:
            for _ in range(args.warmup):
                client.publish(request=request, retry=None, timeout=30)
        cpu: dict[str, list[float]] = {label: [] for label, _, _ in pairs}
        for r in range(args.rounds):
            for label, client, request in pairs:
                pids = owner[label].pids()
                c0, t0 = _cpu_seconds(pids), time.perf_counter()
                for _ in range(args.batches):
                    client.publish(request=request, retry=None, timeout=30)
                cpu[label].append((_cpu_seconds(pids) - c0) / args.batches * 1000)
                wall = (time.perf_counter() - t0) / args.batches * 1000
                print(f"round {r + 1}: {label:45} server CPU {cpu[label][-1]:.3f} ms/batch, "
                      f"wall {wall:.3f} ms/batch", flush=True)
    finally:
        for server in servers:
            server.stop()
    summary = {
        label: {"cpu_ms_median": round(statistics.median(v), 3),
                "cpu_ms_rounds": [round(x, 3) for x in v]}
        for label, v in cpu.items()
    }
    ours = servers[0].name
    ratios = {
        "ours: schema / no schema": _ratio(
            summary[f"{ours}, Avro schema"]["cpu_ms_median"],
            summary[f"{ours}, no schema"]["cpu_ms_median"],
        ),
    }
    if emulator is not None:
        ratios["schema: ours / emulator"] = _ratio(
            summary[f"{ours}, Avro schema"]["cpu_ms_median"],
            summary[f"{emulator.name}, Avro schema"]["cpu_ms_median"],
        )
    for name, ratio in ratios.items():
        shown = (
            "not measurable (a median of 0 CPU: too few batches)"
            if math.isnan(ratio) else f"{ratio:.2f}x (medians)"
        )
        print(f"{name}: {shown}", flush=True)
    print(json.dumps({
        "benchmark": "schema_publish", "encoding": args.encoding, "batch": BATCH,
        "message_bytes": len(payloads[0]), "batches_per_round": args.batches,
        "rounds": args.rounds, "warmup_batches": args.warmup, "summary": summary,
        "ratios": {k: round(v, 2) for k, v in ratios.items()}, "emulator": why or "measured",
        "cpus": mp.cpu_count(), "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
