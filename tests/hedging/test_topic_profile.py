"""The drop-in follows each topic's declared profile by default, and reading it never
holds up `publish()`: a failing, silent or damaged lookup means unhedged publishing
with one warning and a counter, and a damaged label is not read again per publish.
Messages with an ordering key are never hedged. Real gRPC, local server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud.pubsub_v1 import types

from reconciler.hedging import HedgingSettings, PublisherClient, lookup
from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from tests.hedging.conftest import earn_tokens
from tests.waiting import Wait

TOPIC = "projects/topic-profile/topics/orders"
PROFILE = HedgingProfile(hedge_delay_ms=100, max_tokens=5, refill_ratio=0.2, name="fast")
LABELS = hedging_labels.encode(PROFILE, RetryTimeouts())
Make = Callable[..., PublisherClient]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records
        if r.name == "reconciler.hedging" and r.levelno >= logging.WARNING
    ]


def publish_many(client: PublisherClient, n: int, topic: str = TOPIC) -> None:
    """One after another, so that every lookup has answered before the next publish
    (a publish during a lookup in flight would start none anyway)."""
    ids = {client.publish(topic, b"m%d" % i).result(timeout=60) for i in range(n)}
    assert len(ids) == n


@pytest.mark.parametrize(
    ("kwargs", "lookups", "tokens"),
    [
        ({}, 1, 0.2),  # the topic's profile
        ({"hedging": "topic-labels"}, 1, 0.2),  # the same, spelled out
        ({"hedging": False}, 0, None),  # off: no label read
        ({"hedging": HedgingSettings(0.2, 3, 0.1)}, 0, 0.1),  # overrides the labels
    ],
)
def test_what_the_hedging_argument_means(
    make_client: Make, local_server: Any, kwargs: dict[str, Any], lookups: int,
    tokens: float | None,
) -> None:
    client = make_client(**kwargs)
    client.create_topic(request={"name": TOPIC, "labels": LABELS})
    client.publish(TOPIC, b"x").result(timeout=30)
    assert local_server.counters.get("GetTopic") == lookups
    assert client.counters(TOPIC).tokens_available == tokens
    assert client.counters(TOPIC).profile_lookups == lookups


@pytest.mark.parametrize("code", ["UNAVAILABLE", "PERMISSION_DENIED"])
def test_a_failing_lookup_means_unhedged_with_one_warning(
    make_client: Make, local_server: Any, caplog: pytest.LogCaptureFixture, code: str
) -> None:
    """(Issue 21: with GetTopic failing UNAVAILABLE, publish() blocked the caller for
    the GetTopic retry deadline.) One plain GetTopic, no retries; then a backoff from
    1 s up, so 200 publishes cost a handful of lookups, not 200."""
    client = make_client()
    client.create_topic(request={"name": TOPIC, "labels": LABELS})
    local_server.faults.add(method="GetTopic", error=code)
    caplog.set_level(logging.DEBUG, logger="reconciler.hedging")
    publish_many(client, 200)
    c = client.counters(TOPIC)
    calls = local_server.counters.get("GetTopic")
    assert 1 <= calls <= 8  # backoff 1, 2, 4, ... s: 8 calls would take over 2 minutes
    assert c.profile_lookups == c.profile_lookup_failures == calls
    assert c.unhedged_fallback_batches == 200
    assert (c.hedges_sent, c.tokens_available) == (0, None)
    (warning,) = warnings(caplog)
    assert warning.startswith(f"topic {TOPIC}: its labels cannot be read (GetTopic: ")
    assert "publishing unhedged until its hedging profile can be read" in warning


def test_a_silent_lookup_never_holds_up_publish(
    make_client: Make, local_server: Any, caplog: pytest.LogCaptureFixture, wait_until: Wait
) -> None:
    client = make_client()
    client.create_topic(request={"name": TOPIC, "labels": LABELS})
    held = local_server.faults.hold(method="GetTopic", count=1)
    caplog.set_level(logging.INFO, logger="reconciler.hedging")
    first = client.publish(TOPIC, b"first")  # returns at once: the lookup is a future
    (lookup_call,) = held.wait_arrived(1)
    first.result(timeout=30)  # sent unhedged after a short wait, the lookup unanswered
    assert lookup_call.outcome is None
    assert client.counters(TOPIC).unhedged_fallback_batches == 1
    assert warnings(caplog) == [
        f"topic {TOPIC}: GetTopic did not answer within 1000 ms; publishing unhedged until "
        "its hedging profile can be read (counters: profile_lookup_failures, "
        "unhedged_fallback_batches; pass hedging=False to stop reading labels)"
    ]
    lookup_call.release()  # the answer comes: from now on, the topic's profile
    wait_until(lambda: client.counters(TOPIC).tokens_available is not None)
    assert f"topic {TOPIC}: its labels were read; publishing as they declare" in [
        r.getMessage() for r in caplog.records
    ]
    earn_tokens(lambda data: client.publish(TOPIC, data), 5)
    slow = local_server.faults.hold(method="Publish", resource=TOPIC, count=1)
    future = client.publish(TOPIC, b"hedged")
    slow.wait_arrived(1)
    future.result(timeout=30)
    assert client.counters(TOPIC).hedges_sent == 1
    assert local_server.counters.get("GetTopic") == 1


DAMAGED = [
    ({k: v for k, v in LABELS.items() if k != hedging_labels.DELAY},
     "hedging labels are incomplete: missing reconcile-hedge-delay-ms"),
    ({**LABELS, hedging_labels.MAX_TOKENS: "many"}, "a hedging label is not a whole number"),
    ({**LABELS, hedging_labels.DELAY: "5000"},
     "hedgeDelay 5s must be shorter than initialRpcTimeout 5s"),
]


@pytest.mark.parametrize(("labels", "problem"), DAMAGED)
def test_a_damaged_label_costs_one_get_topic_not_one_per_publish(
    make_client: Make, local_server: Any, caplog: pytest.LogCaptureFixture,
    labels: dict[str, str], problem: str,
) -> None:
    """(Issue 21: 200 publishes made 200 admin calls.)"""
    client = make_client()
    client.create_topic(request={"name": TOPIC, "labels": labels})
    caplog.set_level(logging.INFO, logger="reconciler.hedging")
    publish_many(client, 200)
    assert local_server.counters.get("GetTopic") == 1
    c = client.counters(TOPIC)
    assert (c.profile_lookups, c.profile_lookup_failures, c.unhedged_fallback_batches) == (
        1, 1, 200)
    (warning,) = warnings(caplog)
    assert warning.startswith(f"topic {TOPIC}: its hedging labels cannot be used: ")
    assert problem in warning


def test_labels_are_read_again_after_the_refresh_interval(
    make_client: Make, local_server: Any, monkeypatch: pytest.MonkeyPatch, wait_until: Wait
) -> None:
    monkeypatch.setattr(lookup, "REFRESH", 0.0)  # every publish may read them again
    client = make_client()
    client.create_topic(name=TOPIC)
    client.publish(TOPIC, b"plain").result(timeout=30)
    assert client.counters(TOPIC).tokens_available is None  # no profile declared yet
    client.update_topic(
        request={"topic": {"name": TOPIC, "labels": LABELS}, "update_mask": {"paths": ["labels"]}}
    )

    def hedging_now() -> bool:
        client.publish(TOPIC, b"again").result(timeout=30)
        return client.counters(TOPIC).tokens_available is not None

    wait_until(hedging_now)
    assert local_server.counters.get("GetTopic") >= 2


def test_a_missing_topic_fails_as_the_official_client_says_nothing_more(
    make_client: Make, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client()
    caplog.set_level(logging.INFO, logger="reconciler.hedging")
    with pytest.raises(api_exceptions.NotFound, match="Topic not found"):
        client.publish(TOPIC, b"x").result(timeout=30)
    assert warnings(caplog) == []


def test_ordered_messages_are_never_hedged_and_it_is_said_once(
    make_client: Make, local_server: Any, caplog: pytest.LogCaptureFixture,
    wait_until: Callable[..., None],
) -> None:
    """With message ordering on, the topic's profile still hedges the messages without
    a key; keyed ones go through the official client's ordered publisher."""
    ordered = types.PublisherOptions(enable_message_ordering=True)
    client = make_client(publisher_options=ordered)  # no longer refused
    client.create_topic(request={"name": TOPIC, "labels": LABELS})
    earn_tokens(lambda data: client.publish(TOPIC, data), 5)  # one token
    caplog.set_level(logging.INFO, logger="reconciler.hedging")
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=3)
    keyed = client.publish(TOPIC, b"k1", ordering_key="k")
    held.wait_arrived(1)
    plain = client.publish(TOPIC, b"plain")  # a hedge delay later, its hedge
    held.wait_arrived(3)  # the keyed message's check would have come first: no token
    # The hedge reaches the server as it is sent; the client counts it just after.
    wait_until(lambda: client.counters(TOPIC).hedges_sent >= 1, what="the hedge counted")
    assert client.counters(TOPIC).hedges_sent == 1
    held.release_all()
    keyed.result(timeout=30)
    plain.result(timeout=30)
    client.publish(TOPIC, b"k2", ordering_key="k").result(timeout=30)
    assert local_server.counters.get("Publish") == 5 + 3 + 1
    said = [r.getMessage() for r in caplog.records if "ordering key" in r.getMessage()]
    assert said == [
        f"messages with an ordering key (first: topic {TOPIC}) are published unhedged, by "
        "the official client's ordered publisher: hedged attempts could reach the service "
        "out of order"
    ]


def test_keyed_and_plain_messages_share_one_flow_control_limit(
    make_client: Make, local_server: Any
) -> None:
    limits = types.PublishFlowControl(
        message_limit=1, limit_exceeded_behavior=types.LimitExceededBehavior.ERROR
    )
    options = types.PublisherOptions(enable_message_ordering=True, flow_control=limits)
    client = make_client(publisher_options=options)
    client.create_topic(name=TOPIC)
    held = local_server.faults.hold(method="Publish", resource=TOPIC, count=1)
    keyed = client.publish(TOPIC, b"k", ordering_key="k")
    held.wait_arrived(1)
    over = client.publish(TOPIC, b"plain")
    assert "Flow control limits would be exceeded" in str(over.exception(timeout=30))
    held.release_all()
    keyed.result(timeout=30)
    client.publish(TOPIC, b"plain again").result(timeout=30)  # room again
