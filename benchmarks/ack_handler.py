"""The Acknowledge handler's own time, in one process and in memory: per round a
Publish of 100 messages, a Pull of 100, then the timed Acknowledge of their 100 ack
IDs (`SubscriberService.acknowledge`, no transport), and apart the check every
request gets from the dispatcher before its handler (`wellknown.check_times`) on the
same request. Prints the medians of the rounds after the first fifth
(microseconds); the last line is one JSON object.

    python benchmarks/ack_handler.py [--rounds 3000]
    python benchmarks/ack_handler.py --smoke   # a few rounds: that it runs (the suite's check)
    PYTHONPATH=DIR python benchmarks/ack_handler.py   # an extracted older tree
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from reconciler.localserver.api import protos
from reconciler.localserver.api.rpc import CallInfo
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.pubsub.subscriber_service import SubscriberService

try:  # absent from trees older than the check (PYTHONPATH=DIR)
    from reconciler.localserver.api.wellknown import check_times
except ImportError:
    check_times = None  # type: ignore[assignment]

TOPIC = "projects/bench-project/topics/topic-one"
SUB = "projects/bench-project/subscriptions/sub-one"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds at tiny sizes: checks that the script runs (no figures)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 5
    state = ServerState()
    state.create_topic(TOPIC, lambda: protos.Topic(name=TOPIC))
    service = SubscriberService(state)
    service.create_subscription(protos.Subscription(name=SUB, topic=TOPIC), CallInfo(None))
    raw = protos.PublishRequest(
        topic=TOPIC, messages=[protos.PubsubMessage(data=b"x" * 1024)] * 100
    ).SerializeToString()
    times, checks = [], []
    for _ in range(args.rounds):
        state.subs.publish(TOPIC, raw, 100, lambda topic: "us-central1")
        got = service.pull(protos.PullRequest(subscription=SUB, max_messages=100), CallInfo(None))
        request = protos.AcknowledgeRequest(
            subscription=SUB, ack_ids=[m.ack_id for m in got.received_messages]
        )
        start = time.perf_counter()
        service.acknowledge(request, CallInfo(None))
        times.append(time.perf_counter() - start)
        if check_times is not None:
            start = time.perf_counter()
            check_times(request)
            checks.append(time.perf_counter() - start)
    median_us = statistics.median(times[args.rounds // 5 :]) * 1e6
    print(f"Acknowledge of 100 ack IDs: median {median_us:.0f} us")
    result = {"ack_100_median_us": round(median_us, 1), "rounds": args.rounds}
    if checks:
        check_us = statistics.median(checks[args.rounds // 5 :]) * 1e6
        print(f"the dispatcher's time check of that request: median {check_us:.1f} us")
        result["time_check_median_us"] = round(check_us, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
