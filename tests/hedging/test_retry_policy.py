"""Retry parity with the Java Publisher: attempt timeouts, total timeout, and the
official `retry=` / `timeout=` arguments (the last ones through real gRPC)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.api_core import retry as retries
from google.api_core.timeout import ConstantTimeout, ExponentialTimeout
from google.cloud.pubsub_v1 import types

from reconciler.hedging import PublisherClient
from reconciler.hedging.batching import RetryPolicy
from reconciler.hedging.policies import policy_from_options
from reconciler.hedging.profile import RetryTimeouts

TOPIC = "projects/retry-parity/topics/orders"


def test_attempt_timeout_grows_like_javas() -> None:
    policy = RetryPolicy()  # 5 s initial, x4, at most 60 s; 600 s total
    assert [policy.rpc_timeout(n) for n in range(4)] == [5.0, 20.0, 60.0, 60.0]
    assert policy.total_timeout == 600.0
    assert RetryTimeouts().total_timeout_ms == 600_000


def test_official_retry_and_timeout_arguments_map_onto_the_policy() -> None:
    assert policy_from_options(types.PublisherOptions().retry,
                               types.PublisherOptions().timeout) is None  # unset: Java's
    retry = retries.Retry(initial=0.5, multiplier=2.0, maximum=8.0, timeout=30.0,
                          predicate=retries.if_exception_type(api_exceptions.Aborted))
    policy = policy_from_options(retry, ExponentialTimeout(initial=1, maximum=4, multiplier=2))
    assert policy is not None
    assert (policy.backoff.initial, policy.backoff.multiplier, policy.backoff.maximum) == (
        0.5, 2.0, 8.0)
    assert policy.total_timeout == 30.0
    assert [policy.rpc_timeout(n) for n in range(4)] == [1.0, 2.0, 4.0, 4.0]
    fixed = policy_from_options(None, ConstantTimeout(7))
    assert fixed is not None and not fixed.retries
    assert [fixed.rpc_timeout(n) for n in range(3)] == [7.0, 7.0, 7.0]


@pytest.fixture
def client(local_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[PublisherClient]:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    c = PublisherClient(batch_settings=types.BatchSettings(max_messages=1))
    c.create_topic(name=TOPIC)
    yield c
    c.transport.close()


def test_retry_none_means_one_attempt(local_server: Any, client: PublisherClient) -> None:
    local_server.faults.add(method="Publish", resource=TOPIC, error="UNAVAILABLE", error_next=1)
    with pytest.raises(api_exceptions.ServiceUnavailable):
        client.publish(TOPIC, b"x", retry=None).result(timeout=30)
    assert local_server.counters.get("Publish") == 1
    # The default retries the same failure.
    local_server.faults.add(method="Publish", resource=TOPIC, error="UNAVAILABLE", error_next=1)
    assert client.publish(TOPIC, b"y").result(timeout=30)
    assert local_server.counters.get("Publish") == 3


def test_a_retry_predicate_decides_what_is_retried(
    local_server: Any, client: PublisherClient
) -> None:
    only_aborted = retries.Retry(
        initial=0.01, maximum=0.05, predicate=retries.if_exception_type(api_exceptions.Aborted)
    )
    local_server.faults.add(method="Publish", resource=TOPIC, error="ABORTED", error_next=1)
    assert client.publish(TOPIC, b"x", retry=only_aborted).result(timeout=30)
    local_server.faults.add(method="Publish", resource=TOPIC, error="UNAVAILABLE", error_next=1)
    with pytest.raises(api_exceptions.ServiceUnavailable):
        client.publish(TOPIC, b"y", retry=only_aborted).result(timeout=30)
    assert local_server.counters.get("Publish") == 3
    assert [m.data for m in local_server.messages(TOPIC)] == [b"x"]
