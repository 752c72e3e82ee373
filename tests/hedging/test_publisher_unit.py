"""The hedged publisher's attempt logic, against a Publish stub the test drives.

Timing never decides an assertion: the test completes or fails each attempt itself
and asserts on counters and on which attempt won.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as api_exceptions

from reconciler.hedging import HedgedPublisher
from reconciler.hedging.batching import Backoff, BatchSettings
from reconciler.hedging.profile import HedgingConfigError, HedgingProfile, RetryTimeouts
from reconciler.hedging.tokens import TokenBucket

TOPIC = "projects/p/topics/t"
ONE = BatchSettings(max_messages=1)
FAST = HedgingProfile(hedge_delay_ms=100, max_tokens=50, refill_ratio=0.1)
NO_JITTER = Backoff(initial=0.01, multiplier=2.0, maximum=0.05, jitter=False)

Wait = Callable[..., None]


def make(client: Any, profile: HedgingProfile | None = FAST, **kw: Any) -> HedgedPublisher:
    kw.setdefault("batch_settings", ONE)
    kw.setdefault("backoff", NO_JITTER)
    return HedgedPublisher(client, TOPIC, profile, **kw)


def test_fast_response_sends_no_hedge(fake_client: Any, fake_rpc: Any) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"hello", k="v")
        (call,) = fake_rpc.wait_calls(1)
        call.succeed()
        assert future.result(timeout=5) == "id-0"
        c = pub.counters()
    assert (c.attempts, c.hedged_attempts, c.cancelled_attempts) == (1, 0, 0)
    assert c.wins_by_attempt == {1: 1}
    assert c.tokens_available == 50  # started full, refill capped
    assert call.request.topic == TOPIC
    assert call.request.messages[0].attributes["k"] == "v"
    assert fake_rpc.metadata[0] == (("x-goog-request-params", "topic=projects%2Fp%2Ftopics%2Ft"),)
    assert call.timeout == pytest.approx(5.0, abs=0.5)  # initial RPC timeout


def test_slow_attempt_is_hedged_and_the_hedge_wins(
    fake_client: Any, fake_rpc: Any, wait_until: Wait
) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        first, second = fake_rpc.wait_calls(2)[:2]
        assert pub.counters().tokens_available == 49
        assert second.request is first.request  # same batch
        second.succeed("hedge")
        assert future.result(timeout=5) == "hedge-0"
        assert first.cancelled()
        c = pub.counters()
    assert c.hedged_attempts == 1
    assert c.wins_by_attempt == {2: 1}
    assert c.cancelled_attempts == 1
    assert c.tokens_available == pytest.approx(49.1)


def test_original_is_kept_and_can_still_win(fake_client: Any, fake_rpc: Any) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        first, second = fake_rpc.wait_calls(2)[:2]
        first.succeed("orig")
        assert future.result(timeout=5) == "orig-0"
        assert second.cancelled()
        c = pub.counters()
    assert c.wins_by_attempt == {1: 1}
    assert c.hedged_attempts == 1


def test_hedges_repeat_every_delay_while_tokens_remain(
    fake_client: Any, fake_rpc: Any, wait_until: Wait
) -> None:
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=2, refill_ratio=0.1)
    with make(fake_client, profile) as pub:
        future = pub.publish(b"x")
        calls = fake_rpc.wait_calls(3)
        # Out of tokens: the next hedge delay passes without another attempt.
        wait_until(lambda: pub.counters().throttled_hedges >= 2)
        assert len(fake_rpc.calls) == 3
        calls[2].succeed()
        assert future.result(timeout=5) == "id-0"
        c = pub.counters()
    assert c.hedged_attempts == 2
    assert c.wins_by_attempt == {3: 1}
    assert c.cancelled_attempts == 2
    assert c.tokens_available == pytest.approx(0.1)


def test_tokens_throttle_hedging_to_the_refill_ratio(
    fake_client: Any, fake_rpc: Any, wait_until: Wait
) -> None:
    """Sustained slowness: every batch is slow, but only 1 + 0.2 per success get hedged."""
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
    hedged_batches = []
    with make(fake_client, profile) as pub:
        for i in range(11):
            before = pub.counters()
            n = len(fake_rpc.calls)
            future = pub.publish(b"x")
            wait_until(
                lambda n=n, t=before.throttled_hedges: (
                    len(fake_rpc.calls) == n + 2 or pub.counters().throttled_hedges > t
                )
            )
            if len(fake_rpc.calls) == n + 2:
                hedged_batches.append(i)
            fake_rpc.calls[n].succeed()
            future.result(timeout=5)
        c = pub.counters()
    # Full bucket (1 token) hedges batch 0; then five successes earn the next token.
    assert hedged_batches == [0, 5, 10]
    assert c.hedged_attempts == 3
    assert c.wins_by_attempt == {1: 11}


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


def test_late_success_of_a_losing_attempt_is_a_duplicate(fake_client: Any, fake_rpc: Any) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        first, second = fake_rpc.wait_calls(2)[:2]
        first.cancellable = False  # its response is already on the wire
        second.succeed("hedge")
        assert future.result(timeout=5) == "hedge-0"
        assert first.cancel_requested
        first.succeed("late")
        c = pub.counters()
    assert c.duplicates == 1
    assert c.cancelled_attempts == 0
    assert c.wins_by_attempt == {2: 1}


def test_retryable_failure_is_retried_without_a_token(fake_client: Any, fake_rpc: Any) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        fake_rpc.wait_calls(1)[0].fail(grpc.StatusCode.UNAVAILABLE, "try again")
        retry = fake_rpc.wait_calls(2)[1]
        retry.succeed("retry")
        assert future.result(timeout=5) == "retry-0"
        c = pub.counters()
    assert (c.retried_attempts, c.hedged_attempts, c.failed_attempts) == (1, 0, 1)
    assert c.wins_by_attempt == {2: 1}
    assert c.tokens_available == 50


def test_failed_hedge_is_retried_while_the_original_stays_in_flight(
    fake_client: Any, fake_rpc: Any
) -> None:
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        first, hedge = fake_rpc.wait_calls(2)[:2]
        hedge.fail(grpc.StatusCode.INTERNAL, "blip")
        third = fake_rpc.wait_calls(3)[2]
        assert not first.done()
        first.succeed("orig")
        assert future.result(timeout=5) == "orig-0"
        assert third.cancelled()
        c = pub.counters()
    assert c.wins_by_attempt == {1: 1}
    assert c.failed_attempts == 1


def test_permanent_error_fails_the_batch_with_the_service_message(
    fake_client: Any, fake_rpc: Any
) -> None:
    with make(fake_client) as pub:
        futures = [pub.publish(b"x")]
        fake_rpc.wait_calls(1)[0].fail(grpc.StatusCode.NOT_FOUND, "Resource not found (topic)")
        with pytest.raises(api_exceptions.NotFound, match=r"Resource not found \(topic\)"):
            futures[0].result(timeout=5)
        c = pub.counters()
    assert (c.attempts, c.batches_failed, c.retried_attempts) == (1, 1, 0)


def test_total_timeout_fails_the_batch(fake_client: Any, fake_rpc: Any) -> None:
    retry = RetryTimeouts(initial_rpc_timeout_ms=200, total_timeout_ms=300)
    with make(fake_client, FAST, retry=retry) as pub:
        future = pub.publish(b"x")
        with pytest.raises(api_exceptions.DeadlineExceeded, match="total timeout of 300 ms"):
            future.result(timeout=10)
        c = pub.counters()
    assert c.batches_failed == 1
    assert all(call.timeout <= 0.2 + 1e-9 for call in fake_rpc.calls)


def test_hedging_off_sends_one_attempt(fake_client: Any, fake_rpc: Any, wait_until: Wait) -> None:
    with make(fake_client, None) as pub:
        future = pub.publish(b"x")
        (call,) = fake_rpc.wait_calls(1)
        # Three hedge delays' worth of slowness: still one attempt.
        with pytest.raises(TimeoutError):
            future.result(timeout=0.35)
        assert len(fake_rpc.calls) == 1
        call.succeed()
        future.result(timeout=5)
        c = pub.counters()
    assert c.tokens_available is None
    assert (c.attempts, c.hedged_attempts) == (1, 0)


def test_batches_by_count(fake_client: Any, fake_rpc: Any) -> None:
    settings = BatchSettings(max_messages=3, max_latency=60.0)
    with make(fake_client, None, batch_settings=settings) as pub:
        futures = [pub.publish(str(i).encode()) for i in range(7)]
        calls = fake_rpc.wait_calls(2)
        pub.flush()  # the seventh message's batch is not full
        calls = fake_rpc.wait_calls(3)
        sizes = [len(c.request.messages) for c in calls]
        for call in calls:
            call.succeed()
        ids = [f.result(timeout=5) for f in futures]
    assert sizes == [3, 3, 1]
    assert ids == ["id-0", "id-1", "id-2", "id-0", "id-1", "id-2", "id-0"]


def test_partial_batch_is_sent_after_max_latency(fake_client: Any, fake_rpc: Any) -> None:
    settings = BatchSettings(max_messages=100, max_latency=0.05)
    with make(fake_client, None, batch_settings=settings) as pub:
        future = pub.publish(b"x")
        (call,) = fake_rpc.wait_calls(1)  # no flush, no close: the latency timer sent it
        call.succeed()
        assert future.result(timeout=5) == "id-0"


def test_batches_by_bytes(fake_client: Any, fake_rpc: Any) -> None:
    settings = BatchSettings(max_messages=100, max_bytes=250, max_latency=10.0)
    with make(fake_client, None, batch_settings=settings) as pub:
        futures = [pub.publish(b"x" * 100) for _ in range(3)]
        calls = fake_rpc.wait_calls(1)
        assert [len(c.request.messages) for c in calls] == [2]
        pub.flush()
        calls = fake_rpc.wait_calls(2)
        for call in calls:
            call.succeed()
        for f in futures:
            f.result(timeout=5)


def test_close_flushes_and_refuses_more(fake_client: Any, fake_rpc: Any) -> None:
    settings = BatchSettings(max_messages=10, max_latency=60.0)
    pub = make(fake_client, None, batch_settings=settings)
    future = pub.publish(b"x")
    assert not fake_rpc.calls
    import threading

    closer = threading.Thread(target=pub.close)
    closer.start()
    fake_rpc.wait_calls(1)[0].succeed()
    closer.join(timeout=10)
    assert not closer.is_alive()
    assert future.result(timeout=1) == "id-0"
    with pytest.raises(RuntimeError, match="closed"):
        pub.publish(b"y")


def test_close_with_timeout_fails_what_is_left(fake_client: Any, fake_rpc: Any) -> None:
    pub = make(fake_client, None)
    future = pub.publish(b"x")
    assert pub.close(timeout=0.05) is False
    with pytest.raises(RuntimeError, match="closed before"):
        future.result(timeout=1)


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
    fake_client: Any,
    profile: HedgingProfile,
    retry: RetryTimeouts,
    ordering: bool,
    match: str,
) -> None:
    with pytest.raises(HedgingConfigError, match=match):
        HedgedPublisher(fake_client, TOPIC, profile, retry, message_ordering=ordering)


def test_every_problem_is_reported_at_once(fake_client: Any) -> None:
    profile = HedgingProfile(hedge_delay_ms=20_000, max_tokens=0, refill_ratio=0.0)
    with pytest.raises(HedgingConfigError) as info:
        HedgedPublisher.from_spec(fake_client, TOPIC, profile, RetryTimeouts(), True)
    codes = sorted(p.code for p in info.value.problems)
    assert codes.count("hedging-range") == 3
    assert "hedging-ordering" in codes


def test_a_send_that_raises_fails_the_batch(fake_client: Any, fake_rpc: Any) -> None:
    def closed(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("Cannot invoke RPC on closed channel!")

    fake_rpc.future = closed
    with make(fake_client) as pub:
        future = pub.publish(b"x")
        with pytest.raises(ValueError, match="closed channel"):
            future.result(timeout=5)
        c = pub.counters()
    assert (c.attempts, c.batches_failed) == (0, 1)
