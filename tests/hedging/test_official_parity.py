"""Hedging as the official clients do it: one table per behaviour, each row naming
the client(s) and source it follows (docs/hedging.md, "Parity with the official
clients").

Every attempt is a real Publish through google-cloud-pubsub's transport to the local
server; the server's fault holds park attempts until the test answers them, so the
test decides which attempt wins and when. Assertions are on counters, attempt
numbers, RPC counts and error identity, never on elapsed time. A second topic of the
same client serves as a clock where "no retry happened" must be shown: its hedge
check runs on the same timer thread, so once it has run, every earlier timer has.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.api_core import retry as retries
from google.cloud.pubsub_v1 import types
from google.pubsub_v1 import PublisherClient as GapicPublisherClient
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport

from reconciler.backends.clients import insecure_channel
from reconciler.hedging import HedgedPublisher, HedgingSettings, PublisherClient
from reconciler.hedging.attempts import hedge_timeout
from reconciler.hedging.batching import BatchSettings
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from reconciler.hedging.tokens import TokenBucket
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

JAVA = "Java HedgingSettings (google-cloud-java PR #13735, #14338)"
NODE = "Node handwritten/pubsub/src/publisher/hedging.ts (google-cloud-node)"
GO = "Go pubsub/v2/hedging.go (google-cloud-go PR #20136)"
RUST = "Rust (google-cloud-rust PRs #6777, #6779, #6809)"
ALL = (JAVA, NODE, GO, RUST)
OURS = "reconcile (issue 25: ordered messages go unhedged instead of refusing)"

TOPIC = "projects/hedge-parity/topics/orders"
CLOCK = "projects/hedge-parity/topics/clock"
# Short backoffs, so that a retry would come long before the clock's hedge check.
QUICK_RETRY = retries.Retry(initial=0.01, maximum=0.05, multiplier=2.0, timeout=60.0)


def table(cases: list[Any], name: str = "name") -> pytest.MarkDecorator:
    """Parametrize a test over `cases`, each one's id naming the clients it follows."""
    ids = [f"{getattr(c, name)} [{'+'.join(s.split()[0] for s in c.follows)}]" for c in cases]
    return pytest.mark.parametrize("case", cases, ids=ids)


@pytest.fixture
def hedged(make_client: Callable[..., PublisherClient]) -> Callable[..., PublisherClient]:
    """A client hedging every 100 ms with the given bucket, topics created."""

    def build(max_tokens: int = 1, refill_ratio: float = 0.2) -> PublisherClient:
        client = make_client(
            hedging=HedgingSettings(0.1, max_tokens, refill_ratio),
            publisher_options=types.PublisherOptions(retry=QUICK_RETRY),
        )
        client.create_topic(name=TOPIC)
        client.create_topic(name=CLOCK)
        return client

    return build


def publish_to(client: PublisherClient, topic: str = TOPIC) -> Callable[[bytes], Future[str]]:
    return lambda data: client.publish(topic, data)


def error_of(future: Future[str]) -> tuple[str, str]:
    error = future.exception(timeout=30)
    assert error is not None, "the publish succeeded"
    return type(error).__name__, str(error)


def checks(client: PublisherClient, topic: str = TOPIC) -> int:
    """Hedge checks that found a token or found none."""
    c = client.counters(topic)
    return c.hedges_sent + c.hedges_dropped


def tick(client: PublisherClient, server: Any, wait_until: Wait) -> None:
    """Let at least one hedge delay pass on the client's timer thread: a batch on the
    clock topic (empty bucket) has its hedge check, which drops the hedge."""
    held = server.faults.hold(method="Publish", resource=CLOCK, count=1)
    dropped = client.counters(CLOCK).hedges_dropped
    future = client.publish(CLOCK, b"tick")
    held.wait_arrived(1)
    wait_until(lambda: client.counters(CLOCK).hedges_dropped == dropped + 1)
    held.release_all()
    future.result(timeout=30)


# -- 1. the token bucket starts empty, in thousandths -------------------------------


@dataclass(frozen=True)
class BucketCase:
    name: str
    follows: tuple[str, ...]
    max_tokens: int
    refill_ratio: float
    successes: int  # fast batches before the slow one
    tokens_before: float
    hedged: bool  # the slow batch's hedge check finds a token
    tokens_after: float  # once the slow batch succeeded (its success refills too)


