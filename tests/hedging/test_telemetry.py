"""The `x-goog-pubsub-client-telemetry` header (issue 37): the hedged publisher sends
it as the Go, Java and Rust clients do (attempt number, the batch's shared start),
and the local server reads it, counts attempts per number, ignores a header it
cannot read, and records a cancelled loser's latency up to the cancel.

Every Publish goes through the real client libraries over loopback; the header is
read back on the wire (a plain gRPC interceptor on the real channel) and decoded
with the type the Python client ships."""

from __future__ import annotations

import base64
import time
from typing import Any

import grpc
from google.pubsub_v1 import PublisherClient as GapicPublisherClient
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.types import pubsub

from reconciler.backends.clients import insecure_channel
from reconciler.hedging import HedgedPublisher
from reconciler.hedging.batching import BatchSettings
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

HEADER = "x-goog-pubsub-client-telemetry"
TOPIC = "projects/telemetry/topics/orders"
CLOCK = "projects/telemetry/topics/clock"
PROFILE = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)


class Headers(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Each Publish's telemetry header as sent (None: the call had none)."""

    def __init__(self) -> None:
        self.sent: list[str | None] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.method.endswith("/Publish") and details.timeout and details.timeout > 0:
            values = [v for k, v in details.metadata or () if k == HEADER]
            assert len(values) <= 1
            self.sent.append(values[0] if values else None)
        return continuation(details, request)


def decoded(value: str) -> Any:
    return pubsub.PubsubClientTelemetry.deserialize(base64.b64decode(value)).publish_operation


def gapic(local_server: Any, interceptor: Headers) -> GapicPublisherClient:
    channel = grpc.intercept_channel(insecure_channel(local_server.address), interceptor)
    client = GapicPublisherClient(transport=PublisherGrpcTransport(channel=channel))
    for name in (TOPIC, CLOCK):
        client.create_topic(request={"name": name})
    return client


def one_by_one(client: GapicPublisherClient, topic: str,
               profile: HedgingProfile | None) -> HedgedPublisher:
    """A publisher of `topic` sending each message as its own batch."""
    return HedgedPublisher(client, topic, profile, RetryTimeouts(),
                           batch_settings=BatchSettings(max_messages=1))


def hedge_wins(pub: HedgedPublisher, server: Any) -> Any:
    """One token earned, then a batch whose hedge answers while its original is held:
    the original's held call, still waiting."""
    earn_tokens(pub.publish, 5)
    held = server.faults.hold(method="Publish", resource=pub.topic, count=2)
    future = pub.publish(b"x")
    original, hedge = held.wait_arrived(2)
    hedge.release()
    future.result(timeout=30)
    return original


def test_a_hedged_batch_tells_each_attempt_and_its_shared_start(
    local_server: Any, wait_until: Wait
) -> None:
    seen = Headers()
    client = gapic(local_server, seen)
    try:
        with one_by_one(client, TOPIC, PROFILE) as pub:
            began = time.time_ns()
            hedge_wins(pub, local_server).release()
            assert pub.counters().wins_by_attempt == {0: 5, 1: 1}
    finally:
        client.transport.close()
    assert None not in seen.sent
    ops = [decoded(v) for v in seen.sent]
    assert [op.hedged_attempt_count for op in ops] == [0, 0, 0, 0, 0, 0, 1]
    first, second = ops[-2:]
    assert first.publish_start_time == second.publish_start_time  # one batch, one start
    start_ns = first.publish_start_time.timestamp_pb().ToNanoseconds()
    assert began <= start_ns <= time.time_ns()
    # The server tells hedges apart: per attempt number, and every call was tagged.
    wait_until(lambda: sum(local_server.outcomes.attempts(TOPIC).values()) == 7)
    assert local_server.outcomes.attempts(TOPIC) == {0: 6, 1: 1}


def test_an_unhedged_publisher_sends_no_telemetry(local_server: Any, wait_until: Wait) -> None:
    seen = Headers()
    client = gapic(local_server, seen)
    try:
        with one_by_one(client, TOPIC, None) as pub:
            for i in range(3):
                pub.publish(b"%d" % i).result(timeout=30)
    finally:
        client.transport.close()
    assert seen.sent == [None, None, None]
    wait_until(lambda: local_server.outcomes.attempts(TOPIC) == {None: 3})


def test_a_cancelled_loser_is_recorded_up_to_its_cancel(
    local_server: Any, wait_until: Wait
) -> None:
    """The service's latency of a call is its life: a loser the publisher cancelled
    ends at the cancel, however long the server goes on holding it (what the advisor
    reads as an observation cut short, docs/hedging.md)."""
    client = gapic(local_server, Headers())
    try:
        with one_by_one(client, TOPIC, PROFILE) as pub, one_by_one(client, CLOCK, None) as clock:
            sent = time.perf_counter()
            original = hedge_wins(pub, local_server)
            won = time.perf_counter() - sent
            # Unrelated round trips while the cancelled original stays held, until
            # it has been held four times as long as the batch took to win.
            i = 0
            while time.perf_counter() - sent < 5 * won:
                clock.publish(b"%d" % i).result(timeout=30)
                i += 1
            released = time.perf_counter()
            original.release()
    finally:
        client.transport.close()
    wait_until(lambda: any(o.code == "CANCELLED" for o in local_server.outcomes.recent(
        topic=TOPIC)))
    [loser] = [o for o in local_server.outcomes.recent(topic=TOPIC) if o.code == "CANCELLED"]
    assert loser.attempt == 0
    assert loser.latency_s < (released - sent) / 2  # not the 5x it was held


def test_a_header_the_server_cannot_read_is_ignored(local_server: Any, wait_until: Wait) -> None:
    """Telemetry never fails a call: bad base64, bytes that are no telemetry message,
    an empty one; a well-formed one from any client is counted by its number."""
    client = gapic(local_server, Headers())
    good = pubsub.PubsubClientTelemetry(
        publish_operation=pubsub.PubsubClientTelemetry.PublishOperation(hedged_attempt_count=2)
    )
    values = [
        "%%% not base64",
        base64.b64encode(b"\xff\xff\xff\x0f").decode(),
        "",
        base64.b64encode(pubsub.PubsubClientTelemetry.serialize(good)).decode(),
    ]
    try:
        for value in values:
            client.publish(
                request={"topic": TOPIC, "messages": [{"data": b"x"}]},
                metadata=[(HEADER, value)],
            )
    finally:
        client.transport.close()
    wait_until(lambda: sum(local_server.outcomes.attempts(TOPIC).values()) == 4)
    assert local_server.outcomes.attempts(TOPIC) == {None: 3, 2: 1}
    assert [o.code for o in local_server.outcomes.recent(topic=TOPIC)] == ["OK"] * 4
