"""The hedged publisher against the local server, through real gRPC.

Latency comes from the server's fault injection. No assertion depends on how long
something took: the tests assert counters, server call and message counts, and which
attempt won. Slow calls are far slower than the hedge delay (seconds against 100-500
ms), so a loaded machine only makes a test slower, not wrong.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from reconciler.backends.clients import batching_publisher_client
from reconciler.hedging import HedgedPublisher
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.batching import BatchSettings
from reconciler.hedging.profile import HedgingConfigError, HedgingProfile, RetryTimeouts
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

TOPIC = "projects/hedge-test/topics/orders"
ONE = BatchSettings(max_messages=1)


@pytest.fixture
def topic(publisher_client: Any) -> str:
    publisher_client.create_topic(request={"name": TOPIC})
    return TOPIC


def publisher(client: Any, profile: HedgingProfile | None, **kw: Any) -> HedgedPublisher:
    kw.setdefault("batch_settings", ONE)
    return HedgedPublisher(client, TOPIC, profile, RetryTimeouts(), **kw)


def results(futures: list[Future[str]]) -> list[str]:
    return [f.result(timeout=30) for f in futures]


def test_fast_responses_are_not_hedged_and_spend_no_token(
    local_server: Any, publisher_client: Any, topic: str
) -> None:
    local_server.faults.add(method="Publish", delay=0.005)
    profile = HedgingProfile(hedge_delay_ms=1_000, max_tokens=10)
    with publisher(publisher_client, profile) as pub:
        ids = results([pub.publish(f"m{i}".encode()) for i in range(20)])
        c = pub.counters()
    assert len(set(ids)) == 20
    assert (c.attempts, c.hedges_sent, c.hedges_dropped) == (20, 0, 0)
    assert c.tokens_available == pytest.approx(2.0)  # from empty: 20 x 0.1
    assert c.wins_by_attempt == {0: 20}
    assert local_server.counters.get("Publish") == 20
    assert len(local_server.messages(topic)) == 20


def test_slow_attempt_is_hedged_the_hedge_wins_and_the_duplicate_lands(
    local_server: Any, publisher_client: Any, topic: str, wait_until: Wait
) -> None:
    profile = HedgingProfile(hedge_delay_ms=500, refill_ratio=0.2)
    with publisher(publisher_client, profile) as pub:
        earn_tokens(pub.publish, 5)  # the bucket starts empty
        # Only the first attempt is slow: the rule is cleared once the server has it.
        local_server.faults.add(method="Publish", delay=3.0)
        future = pub.publish(b"payload", source="test")
        wait_until(lambda: local_server.counters.get("Publish") == 6)
        local_server.faults.clear()
        assert local_server.counters.get("Publish") == 6, "hedge sent before the slow rule went"
        message_id = future.result(timeout=30)
        c = pub.counters()
        assert c.hedges_sent == 1
        assert c.wins_by_attempt == {0: 5, 1: 1}
        assert c.tokens_available == pytest.approx(0.2)  # one spent, one refill
        assert c.cancelled_attempts == 1
        # Cancellation is best effort: the slow original still completes on the
        # server, which then holds the message twice under different IDs.
        wait_until(lambda: len(local_server.messages(topic)) == 7, 20)
    stored = local_server.messages(topic)[5:]
    assert [m.data for m in stored] == [b"payload", b"payload"]
    assert stored[0].message_id == message_id  # the hedge was stored first
    assert stored[0].message_id != stored[1].message_id
    assert local_server.counters.get("Publish") == 7


def test_tokens_run_out_under_sustained_slowness(
    local_server: Any, publisher_client: Any, topic: str
) -> None:
    """Every call is slow; hedging throttles itself to about the refill ratio."""
    local_server.faults.add(method="Publish", delay=0.6)
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
    waves, per_wave = 6, 5
    with publisher(publisher_client, profile) as pub:
        for w in range(waves):
            results([pub.publish(f"w{w}-{i}".encode()) for i in range(per_wave)])
        c = pub.counters()
    batches = waves * per_wave
    # Unthrottled, each batch would be hedged about five times (every 100 ms for
    # 600 ms): 150 hedges. The bucket, empty at first, allows 0.2 per success.
    assert c.hedges_sent <= profile.refill_ratio * batches
    assert c.hedges_sent >= 2  # after the first wave, each wave's refills buy one
    assert c.hedges_dropped > 0
    assert c.attempts == batches + c.hedges_sent
    assert local_server.counters.get("Publish") == c.attempts
    assert sum(c.wins_by_attempt.values()) == batches


def test_retryable_error_is_retried(local_server: Any, publisher_client: Any, topic: str) -> None:
    local_server.faults.add(method="Publish", error="UNAVAILABLE", error_next=2)
    with publisher(publisher_client, HedgingProfile(hedge_delay_ms=1_000)) as pub:
        (message_id,) = results([pub.publish(b"x")])
        c = pub.counters()
    assert (c.retried_attempts, c.failed_attempts, c.hedges_sent) == (2, 2, 0)
    assert c.wins_by_attempt == {0: 1}
    assert local_server.counters.get("Publish") == 3
    assert [m.message_id for m in local_server.messages(topic)] == [message_id]


def test_permanent_error_fails_the_future_with_the_service_message(
    local_server: Any, publisher_client: Any, topic: str
) -> None:
    local_server.faults.add(
        method="Publish", error="PERMISSION_DENIED", message="User not authorized to publish"
    )
    with publisher(publisher_client, HedgingProfile(hedge_delay_ms=1_000)) as pub:
        future = pub.publish(b"x")
        with pytest.raises(api_exceptions.PermissionDenied, match="User not authorized"):
            future.result(timeout=30)
        c = pub.counters()
    assert (c.attempts, c.batches_failed) == (1, 1)


def test_missing_topic_fails_with_not_found(local_server: Any, publisher_client: Any) -> None:
    with (
        publisher(publisher_client, None) as pub,
        pytest.raises(api_exceptions.NotFound, match="Topic not found"),
    ):
        pub.publish(b"x").result(timeout=30)


def test_hedging_off_sends_no_extra_attempt(
    local_server: Any, publisher_client: Any, topic: str
) -> None:
    local_server.faults.add(method="Publish", delay=0.5)
    with publisher(publisher_client, None) as pub:
        results([pub.publish(b"x")])
        c = pub.counters()
    assert (c.attempts, c.hedges_sent, c.tokens_available) == (1, 0, None)
    assert local_server.counters.get("Publish") == 1


def test_batches_share_one_request(local_server: Any, publisher_client: Any, topic: str) -> None:
    settings = BatchSettings(max_messages=10, max_latency=60.0)
    with publisher(publisher_client, HedgingProfile(), batch_settings=settings) as pub:
        futures = [pub.publish(f"m{i}".encode()) for i in range(25)]
        pub.flush()  # the last five
        ids = results(futures)
    assert len(set(ids)) == 25
    assert local_server.counters.get("Publish") == 3
    # Batches are concurrent, so only the set of stored messages is certain.
    stored = sorted(m.data for m in local_server.messages(topic))
    assert stored == sorted(f"m{i}".encode() for i in range(25))


def test_profile_is_read_from_the_topic_labels(
    local_server: Any, publisher_client: Any, topic: str
) -> None:
    profile = HedgingProfile(hedge_delay_ms=250, max_tokens=7, refill_ratio=0.05, name="fast")
    retry = RetryTimeouts(initial_rpc_timeout_ms=3_000, total_timeout_ms=30_000)
    name = "projects/hedge-test/topics/labelled"
    labels = {"team": "payments", **hedging_labels.encode(profile, retry)}
    publisher_client.create_topic(request={"name": name, "labels": labels})
    # Both client flavours: the GAPIC client and google.cloud.pubsub_v1's.
    batching = batching_publisher_client(local_server.address)
    try:
        for client in (publisher_client, batching):
            with HedgedPublisher.from_topic(client, name, batch_settings=ONE) as pub:
                assert (pub.profile, pub.retry) == (profile, retry)
                results([pub.publish(b"x")])
                assert pub.counters().tokens_available == pytest.approx(0.05)
    finally:
        batching.transport.close()
    assert len(local_server.messages(name)) == 2


def test_topic_without_hedging_labels_means_hedging_off(publisher_client: Any, topic: str) -> None:
    with HedgedPublisher.from_topic(publisher_client, topic) as pub:
        assert pub.profile is None
        assert pub.retry == RetryTimeouts()


def test_topic_labels_that_break_the_rules_fail_construction(publisher_client: Any) -> None:
    name = "projects/hedge-test/topics/broken"
    bad = HedgingProfile(hedge_delay_ms=5_000)
    labels = hedging_labels.encode(bad, RetryTimeouts(initial_rpc_timeout_ms=5_000))
    publisher_client.create_topic(request={"name": name, "labels": labels})
    with pytest.raises(HedgingConfigError, match="shorter than initialRpcTimeout"):
        HedgedPublisher.from_topic(publisher_client, name)
    partial = dict(labels)
    del partial[hedging_labels.MAX_TOKENS]
    other = "projects/hedge-test/topics/partial"
    publisher_client.create_topic(request={"name": other, "labels": partial})
    with pytest.raises(hedging_labels.LabelDecodeError, match="incomplete"):
        HedgedPublisher.from_topic(publisher_client, other)


def test_hedging_with_message_ordering_fails(publisher_client: Any, topic: str) -> None:
    with pytest.raises(HedgingConfigError, match="message ordering"):
        HedgedPublisher.from_spec(
            publisher_client, topic, HedgingProfile(), RetryTimeouts(), message_ordering=True
        )