BUCKET_CASES = [
    BucketCase("a new publisher has no token", ALL, 50, 0.2, 0, 0.0, False, 0.2),
    BucketCase("4 x 0.2 is 0.8 of a token", ALL, 50, 0.2, 4, 0.8, False, 1.0),
    BucketCase("5 x 0.2 is one whole token", ALL, 50, 0.2, 5, 1.0, True, 0.2),
    BucketCase("10 x 0.1 is exactly one (floats: 0.999...)", ALL, 50, 0.1, 10, 1.0, True, 0.1),
    BucketCase("9 x 0.1 is not", ALL, 50, 0.1, 9, 0.9, False, 1.0),
    BucketCase("refills stop at maxTokens", ALL, 1, 0.2, 15, 1.0, True, 0.2),
]


@table(BUCKET_CASES)
def test_the_bucket_starts_empty(
    case: BucketCase, hedged: Callable[..., PublisherClient], local_server: Any,
    wait_until: Wait,
) -> None:
    client = hedged(case.max_tokens, case.refill_ratio)
    earn_tokens(publish_to(client), case.successes)
    if case.successes:  # (no publisher for the topic before its first message)
        assert client.counters(TOPIC).tokens_available == pytest.approx(case.tokens_before)
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=1)
    future = client.publish(TOPIC, b"slow")
    (original,) = held.wait_arrived(1)
    wait_until(lambda: checks(client) == 1)  # its hedge check has run
    if case.hedged:
        future.result(timeout=30)  # the hedge is not held
        assert original.outcome is None
    else:
        original.release()
        future.result(timeout=30)
    c = client.counters(TOPIC)
    assert (c.hedges_sent, c.hedges_dropped) == (int(case.hedged), int(not case.hedged))
    winner = 1 if case.hedged else 0
    expected_wins = {0: case.successes + 1 - int(case.hedged)}
    expected_wins[winner] = expected_wins.get(winner, 0) + int(case.hedged)
    assert c.wins_by_attempt == {k: v for k, v in expected_wins.items() if v}
    assert c.tokens_available == pytest.approx(case.tokens_after)
    assert local_server.counters.get("Publish") == case.successes + 1 + int(case.hedged)
    held.release_all()


def test_the_bucket_holds_thousandths() -> None:
    """The same arithmetic without the network: [Java+Node+Go+Rust]."""
    bucket = TokenBucket(max_tokens=2, refill_ratio=0.1)
    assert not bucket.try_acquire()  # empty at the start
    for _ in range(10):
        bucket.refill()
    assert bucket.available == 1.0 and bucket.try_acquire() and not bucket.try_acquire()
    for _ in range(100):
        bucket.refill()
    assert bucket.available == 2.0  # capped at max tokens
    assert TokenBucket(1, 0.0015)._refill == 2  # a finer ratio: the nearest thousandth


# -- 2. hedges: never retried, min(time left, 10 s), dropped without a token ------------


@dataclass(frozen=True)
class HedgeFailure:
    code: str
    follows: tuple[str, ...] = ALL


HEDGE_FAILURES = [HedgeFailure("UNAVAILABLE"), HedgeFailure("INTERNAL"),
                  HedgeFailure("INVALID_ARGUMENT")]


@table(HEDGE_FAILURES, "code")
def test_a_failed_hedge_is_never_retried(
    case: HedgeFailure, hedged: Callable[..., PublisherClient], local_server: Any,
    wait_until: Wait,
) -> None:
    client = hedged()
    earn_tokens(publish_to(client), 5)  # one token
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=3)
    future = client.publish(TOPIC, b"x")
    original, hedge = held.wait_arrived(2)
    hedge.fail(case.code, "the hedge fails")
    wait_until(lambda: client.counters(TOPIC).hedges_failed == 1)
    tick(client, local_server, wait_until)  # a retry (<= 50 ms backoff) would be out
    c = client.counters(TOPIC)
    assert (c.attempts, c.retried_attempts, c.hedges_sent) == (5 + 2, 0, 1)
    assert not future.done()  # a failed hedge does not end the batch
    original.release()
    future.result(timeout=30)
    c = client.counters(TOPIC)
    assert c.wins_by_attempt == {0: 6}
    assert (c.hedges_failed, c.failed_attempts, c.batches_failed) == (1, 1, 0)
    assert len(held.arrived()) == 2


