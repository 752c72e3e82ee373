"""The hedged publisher's attempt races, through the real client and real gRPC.

Every attempt is a real Publish RPC to the local server. The server's fault holds
park attempts until the test answers them (`release()` runs the real handler, which
stores the message; `fail()` answers with a status), so the test, not timing,
decides which attempt wins. Assertions are on the publisher's counters, the server's
RPC counters and stored messages, and the futures' results, never on elapsed time.

One ordering is assumed where two attempts of a batch are held: the original, sent a
whole hedge delay (>= 100 ms) before its hedge on the same connection, reaches the
server first. The token bucket starts empty, so a test that wants a hedge first earns
its tokens with fast publishes (`earn_tokens`). The rules shared with the official
clients have their own tables in test_official_parity.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from reconciler.backends.clients import publisher_client
from reconciler.hedging import HedgedPublisher
from reconciler.hedging.batching import Backoff, BatchSettings
from reconciler.hedging.profile import HedgingConfigError, HedgingProfile, RetryTimeouts
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

TOPIC = "projects/hedge-races/topics/orders"
OTHER = "projects/hedge-races/topics/clock"
ONE = BatchSettings(max_messages=1)
FAST = HedgingProfile(hedge_delay_ms=100, max_tokens=50, refill_ratio=0.2)
# One token at most: exactly one hedge per batch once five successes earned it.
ONE_HEDGE = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
EARN = 5  # successes that earn one token at refill ratio 0.2
# For tests about something other than hedging: a hedge would need a 10 s stall.
SLOW = HedgingProfile(hedge_delay_ms=10_000, max_tokens=50, refill_ratio=0.1)
SLOW_RETRY = RetryTimeouts(initial_rpc_timeout_ms=20_000, total_timeout_ms=60_000)
NO_JITTER = Backoff(initial=0.01, multiplier=2.0, maximum=0.05, jitter=False)


@pytest.fixture
def client(local_server: Any) -> Iterator[Any]:
    """The real GAPIC client HedgedPublisher is built for, on the local server, with
    the topics the tests publish to."""
    c = publisher_client(local_server.address)
    for name in (TOPIC, OTHER):
        c.create_topic(request={"name": name})
    yield c
    c.transport.close()


def make(
    client: Any, profile: HedgingProfile | None = FAST, topic: str = TOPIC, **kw: Any
) -> HedgedPublisher:
    kw.setdefault("batch_settings", ONE)
    kw.setdefault("backoff", NO_JITTER)
    if profile is SLOW:
        kw.setdefault("retry", SLOW_RETRY)
    return HedgedPublisher(client, topic, profile, **kw)


def stored(server: Any, topic: str = TOPIC) -> list[tuple[str, bytes]]:
    """(message ID, data) of what the server kept, in the order it kept them."""
    return [(m.message_id, m.data) for m in server.messages(topic)]


def result(future: Future[str]) -> str:
    return future.result(timeout=30)


def test_fast_response_sends_no_hedge(local_server: Any, client: Any) -> None:
    with make(client, SLOW) as pub:
        message_id = result(pub.publish(b"hello", k="v"))
        c = pub.counters()
    assert (c.attempts, c.hedges_sent, c.cancelled_attempts) == (1, 0, 0)
    assert c.wins_by_attempt == {0: 1}
    assert c.tokens_available == pytest.approx(0.1)  # started empty, one refill
    (message,) = local_server.messages(TOPIC)
    assert (message.message_id, message.data) == (message_id, b"hello")
    assert dict(message.attributes) == {"k": "v"}
    assert local_server.counters.get("Publish") == 1


def test_slow_attempt_is_hedged_and_the_hedge_wins(local_server: Any, client: Any) -> None:
    with make(client, ONE_HEDGE) as pub:
        earn_tokens(pub.publish, EARN)
        held = local_server.faults.hold(method="Publish", count=1)  # the original only
        future = pub.publish(b"x")
        (original,) = held.wait_arrived(1)
        message_id = result(future)  # the hedge went through while the original waits
        c = pub.counters()
    assert original.outcome is None  # still held: the hedge won without it
    assert c.hedges_sent == 1
    assert c.wins_by_attempt == {0: EARN, 1: 1}
    assert c.cancelled_attempts == 1
    assert c.tokens_available == pytest.approx(0.2)  # one spent, one refill
    assert stored(local_server)[EARN:] == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == EARN + 2


def test_original_is_kept_and_can_still_win(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    with make(client, ONE_HEDGE) as pub:
        earn_tokens(pub.publish, EARN)
        held = local_server.faults.hold(method="Publish", count=2)
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        # The publisher counts an attempt just after sending it: poll, don't race.
        wait_until(lambda: pub.counters().hedges_sent == 1)
        assert not future.done()
        original.release()
        message_id = result(future)
        c = pub.counters()
    assert c.wins_by_attempt == {0: EARN + 1}
    assert (c.hedges_sent, c.cancelled_attempts) == (1, 1)
    hedge.fail("UNAVAILABLE", "too late")  # the cancelled hedge never reaches the handler
    assert stored(local_server)[EARN:] == [(message_id, b"x")]


def test_hedges_repeat_every_delay_while_tokens_remain(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=2, refill_ratio=0.2)
    with make(client, profile) as pub:
        earn_tokens(pub.publish, 2 * EARN)
        held = local_server.faults.hold(method="Publish", count=3)
        future = pub.publish(b"x")
        calls = held.wait_arrived(3)
        # Out of tokens: the third hedge is dropped, and no more come.
        wait_until(lambda: pub.counters().hedges_dropped == 1)
        assert local_server.counters.get("Publish") == 2 * EARN + 3
        calls[2].release()
        message_id = result(future)
        c = pub.counters()
    assert (c.hedges_sent, c.hedges_dropped) == (2, 1)
    assert c.wins_by_attempt == {0: 2 * EARN, 2: 1}
    assert c.cancelled_attempts == 2
    assert c.tokens_available == pytest.approx(0.2)
    held.fail_all("UNAVAILABLE")
    assert stored(local_server)[2 * EARN:] == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == 2 * EARN + 3


def test_tokens_throttle_hedging_to_the_refill_ratio(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """Sustained slowness: every batch is slow, but only 0.2 per success get hedged,
    from an empty bucket."""
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
    hedged_batches = []
    with make(client, profile) as pub:
        for i in range(11):
            before = pub.counters()
            held = local_server.faults.hold(method="Publish", count=2)
            future = pub.publish(f"m{i}".encode())
            (original,) = held.wait_arrived(1)[:1]
            # One hedge delay later the batch is either hedged or its hedge dropped.
            wait_until(
                lambda b=before: (
                    pub.counters().attempts == b.attempts + 2
                    or pub.counters().hedges_dropped > b.hedges_dropped
                )
            )
            if pub.counters().attempts == before.attempts + 2:
                hedged_batches.append(i)
                held.wait_arrived(2)  # hold the hedge too, so the original wins
            original.release()
            result(future)
            held.fail_all("UNAVAILABLE")  # the cancelled hedge, if any; ends the hold
        c = pub.counters()
    # Empty bucket: five successes earn the first token (batch 5), five more the next.
    assert hedged_batches == [5, 10]
    assert (c.hedges_sent, c.hedges_dropped) == (2, 9)
    assert c.wins_by_attempt == {0: 11}
    assert c.tokens_available == pytest.approx(0.2)
    assert local_server.counters.get("Publish") == 13
    assert [data for _, data in stored(local_server)] == [f"m{i}".encode() for i in range(11)]


def test_late_success_of_a_losing_attempt_is_a_duplicate(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """Cancelling the loser is best effort: the service still completes it and keeps
    the batch twice, under different IDs."""
    with make(client, ONE_HEDGE) as pub:
        earn_tokens(pub.publish, EARN)
        held = local_server.faults.hold(method="Publish", count=1)
        future = pub.publish(b"payload", source="test")
        (original,) = held.wait_arrived(1)
        message_id = result(future)
        original.release()  # the service answers the losing original after all
        wait_until(lambda: len(local_server.messages(TOPIC)) == EARN + 2)
        c = pub.counters()
    (first_id, first), (second_id, second) = stored(local_server)[EARN:]
    assert (first, second) == (b"payload", b"payload")
    assert first_id == message_id  # the hedge's copy, stored first
    assert second_id != message_id
    assert c.wins_by_attempt == {0: EARN, 1: 1}
    # The original was in flight when the hedge won: cancelled, and counted as a
    # possible duplicate (the service did store it). Its late answer never reached
    # the publisher (cancelled first), so it is not a confirmed one.
    assert (c.cancelled_attempts, c.duplicates, c.duplicates_confirmed) == (1, 1, 0)


def test_retryable_failure_is_retried_without_a_token(local_server: Any, client: Any) -> None:
    held = local_server.faults.hold(method="Publish", count=1)
    with make(client, SLOW) as pub:
        future = pub.publish(b"x")
        held.wait_arrived(1)[0].fail("UNAVAILABLE", "try again")
        message_id = result(future)  # the retry is not held
        c = pub.counters()
    assert (c.retried_attempts, c.hedges_sent, c.failed_attempts) == (1, 0, 1)
    assert c.wins_by_attempt == {0: 1}  # a retry of attempt 0 is still attempt 0
    assert c.tokens_available == pytest.approx(0.1)
    assert stored(local_server) == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == 2


def test_permanent_error_fails_the_batch_with_the_service_message(
    local_server: Any, client: Any
) -> None:
    held = local_server.faults.hold(method="Publish", count=1)
    with make(client, SLOW) as pub:
        future = pub.publish(b"x")
        held.wait_arrived(1)[0].fail("NOT_FOUND", "Resource not found (topic)")
        with pytest.raises(api_exceptions.NotFound, match=r"Resource not found \(topic\)"):
            result(future)
        c = pub.counters()
    assert (c.attempts, c.batches_failed, c.retried_attempts) == (1, 1, 0)
    assert local_server.messages(TOPIC) == []


def test_total_timeout_fails_the_batch(local_server: Any, client: Any) -> None:
    retry = RetryTimeouts(initial_rpc_timeout_ms=200, total_timeout_ms=300)
    held = local_server.faults.hold(method="Publish", count=100)  # no attempt is answered
    with make(client, FAST, retry=retry) as pub:
        future = pub.publish(b"x")
        with pytest.raises(api_exceptions.DeadlineExceeded) as info:
            result(future)
        c = pub.counters()
    # Each attempt's own RPC deadline is capped at the batch's, so the last one ends
    # exactly at the total timeout: whichever fires first, the error names the total.
    assert "publish did not complete within the total timeout of 300 ms" in str(info.value)
    assert (c.batches_failed, c.batches_succeeded) == (1, 0)
    assert c.wins_by_attempt == {}
    assert len(held.arrived()) >= 1
    assert local_server.messages(TOPIC) == []


def test_hedging_off_sends_one_attempt(local_server: Any, client: Any, wait_until: Wait) -> None:
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=2)
    # A hedging publisher beside it, also held, is the clock: once its hedge check
    # (sent after ours) has run, a hedge delay has passed for the publisher under test.
    clock_held = local_server.faults.hold(method="Publish", resource=OTHER, count=10)
    with make(client, None) as pub, make(client, FAST, topic=OTHER) as clock:
        future = pub.publish(b"x")
        (call,) = held.wait_arrived(1)
        clock_future = clock.publish(b"tick")
        wait_until(lambda: clock.counters().hedges_dropped == 1)
        assert len(held.arrived()) == 1
        assert pub.counters().attempts == 1
        call.release()
        message_id = result(future)
        clock_held.release_all()
        result(clock_future)
        c = pub.counters()
    assert c.tokens_available is None
    assert (c.attempts, c.hedges_sent, c.hedges_dropped) == (1, 0, 0)
    assert stored(local_server) == [(message_id, b"x")]


def test_batches_by_count_as_the_official_client_cuts_them(
    local_server: Any, client: Any
) -> None:
    """google-cloud-pubsub sends a batch when the next message would bring it to
    max_messages, so its batches hold max_messages - 1: the same requests here."""
    settings = BatchSettings(max_messages=3, max_latency=60.0)
    held = local_server.faults.hold(method="Publish", count=4)
    with make(client, None, batch_settings=settings) as pub:
        futures = [pub.publish(str(i).encode()) for i in range(7)]
        full = held.wait_arrived(3)  # three batches of two went at once
        assert local_server.counters.get("Publish") == 3
        pub.flush()  # the seventh message's batch is not full
        last = held.wait_arrived(4)[3]
        last.release()
        result(futures[6])
        assert [data for _, data in stored(local_server)] == [b"6"]
        for call in full:
            call.release()
        ids = [result(f) for f in futures]
        c = pub.counters()
    # Each future carries the ID the service gave its own message.
    by_id = dict(stored(local_server))
    assert [by_id[i] for i in ids] == [str(i).encode() for i in range(7)]
    assert len(set(ids)) == 7
    assert (c.attempts, c.batches_succeeded) == (4, 4)
    # The full batches' messages were stored two at a time, in publish order.
    data = [d for _, d in stored(local_server)][1:]
    assert sorted([data[:2], data[2:4], data[4:]]) == [[b"0", b"1"], [b"2", b"3"], [b"4", b"5"]]


def test_partial_batch_is_sent_after_max_latency(local_server: Any, client: Any) -> None:
    settings = BatchSettings(max_messages=100, max_latency=0.05)
    with make(client, None, batch_settings=settings) as pub:
        # No flush, no close: only the latency timer can send it.
        message_id = result(pub.publish(b"x"))
    assert stored(local_server) == [(message_id, b"x")]


def test_batches_by_bytes(local_server: Any, client: Any) -> None:
    settings = BatchSettings(max_messages=100, max_bytes=250, max_latency=10.0)
    held = local_server.faults.hold(method="Publish", count=2)
    with make(client, None, batch_settings=settings) as pub:
        futures = [pub.publish(bytes([65 + i]) * 100) for i in range(3)]
        (first,) = held.wait_arrived(1)  # the third message did not fit
        assert local_server.counters.get("Publish") == 1
        first.release()
        result(futures[0]), result(futures[1])
        assert not futures[2].done()
        assert [data for _, data in stored(local_server)] == [b"A" * 100, b"B" * 100]
        pub.flush()
        held.wait_arrived(2)[1].release()
        result(futures[2])
        c = pub.counters()
    assert (c.attempts, c.batches_succeeded) == (2, 2)
    assert len(local_server.messages(TOPIC)) == 3


def test_close_flushes_and_refuses_more(local_server: Any, client: Any) -> None:
    import threading

    settings = BatchSettings(max_messages=10, max_latency=60.0)
    held = local_server.faults.hold(method="Publish", count=1)
    pub = make(client, None, batch_settings=settings)
    future = pub.publish(b"x")
    assert local_server.counters.get("Publish") == 0
    closer = threading.Thread(target=pub.close)
    closer.start()
    (call,) = held.wait_arrived(1)  # close flushed the batch
    assert closer.is_alive()  # and waits for it
    call.release()
    closer.join(timeout=30)
    assert not closer.is_alive()
    assert future.done()
    assert stored(local_server) == [(future.result(), b"x")]
    with pytest.raises(RuntimeError, match="closed"):
        pub.publish(b"y")
    assert local_server.counters.get("Publish") == 1


def test_close_with_timeout_fails_what_is_left(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    held = local_server.faults.hold(method="Publish", count=1)
    pub = make(client, None)
    future = pub.publish(b"x")
    (call,) = held.wait_arrived(1)
    assert pub.close(timeout=0.05) is False
    with pytest.raises(RuntimeError, match="closed before"):
        future.result(timeout=1)
    assert pub.counters().cancelled_attempts == 1
    # The service may still complete the abandoned attempt: the message can land.
    call.release()
    wait_until(lambda: len(local_server.messages(TOPIC)) == 1)


@pytest.mark.parametrize(
    ("profile", "retry", "ordering", "match"),
    [
        (FAST, RetryTimeouts(), True, "message ordering"),
        (
            HedgingProfile(hedge_delay_ms=5_000),
            RetryTimeouts(5_000, 60_000),
            False,
            "hedgeDelay 5s must be shorter than initialRpcTimeout 5s",
        ),
        (
            HedgingProfile(hedge_delay_ms=2_000),
            RetryTimeouts(1_000, 2_000),
            False,
            "shorter than totalTimeout 2s",
        ),
        (HedgingProfile(hedge_delay_ms=50), RetryTimeouts(), False, "100ms to 10s"),
        (HedgingProfile(max_tokens=251), RetryTimeouts(), False, "1 to 250"),
        (HedgingProfile(refill_ratio=0.5), RetryTimeouts(), False, "0.001 to 0.2"),
    ],
)
def test_construction_rejects_bad_settings(
    client: Any,
    profile: HedgingProfile,
    retry: RetryTimeouts,
    ordering: bool,
    match: str,
) -> None:
    with pytest.raises(HedgingConfigError, match=match):
        HedgedPublisher(client, TOPIC, profile, retry, message_ordering=ordering)


def test_every_problem_is_reported_at_once(client: Any) -> None:
    profile = HedgingProfile(hedge_delay_ms=20_000, max_tokens=0, refill_ratio=0.0)
    with pytest.raises(HedgingConfigError) as info:
        HedgedPublisher.from_spec(client, TOPIC, profile, RetryTimeouts(), True)
    codes = sorted(p.code for p in info.value.problems)
    assert codes.count("hedging-range") == 3
    assert "hedging-ordering" in codes


def test_a_closed_client_fails_the_batch_without_retrying(local_server: Any) -> None:
    closed = publisher_client(local_server.address)
    closed.transport.close()
    with make(closed) as pub:
        future = pub.publish(b"x")
        # grpc hands back an already-failed call rather than raising.
        with pytest.raises(ValueError, match="Channel closed"):
            result(future)
        c = pub.counters()
    assert (c.failed_attempts, c.retried_attempts, c.batches_failed) == (1, 0, 1)
    assert local_server.counters.get("Publish") == 0


def test_a_failed_batch_counts_the_attempt_that_may_still_be_stored(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """Attempt 0 fails for good while its hedge is in flight: the future fails with
    attempt 0's error, and `duplicates` says that the hedge may still be stored (it is)."""
    with make(client, ONE_HEDGE) as pub:
        earn_tokens(pub.publish, EARN)
        held = local_server.faults.hold(method="Publish", count=2)
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        original.fail("PERMISSION_DENIED", "revoked")
        with pytest.raises(api_exceptions.PermissionDenied, match="revoked"):
            result(future)
        c = pub.counters()
    assert (c.batches_failed, c.cancelled_attempts, c.duplicates) == (1, 1, 1)
    hedge.release()  # the service had it before the client cancelled
    wait_until(lambda: len(local_server.messages(TOPIC)) == EARN + 1)
    assert stored(local_server)[EARN][1] == b"x"
