"""The locational endpoint a topic's labels declare (`reconcile-publish-endpoint`):
which endpoint wins, and what a publish does with it (real gRPC, local server)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.endpoint import EndpointLabelError, resolve_endpoint

TOPIC = "projects/endpoints/topics/orders"
DECLARED = {hedging_labels.ENDPOINT: "us-east1"}


# -- which endpoint: the pure resolution ----------------------------------------------


def test_a_declared_region_is_its_locational_endpoint() -> None:
    choice = resolve_endpoint(TOPIC, {"team": "payments", **DECLARED})
    assert choice.endpoint == "us-east1-pubsub.googleapis.com:443"
    assert choice.overridden is None


def test_a_pinned_api_endpoint_wins_and_says_so() -> None:
    choice = resolve_endpoint(TOPIC, DECLARED, pinned="europe-west1-pubsub.googleapis.com")
    assert choice.endpoint == "europe-west1-pubsub.googleapis.com:443"
    assert choice.declared == "us-east1-pubsub.googleapis.com:443"
    assert choice.overridden == (
        "client_options.api_endpoint pins europe-west1-pubsub.googleapis.com:443"
    )


def test_pinning_the_declared_endpoint_overrides_nothing() -> None:
    choice = resolve_endpoint(TOPIC, DECLARED, pinned="us-east1-pubsub.googleapis.com")
    assert choice.endpoint == "us-east1-pubsub.googleapis.com:443"
    assert choice.overridden is None


def test_the_emulator_wins_over_everything() -> None:
    choice = resolve_endpoint(
        TOPIC, DECLARED, pinned="psc.example:443", emulator="127.0.0.1:8085"
    )
    assert choice.endpoint == "127.0.0.1:8085"
    assert choice.overridden == "PUBSUB_EMULATOR_HOST is set (127.0.0.1:8085)"


def test_no_label_is_the_default_endpoint() -> None:
    choice = resolve_endpoint(TOPIC, {"team": "payments"})
    assert choice.endpoint == "pubsub.googleapis.com:443"
    assert choice.declared is None and choice.overridden is None
    assert resolve_endpoint(TOPIC, {}, pinned="psc.example:8443").endpoint == "psc.example:8443"


@pytest.mark.parametrize(
    ("value", "hint"),
    [("us_east1", "did you mean 'us-east1'?"), ("mars-north1", ""), ("", "")],
)
def test_a_bad_label_names_topic_and_label(value: str, hint: str) -> None:
    with pytest.raises(EndpointLabelError) as raised:
        resolve_endpoint(TOPIC, {hedging_labels.ENDPOINT: value}, emulator="127.0.0.1:1")
    message = str(raised.value)
    assert message.startswith(
        f"topic {TOPIC}: label reconcile-publish-endpoint={value!r} is not a known "
        "Google Cloud region"
    )
    assert hint in message
    assert "reconcile apply" in message
    assert isinstance(raised.value, hedging_labels.LabelDecodeError)


# -- what a publish does: real gRPC against the local server ---------------------------


def test_under_the_emulator_the_declared_endpoint_is_logged_once_and_not_used(
    make_client: Callable[..., Any], local_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client()
    client.create_topic(request={"name": TOPIC, "labels": DECLARED})
    caplog.set_level(logging.INFO, logger="reconciler.hedging")
    ids = [client.publish(TOPIC, b"m%d" % i).result(timeout=30) for i in range(3)]
    assert len(set(ids)) == 3
    assert local_server.counters.get("Publish") == 3  # every batch reached the local server
    assert local_server.counters.get("GetTopic") == 1  # labels read once
    assert client.endpoint_for(TOPIC) == local_server.address
    lines = [r for r in caplog.records if r.name == "reconciler.hedging"]
    assert [r.getMessage() for r in lines] == [
        f"topic {TOPIC} declares the locational endpoint us-east1-pubsub.googleapis.com:443 "
        "(label reconcile-publish-endpoint); not used because PUBSUB_EMULATOR_HOST is set "
        f"({local_server.address}): publishing to {local_server.address}"
    ]


def test_endpoint_for_before_any_publish_reads_the_labels_once(
    make_client: Callable[..., Any], local_server: Any
) -> None:
    client = make_client()
    plain = "projects/endpoints/topics/plain"
    client.create_topic(name=plain)
    assert client.endpoint_for(plain) == local_server.address
    client.publish(plain, b"x").result(timeout=30)
    assert local_server.counters.get("GetTopic") == 1


def test_a_bad_endpoint_label_fails_the_topics_publishes_only(
    make_client: Callable[..., Any], local_server: Any
) -> None:
    client = make_client()
    bad, good = TOPIC, "projects/endpoints/topics/good"
    client.create_topic(request={"name": bad, "labels": {hedging_labels.ENDPOINT: "us_east1"}})
    client.create_topic(request={"name": good, "labels": DECLARED})
    with pytest.raises(EndpointLabelError, match=f"topic {bad}: label reconcile-publish-endpoint"):
        client.publish(bad, b"x").result(timeout=30)
    with pytest.raises(EndpointLabelError, match="did you mean 'us-east1'"):
        client.endpoint_for(bad)
    client.publish(good, b"y").result(timeout=30)
    assert local_server.counters.get("Publish") == 1  # nothing was sent for the bad topic


def test_without_topic_labels_mode_the_label_is_not_read(
    make_client: Callable[..., Any], local_server: Any
) -> None:
    client = make_client(hedging=False)  # no labels read: where the official client's go
    client.create_topic(request={"name": TOPIC, "labels": {hedging_labels.ENDPOINT: "bogus"}})
    client.publish(TOPIC, b"x").result(timeout=30)
    assert client.endpoint_for(TOPIC) == local_server.address
    assert local_server.counters.get("GetTopic") == 0
