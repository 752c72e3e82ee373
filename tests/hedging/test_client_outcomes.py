"""`PublisherClient`: construction rules, profiles from topic labels, and honest
outcomes when closing (through real gRPC against the local server)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud.pubsub_v1 import types

from reconciler.hedging import (
    HedgingSettings,
    PublishNotSent,
    PublishOutcomeUnknown,
)
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

TOPIC = "projects/outcomes/topics/orders"
FAST = HedgingSettings(hedge_delay=0.1, max_tokens=1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hedging": HedgingSettings}, "hedging must be left out"),
        ({"hedging": True}, "False \\(no hedging\\) or a HedgingSettings, not True"),
        ({"hedging": "labels"}, "not 'labels'"),
        (
            {
                "hedging": HedgingSettings(),
                "publisher_options": types.PublisherOptions(enable_message_ordering=True),
            },
            "cannot be combined with message ordering",
        ),
        ({"hedging": HedgingSettings(hedge_delay=8.0)}, "shorter than initialRpcTimeout 5s"),
    ],
)
def test_construction_refuses_bad_combinations(
    make_client: Callable[..., Any], kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        make_client(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hedge_delay": 0.05}, "hedgeDelay 50ms is outside the allowed range 100ms to 10s"),
        ({"hedge_delay": 11.0}, "outside the allowed range 100ms to 10s"),
        ({"max_tokens": 0}, "maxTokens 0 is outside the allowed range 1 to 250"),
        ({"max_tokens": 251}, "1 to 250"),
        ({"refill_ratio": 0.0005}, "0.001 to 0.2"),
        ({"refill_ratio": 0.3}, "refillRatio 0.3 is outside the allowed range 0.001 to 0.2"),
    ],
)
def test_settings_out_of_range_raise_value_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        HedgingSettings(**kwargs)


def test_each_topic_reads_its_profile_from_labels(
    make_client: Callable[..., Any], local_server: Any
) -> None:
    client = make_client()  # no hedging argument: each topic's labels decide
    labelled, plain = TOPIC, "projects/outcomes/topics/plain"
    profile = HedgingProfile(hedge_delay_ms=100, max_tokens=7, refill_ratio=0.2, name="fast")
    labels = hedging_labels.encode(profile, RetryTimeouts(3_000, 30_000))
    client.create_topic(request={"name": labelled, "labels": labels})
    client.create_topic(name=plain)
    earn_tokens(lambda data: client.publish(labelled, data), 5)  # one token
    held = local_server.faults.hold(method="Publish", resource=labelled, count=1)
    hedged = client.publish(labelled, b"x")
    held.wait_arrived(1)
    hedged.result(timeout=30)  # the hedge went through
    client.publish(plain, b"y").result(timeout=30)
    assert client.counters(labelled).hedges_sent == 1
    assert client.counters(labelled).tokens_available == pytest.approx(0.2)
    assert client.counters(plain).tokens_available is None  # no labels: hedging off
    assert client.counters().attempts == 5 + 2 + 1
    assert client.counters().profile_lookups == 2  # one GetTopic per topic
    assert local_server.counters.get("GetTopic") == 2
    held.release_all()
    # A topic that does not exist: the publish fails as the official client's would.
    with pytest.raises(api_exceptions.NotFound):
        client.publish("projects/outcomes/topics/missing", b"z").result(timeout=30)


def test_close_timeout_says_sent_outcome_unknown(
    make_client: Callable[..., Any], local_server: Any, wait_until: Wait
) -> None:
    client = make_client(hedging=FAST)
    client.create_topic(name=TOPIC)
    held = local_server.faults.hold(method="Publish", count=1)
    future = client.publish(TOPIC, b"x")
    held.wait_arrived(1)
    assert client.close(timeout=0.05) is False
    with pytest.raises(PublishOutcomeUnknown, match="may have stored it"):
        future.result(timeout=30)
    # It was right to say so: the attempt reaches the service and is stored.
    held.release_all()
    wait_until(lambda: len(local_server.messages(TOPIC)) == 1)


def test_close_wakes_a_blocked_publish_with_never_sent(
    make_client: Callable[..., Any], local_server: Any, wait_until: Wait
) -> None:
    limits = types.PublishFlowControl(
        message_limit=1, limit_exceeded_behavior=types.LimitExceededBehavior.BLOCK
    )
    client = make_client(publisher_options=types.PublisherOptions(flow_control=limits))
    client.create_topic(name=TOPIC)
    held = local_server.faults.hold(method="Publish", count=1)
    first = client.publish(TOPIC, b"1")
    held.wait_arrived(1)
    blocked: list[Any] = []
    publisher = threading.Thread(target=lambda: blocked.append(client.publish(TOPIC, b"2")))
    publisher.start()
    wait_until(lambda: client._flow.waiting == 1)  # blocked in flow control
    assert client.close(timeout=0.05) is False
    publisher.join(timeout=30)
    (second,) = blocked
    with pytest.raises(PublishNotSent, match="safe"):
        second.result(timeout=30)
    with pytest.raises(PublishOutcomeUnknown):
        first.result(timeout=30)
    held.release_all()
    assert local_server.counters.get("Publish") == 1  # the second was never sent


def test_close_from_a_done_callback_returns(
    make_client: Callable[..., Any], local_server: Any
) -> None:
    client = make_client(hedging=FAST)
    client.create_topic(name=TOPIC)
    held = local_server.faults.hold(method="Publish", count=1)
    closed = threading.Event()
    results: list[bool] = []

    def on_done(_: Any) -> None:
        results.append(client.close())  # on the thread that completes publishes
        closed.set()

    slow = client.publish(TOPIC, b"slow")
    (call,) = held.wait_arrived(1)
    client.publish(TOPIC, b"fast").add_done_callback(on_done)
    assert closed.wait(timeout=30), "close() from a callback did not return"
    assert results == [False]  # the slow publish was still running: it did not wait
    call.release()
    assert slow.result(timeout=30)  # and the rest still completes


def test_duplicates_count_what_the_service_may_have_stored(
    make_client: Callable[..., Any], local_server: Any, wait_until: Wait
) -> None:
    client = make_client(hedging=HedgingSettings(0.1, max_tokens=10, refill_ratio=0.2))
    client.create_topic(name=TOPIC)
    earn_tokens(lambda data: client.publish(TOPIC, data), 25)  # five tokens
    originals = local_server.faults.hold(method="Publish", count=5)
    futures = [client.publish(TOPIC, f"m{i}".encode()) for i in range(5)]
    originals.wait_arrived(5)
    ids = [f.result(timeout=30) for f in futures]  # the hedges won
    originals.release_all()  # the cancelled originals were already on the server
    wait_until(lambda: len(local_server.messages(TOPIC)) == 25 + 10)
    c = client.counters()
    assert (c.hedges_sent, c.duplicates) == (5, 5)
    # Each hedge's lateness past its hedge delay, what `advise --hedge-lateness` takes.
    assert len(c.hedge_lateness_ms) == 5 and min(c.hedge_lateness_ms) >= 0
    assert len(local_server.messages(TOPIC)) - 25 - len(ids) == c.duplicates


def test_hedging_pauses_while_the_client_cannot_notice_responses(
    make_client: Callable[..., Any], local_server: Any, wait_until: Wait
) -> None:
    """A publish callback that blocks the thread completing calls is client lag: the
    slow attempt is not hedged until the client can see answers again."""
    import time

    client = make_client(hedging=HedgingSettings(0.1, max_tokens=10, refill_ratio=0.2))
    client.create_topic(name=TOPIC)
    earn_tokens(lambda data: client.publish(TOPIC, data), 5)
    held = local_server.faults.hold(method="Publish", count=2)
    gate, blocked = threading.Event(), threading.Event()
    busy = client.publish(TOPIC, b"busy")
    (busy_call,) = held.wait_arrived(1)
    busy.add_done_callback(lambda _: (blocked.set(), gate.wait(60)))
    busy_call.release()
    assert blocked.wait(30)  # the completing thread is now stuck in user code
    slow = client.publish(TOPIC, b"slow")
    slow_call = held.wait_arrived(2)[1]
    wait_until(lambda: client.counters().lag_probes >= 1)  # a hedge delay passed
    time.sleep(0.3)  # at least this long unnoticed: a lower bound, never a limit
    assert client.counters().hedges_sent == 0
    assert local_server.counters.get("Publish") == 5 + 2
    gate.set()
    wait_until(lambda: client.counters().lag_paused_hedges >= 1)
    message_id = slow.result(timeout=30)  # hedged once the lag has faded, and won
    c = client.counters()
    assert c.hedges_sent == 1 and c.wins_by_attempt == {0: 5 + 1, 1: 1}
    # Its lateness counts from when it was first due, through the pause: at least the
    # 300 ms the client was stuck.
    assert len(c.hedge_lateness_ms) == 1 and c.hedge_lateness_ms[0] >= 300
    slow_call.fail("UNAVAILABLE")
    assert (message_id, b"slow") in [(m.message_id, m.data) for m in
                                     local_server.messages(TOPIC)]
