"""Helpers shared by the hedged publisher's tests (which run against the suite's
`local_server` through the real client)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from google.cloud.pubsub_v1 import types

from reconciler.hedging import PublisherClient
from tests.waiting import wait_until

ONE = types.BatchSettings(max_messages=1)  # every publish its own batch


def earn_tokens(publish: Callable[[bytes], Future[str]], successes: int) -> None:
    """Fast publishes, one after another: the token bucket starts empty, as in the
    official clients, and each success adds the refill ratio."""
    for i in range(successes):
        publish(b"earn-%d" % i).result(timeout=30)


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., None]:
    return wait_until


@pytest.fixture
def make_client(
    local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., PublisherClient]]:
    """Build hedged `PublisherClient`s against the local server (one message a batch
    unless `batch_settings` is given); their channels are closed after the test."""
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    made: list[PublisherClient] = []

    def build(**kwargs: Any) -> PublisherClient:
        kwargs.setdefault("batch_settings", ONE)
        client = PublisherClient(**kwargs)
        made.append(client)
        return client

    yield build
    for client in made:
        client.transport.close()
