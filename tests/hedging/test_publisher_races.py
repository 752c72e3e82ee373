"""The hedged publisher's attempt races, through the real client and real gRPC.

Every attempt is a real Publish RPC to the local server. The server's fault holds
park attempts until the test answers them (`release()` runs the real handler, which
stores the message; `fail()` answers with a status), so the test, not timing,
decides which attempt wins. Assertions are on the publisher's counters, the server's
RPC counters and stored messages, and the futures' results, never on elapsed time.

One ordering is assumed where two attempts of a batch are held: the original, sent a
whole hedge delay (>= 100 ms) before its hedge on the same connection, reaches the
server first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from reconciler.backends.clients import publisher_client
from reconciler.hedging import HedgedPublisher
from reconciler.hedging.batching import Backoff, BatchSettings
from reconciler.hedging.profile import HedgingConfigError, HedgingProfile, RetryTimeouts
from reconciler.hedging.tokens import TokenBucket

TOPIC = "projects/hedge-races/topics/orders"
OTHER = "projects/hedge-races/topics/clock"
ONE = BatchSettings(max_messages=1)
FAST = HedgingProfile(hedge_delay_ms=100, max_tokens=50, refill_ratio=0.1)
# One token: exactly one hedge per batch until a success refills the bucket.
ONE_HEDGE = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.1)
# For tests about something other than hedging: a hedge would need a 10 s stall.
SLOW = HedgingProfile(hedge_delay_ms=10_000, max_tokens=50, refill_ratio=0.1)
SLOW_RETRY = RetryTimeouts(initial_rpc_timeout_ms=20_000, total_timeout_ms=60_000)
NO_JITTER = Backoff(initial=0.01, multiplier=2.0, maximum=0.05, jitter=False)

Wait = Callable[..., None]


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
    assert (c.attempts, c.hedged_attempts, c.cancelled_attempts) == (1, 0, 0)
    assert c.wins_by_attempt == {1: 1}
    assert c.tokens_available == 50  # started full, refill capped
    (message,) = local_server.messages(TOPIC)
    assert (message.message_id, message.data) == (message_id, b"hello")
    assert dict(message.attributes) == {"k": "v"}
    assert local_server.counters.get("Publish") == 1


def test_slow_attempt_is_hedged_and_the_hedge_wins(local_server: Any, client: Any) -> None:
    held = local_server.faults.hold(method="Publish", count=1)  # the original only
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"x")
        (original,) = held.wait_arrived(1)
        message_id = result(future)  # the hedge went through while the original waits
        c = pub.counters()
    assert original.outcome is None  # still held: the hedge won without it
    assert c.hedged_attempts == 1
    assert c.wins_by_attempt == {2: 1}
    assert c.cancelled_attempts == 1
    assert c.tokens_available == pytest.approx(0.1)  # one spent, one refill
    assert stored(local_server) == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == 2


def test_original_is_kept_and_can_still_win(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    held = local_server.faults.hold(method="Publish", count=2)
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        # The publisher counts an attempt just after sending it: poll, don't race.
        wait_until(lambda: pub.counters().hedged_attempts == 1)
        assert not future.done()
        original.release()
        message_id = result(future)
        c = pub.counters()
    assert c.wins_by_attempt == {1: 1}
    assert (c.hedged_attempts, c.cancelled_attempts) == (1, 1)
    hedge.fail("UNAVAILABLE", "too late")  # the cancelled hedge never reaches the handler
    assert stored(local_server) == [(message_id, b"x")]


def test_hedges_repeat_every_delay_while_tokens_remain(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=2, refill_ratio=0.1)
    held = local_server.faults.hold(method="Publish", count=3)
    with make(client, profile) as pub:
        future = pub.publish(b"x")
        calls = held.wait_arrived(3)
        # Out of tokens: the next hedge delays pass without another attempt.
        wait_until(lambda: pub.counters().throttled_hedges >= 2)
        assert local_server.counters.get("Publish") == 3
        calls[2].release()
        message_id = result(future)
        c = pub.counters()
    assert c.hedged_attempts == 2
    assert c.wins_by_attempt == {3: 1}
    assert c.cancelled_attempts == 2
    assert c.tokens_available == pytest.approx(0.1)
    held.fail_all("UNAVAILABLE")
    assert stored(local_server) == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == 3


def test_tokens_throttle_hedging_to_the_refill_ratio(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """Sustained slowness: every batch is slow, but only 1 + 0.2 per success get hedged."""
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
    hedged_batches = []
    with make(client, profile) as pub:
        for i in range(11):
            before = pub.counters()
            held = local_server.faults.hold(method="Publish", count=2)
            future = pub.publish(f"m{i}".encode())
            (original,) = held.wait_arrived(1)[:1]
            # One hedge delay later the batch is either hedged or throttled.
            wait_until(
                lambda b=before: (
                    pub.counters().attempts == b.attempts + 2
                    or pub.counters().throttled_hedges > b.throttled_hedges
                )
            )
            if pub.counters().attempts == before.attempts + 2:
                hedged_batches.append(i)
                held.wait_arrived(2)  # hold the hedge too, so the original wins
            original.release()
            result(future)
            held.fail_all("UNAVAILABLE")  # the cancelled hedge, if any; ends the hold
        c = pub.counters()
    # Full bucket (1 token) hedges batch 0; then five successes earn the next token.
    assert hedged_batches == [0, 5, 10]
    assert c.hedged_attempts == 3
    assert c.wins_by_attempt == {1: 11}
    assert c.tokens_available == pytest.approx(0.2)
    assert local_server.counters.get("Publish") == 14
    assert [data for _, data in stored(local_server)] == [f"m{i}".encode() for i in range(11)]


def test_token_bucket_is_exact() -> None:
    bucket = TokenBucket(max_tokens=2, refill_ppm=100_000)
    assert bucket.try_acquire() and bucket.try_acquire()
    assert not bucket.try_acquire()
    for _ in range(10):
        bucket.refill()
    assert bucket.available == 1.0
    assert bucket.try_acquire()
    for _ in range(100):
        bucket.refill()
    assert bucket.available == 2.0  # capped at max tokens


def test_late_success_of_a_losing_attempt_is_a_duplicate(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """Cancelling the loser is best effort: the service still completes it and keeps
    the batch twice, under different IDs."""
    held = local_server.faults.hold(method="Publish", count=1)
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"payload", source="test")
        (original,) = held.wait_arrived(1)
        message_id = result(future)
        original.release()  # the service answers the losing original after all
        wait_until(lambda: len(local_server.messages(TOPIC)) == 2)
        c = pub.counters()
    (first_id, first), (second_id, second) = stored(local_server)
    assert (first, second) == (b"payload", b"payload")
    assert first_id == message_id  # the hedge's copy, stored first
    assert second_id != message_id
    assert c.wins_by_attempt == {2: 1}
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
    assert (c.retried_attempts, c.hedged_attempts, c.failed_attempts) == (1, 0, 1)
    assert c.wins_by_attempt == {2: 1}
    assert c.tokens_available == 50
    assert stored(local_server) == [(message_id, b"x")]
    assert local_server.counters.get("Publish") == 2


def test_failed_hedge_waits_for_the_original_instead_of_retrying(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    """As Java: a retryable failure while another attempt runs starts no retry."""
    held = local_server.faults.hold(method="Publish", count=3)
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        hedge.fail("INTERNAL", "blip")
        wait_until(lambda: pub.counters().failed_attempts == 1)
        # A clock: a second batch's hedge is throttled (one token, spent) only after
        # a hedge delay has passed; the first batch's retry would have gone by then.
        other = pub.publish(b"clock")
        held.wait_arrived(3)
        wait_until(lambda: pub.counters().throttled_hedges >= 2)
        assert pub.counters().retried_attempts == 0
        assert original.outcome is None and not future.done()
        original.release()
        message_id = result(future)
        held.release_all()
        result(other)
        c = pub.counters()
    assert c.wins_by_attempt == {1: 2}
    assert (c.hedged_attempts, c.retried_attempts, c.failed_attempts) == (1, 0, 1)
    assert local_server.counters.get("Publish") == 3
    assert sorted(d for _, d in stored(local_server)) == [b"clock", b"x"]
    assert (message_id, b"x") in stored(local_server)


def test_retry_follows_once_every_attempt_has_failed(
    local_server: Any, client: Any, wait_until: Wait
) -> None:
    held = local_server.faults.hold(method="Publish", count=2)
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        hedge.fail("UNAVAILABLE", "blip")
        wait_until(lambda: pub.counters().failed_attempts == 1)
        assert pub.counters().retried_attempts == 0
        original.fail("CANCELLED", "the service cancelled it")  # retryable from the service
        message_id = result(future)  # the retry is not held
        c = pub.counters()
    assert (c.hedged_attempts, c.retried_attempts, c.failed_attempts) == (1, 1, 2)
    assert c.wins_by_attempt == {3: 1}
    assert stored(local_server) == [(message_id, b"x")]


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
    # A hedging publisher beside it, also held, is the clock: once it has hedged three
    # times, three hedge delays have passed for the publisher under test too.
    clock_held = local_server.faults.hold(method="Publish", resource=OTHER, count=10)
    with make(client, None) as pub, make(client, FAST, topic=OTHER) as clock:
        future = pub.publish(b"x")
        (call,) = held.wait_arrived(1)
        clock_future = clock.publish(b"tick")
        wait_until(lambda: clock.counters().hedged_attempts >= 3)
        assert len(held.arrived()) == 1
        assert pub.counters().attempts == 1
        call.release()
        message_id = result(future)
        clock_held.release_all()
        result(clock_future)
        c = pub.counters()
    assert c.tokens_available is None
    assert (c.attempts, c.hedged_attempts, c.throttled_hedges) == (1, 0, 0)
    assert stored(local_server) == [(message_id, b"x")]


def test_batches_by_count(local_server: Any, client: Any) -> None:
    settings = BatchSettings(max_messages=3, max_latency=60.0)
    held = local_server.faults.hold(method="Publish", count=3)
    with make(client, None, batch_settings=settings) as pub:
        futures = [pub.publish(str(i).encode()) for i in range(7)]
        full = held.wait_arrived(2)  # two full batches went at once
        assert local_server.counters.get("Publish") == 2
        pub.flush()  # the seventh message's batch is not full
        last = held.wait_arrived(3)[2]
        last.release()
        result(futures[6])
        assert [data for _, data in stored(local_server)] == [b"6"]
        full[0].release()
        full[1].release()
        ids = [result(f) for f in futures]
        c = pub.counters()
    # Each future carries the ID the service gave its own message.
    by_id = dict(stored(local_server))
    assert [by_id[i] for i in ids] == [str(i).encode() for i in range(7)]
    assert len(set(ids)) == 7
    assert (c.attempts, c.batches_succeeded) == (3, 3)
    # The full batches' messages were stored three at a time, in publish order.
    data = [d for _, d in stored(local_server)][1:]
    assert sorted([data[:3], data[3:]]) == [[b"0", b"1", b"2"], [b"3", b"4", b"5"]]


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
    """The hedge fails for good while the original is in flight: the future fails,
    and `duplicates` says that the original may still be stored (it is)."""
    held = local_server.faults.hold(method="Publish", count=2)
    with make(client, ONE_HEDGE) as pub:
        future = pub.publish(b"x")
        original, hedge = held.wait_arrived(2)
        hedge.fail("PERMISSION_DENIED", "revoked")
        with pytest.raises(api_exceptions.PermissionDenied, match="revoked"):
            result(future)
        c = pub.counters()
    assert (c.batches_failed, c.cancelled_attempts, c.duplicates) == (1, 1, 1)
    original.release()  # the service had it before the client cancelled
    wait_until(lambda: len(local_server.messages(TOPIC)) == 1)
    assert stored(local_server)[0][1] == b"x"