class Deadlines(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The timeout each Publish left the client with (a plain gRPC interceptor on
    the real channel; local lag probes, with a deadline already past, are skipped)."""

    def __init__(self) -> None:
        self.publish: list[float] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.method.endswith("/Publish") and details.timeout and details.timeout > 0:
            self.publish.append(details.timeout)
        return continuation(details, request)


@dataclass(frozen=True)
class TimeoutCase:
    name: str
    retry: RetryTimeouts
    attempt0: float  # attempt 0's timeout: the initial RPC timeout
    hedge_at_most: float
    hedge_at_least: float
    follows: tuple[str, ...] = ALL


TIMEOUT_CASES = [
    TimeoutCase("600 s left: a hedge gets 10 s", RetryTimeouts(5_000, 600_000), 5.0, 10.0, 10.0),
    # Sent at least a hedge delay (0.1 s) into the batch's 3 s.
    TimeoutCase("3 s total: a hedge gets the time left", RetryTimeouts(2_000, 3_000), 2.0, 2.9,
                0.0),
]


@table(TIMEOUT_CASES)
def test_a_hedge_runs_with_min_of_time_left_and_10s(
    case: TimeoutCase, local_server: Any, wait_until: Wait
) -> None:
    seen = Deadlines()
    channel = grpc.intercept_channel(insecure_channel(local_server.address), seen)
    client = GapicPublisherClient(transport=PublisherGrpcTransport(channel=channel))
    client.create_topic(request={"name": TOPIC})
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=1, refill_ratio=0.2)
    try:
        with HedgedPublisher(client, TOPIC, profile, case.retry,
                             batch_settings=BatchSettings(max_messages=1)) as pub:
            earn_tokens(pub.publish, 5)
            held = local_server.faults.hold(method="Publish", resource=TOPIC, count=2)
            future = pub.publish(b"x")
            original, hedge = held.wait_arrived(2)
            hedge.release()
            future.result(timeout=30)
            original.fail("UNAVAILABLE")
            assert pub.counters().wins_by_attempt == {0: 5, 1: 1}
    finally:
        client.transport.close()
    *earned, attempt0, hedge_timeout_s = seen.publish
    assert earned == [case.attempt0] * 5 and attempt0 == case.attempt0
    assert case.hedge_at_least <= hedge_timeout_s <= case.hedge_at_most
    assert hedge_timeout(600.0) == 10.0 and hedge_timeout(2.5) == 2.5


def test_a_hedge_without_a_token_is_dropped_not_requeued(
    hedged: Callable[..., PublisherClient], local_server: Any, wait_until: Wait
) -> None:
    """[Java+Node+Go+Rust] Batch A's hedge finds no token and is dropped. Then a token
    is earned, and batch B, sent after A's drop, checks a hedge delay later: a
    requeued A would have checked again before B (a hedge delay after its drop) and
    taken the token; B gets it."""
    client = hedged(max_tokens=1, refill_ratio=0.2)
    earn_tokens(publish_to(client), 4)  # 0.8
    hold_a = local_server.faults.hold(method="Publish", resource=TOPIC, count=1)
    a = client.publish(TOPIC, b"a")
    hold_a.wait_arrived(1)
    wait_until(lambda: client.counters(TOPIC).hedges_dropped == 1)
    client.publish(TOPIC, b"earns the token").result(timeout=30)  # 1.0
    hold_b = local_server.faults.hold(method="Publish", resource=TOPIC, count=2)
    b = client.publish(TOPIC, b"b")
    _, the_hedge = hold_b.wait_arrived(2)
    # The server may see the hedge before the client's thread has counted it.
    wait_until(lambda: client.counters(TOPIC).hedges_sent == 1)
    the_hedge.release()
    wait_until(lambda: a.done() or b.done())
    assert b.done() and not a.done()  # the one hedge was B's
    hold_a.release_all()
    hold_b.release_all()
    a.result(timeout=30)
    c = client.counters(TOPIC)
    assert c.wins_by_attempt == {0: 6, 1: 1}
    assert c.hedges_sent == 1


# -- 3. the batch fails with attempt 0's error; a failed hedge is discarded --------------


@dataclass(frozen=True)
class Step:
    attempt: int  # index in arrival order: 0 the original, 1 its hedge, 2 a retry of 0
    code: str | None = None  # None: release it (it succeeds)
    message: str = ""


@dataclass(frozen=True)
class EndCase:
    name: str
    follows: tuple[str, ...]
    steps: tuple[Step, ...]
    error: tuple[str, str] | None  # the future's (type, message), or None: success
    wins: dict[int, int]  # beyond the 5 earning batches, won by attempt 0
    retried: int = 0


END_CASES = [
    EndCase(
        "attempt 0 fails for good while its hedge runs: its error, at once",
        ALL, (Step(0, "PERMISSION_DENIED", "zero"),), ("PermissionDenied", "403 zero"), {},
    ),
    EndCase(
        "the hedge fails first, then attempt 0: attempt 0's error",
        ALL,
        (Step(1, "INVALID_ARGUMENT", "one"), Step(0, "PERMISSION_DENIED", "zero")),
        ("PermissionDenied", "403 zero"), {},
    ),
    EndCase(
        "a failed hedge is discarded: attempt 0 still completes the batch",
        ALL, (Step(1, "PERMISSION_DENIED", "one"), Step(0)), None, {0: 1},
    ),
    EndCase(
        "attempt 0 is retried by its own settings while the hedge runs",
        ALL, (Step(0, "UNAVAILABLE", "retry me"), Step(2)), None, {0: 1}, retried=1,
    ),
    EndCase("the hedge wins while attempt 0 waits", ALL, (Step(1),), None, {1: 1}),
]


@table(END_CASES)
def test_how_a_batch_ends(
    case: EndCase, hedged: Callable[..., PublisherClient], local_server: Any,
    wait_until: Wait,
) -> None:
    client = hedged()
    earn_tokens(publish_to(client), 5)
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=3)
    future = client.publish(TOPIC, b"x")
    held.wait_arrived(2)
    for step in case.steps:
        call = held.wait_arrived(step.attempt + 1)[step.attempt]
        if step.code is None:
            call.release()
            continue
        failed = client.counters(TOPIC).failed_attempts
        call.fail(step.code, step.message)
        wait_until(lambda f=failed: future.done()
                   or client.counters(TOPIC).failed_attempts == f + 1)
    if case.error is None:
        future.result(timeout=30)
    else:
        assert error_of(future) == case.error
    c = client.counters(TOPIC)
    wins = dict(case.wins)
    wins[0] = wins.get(0, 0) + 5
    assert c.wins_by_attempt == wins
    assert c.retried_attempts == case.retried
    assert c.batches_failed == int(case.error is not None)
    held.release_all()


# -- 4. what construction refuses --------------------------------------------------------


@dataclass(frozen=True)
class BuildCase:
    name: str
    follows: tuple[str, ...]
    kwargs: dict[str, Any]
    refused: str | None  # a part of the error, or None: accepted


ORDERED = types.PublisherOptions(enable_message_ordering=True)
BUILD_CASES = [
    BuildCase("hedge delay = initial RPC timeout (5 s, Java's default)", ALL,
              {"hedging": HedgingSettings(hedge_delay=5.0)},
              "hedgeDelay 5s must be shorter than initialRpcTimeout 5s"),
    BuildCase("hedge delay just below it", ALL, {"hedging": HedgingSettings(4.999)}, None),
    BuildCase("hedge delay = timeout=2.0", ALL,
              {"hedging": HedgingSettings(2.0),
               "publisher_options": types.PublisherOptions(timeout=2.0)},
              "must be shorter than initialRpcTimeout 2s"),
    BuildCase("hedge delay below timeout=2.0", ALL,
              {"hedging": HedgingSettings(1.999),
               "publisher_options": types.PublisherOptions(timeout=2.0)}, None),
    BuildCase("hedge delay = the retry deadline (total timeout)", (NODE,),
              {"hedging": HedgingSettings(1.0),
               "publisher_options": types.PublisherOptions(
                   retry=retries.Retry(timeout=1.0), timeout=3.0)},
              "must be shorter than totalTimeout 1s"),
    BuildCase("explicit hedging with message ordering", ALL,
              {"hedging": HedgingSettings(), "publisher_options": ORDERED},
              "cannot be combined with message ordering"),
    BuildCase("the topics' profiles with message ordering", (OURS,),
              {"publisher_options": ORDERED}, None),
    BuildCase("hedging=False with message ordering", (OURS,),
              {"hedging": False, "publisher_options": ORDERED}, None),
]


@table(BUILD_CASES)
def test_what_construction_refuses(
    case: BuildCase, make_client: Callable[..., PublisherClient]
) -> None:
    if case.refused is None:
        make_client(**case.kwargs)
        return
    with pytest.raises(ValueError, match=case.refused):
        make_client(**case.kwargs)
