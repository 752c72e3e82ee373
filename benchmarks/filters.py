"""What a subscription filter costs a Publish: the local server's Publish handler
(in process, no transport: the filter is evaluated there) for a 100-message request
to a topic with one subscription, without a filter and with one, CPU per call.

    python benchmarks/filters.py --calls 2000 --rounds 7
    python benchmarks/filters.py --smoke   # a few calls: that it runs (the suite's check)

Each round measures the two setups alternately (fresh in-memory servers, the same
request bytes: 100 messages of 1 KiB, half of them with the attribute the filter
keeps); the figures are medians of the rounds. The filter parses each request's
messages at Publish (a parse a Pull would otherwise make at first delivery: it is
done once either way) and runs one test per message."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from reconciler.localserver import LocalServer
from reconciler.localserver.api import protos
from reconciler.localserver.api.rpc import CallInfo

TOPIC = "projects/proj-alpha/topics/orders"
SUB = "projects/proj-alpha/subscriptions/orders-sub"
FILTER = 'attributes.kind = "order" AND NOT hasPrefix(attributes.region, "test-")'


def _request() -> tuple[Any, bytes]:
    messages = [
        protos.PubsubMessage(
            data=b"x" * 1024,
            attributes={"kind": "order" if i % 2 else "refund", "region": "eu-west"},
        )
        for i in range(100)
    ]
    raw = protos.PublishRequest(topic=TOPIC, messages=messages).SerializeToString()
    return protos.WirePublishRequest.FromString(raw), raw


def _server(filter_text: str) -> LocalServer:
    server = LocalServer(max_backlog=10_000_000)  # not started: the handler alone
    server.state.create_topics([protos.Topic(name=TOPIC)])
    config = protos.Subscription(name=SUB, topic=TOPIC, filter=filter_text)
    server.state.subs.create(SUB, lambda: config)
    return server


def _measure(server: LocalServer, calls: int, wire: Any, raw: bytes) -> float:
    """CPU seconds per Publish call."""
    publish = server.publisher.publish
    start = time.process_time()
    for _ in range(calls):
        publish(wire, CallInfo(None, raw))
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.rounds = 5, 1
    wire, raw = _request()
    figures: dict[str, list[float]] = {"no filter": [], "filter": []}
    for _ in range(args.rounds):
        for label, text in (("no filter", ""), ("filter", FILTER)):
            server = _server(text)
            try:
                _measure(server, 50, wire, raw)  # warm-up
                figures[label].append(_measure(server, args.calls, wire, raw))
            finally:
                server.state.close()
    for label, values in figures.items():
        ms = [v * 1000 for v in values]
        print(f"{label:10} median {statistics.median(ms):.3f} ms per 100-message Publish "
              f"(rounds: {', '.join(f'{m:.3f}' for m in ms)})")
    ratio = statistics.median(figures["filter"]) / statistics.median(figures["no filter"])
    print(f"filter / no filter: {ratio:.2f}x")


if __name__ == "__main__":
    main()
