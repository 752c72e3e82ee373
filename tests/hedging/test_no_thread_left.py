"""No thread left per client (issue 21: each drop-in PublisherClient left one behind,
+200 threads after 200 create/publish/drop cycles; the official client, +0).

The hedged client's timer thread runs only while something is pending, so a client
that is closed, or simply dropped, leaves nothing running and can be collected."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from typing import Any

import pytest
from google.cloud import pubsub_v1 as official

from reconciler.hedging import pubsub_v1 as ours

TOPIC = "projects/thread-count/topics/orders"
CYCLES = 200
SETTLE_SECONDS = 10.0  # a safety net for a loaded machine, not an expectation


def client_threads() -> set[threading.Thread]:
    """Threads of this process but the local server's own (its handler pool grows
    with concurrent calls, whoever the client is)."""
    return {t for t in threading.enumerate() if not t.name.startswith("localserver")}


def left_behind(before: set[threading.Thread]) -> set[threading.Thread]:
    """Threads started since `before` and still alive once finished work has wound
    down (the last cycle's gRPC calls and batches end on their own): polled, never
    slept on. Threads of earlier tests that end meanwhile do not count."""
    gc.collect()
    end = time.monotonic() + SETTLE_SECONDS
    while (new := client_threads() - before) and time.monotonic() < end:
        time.sleep(0.01)
    return new


def cycles(module: Any, close: bool) -> tuple[int, bool]:
    """Threads left by CYCLES create/publish/drop cycles, and whether the last
    client was garbage collected."""
    before = client_threads()
    last: weakref.ref[Any] | None = None
    for i in range(CYCLES):
        client = module.PublisherClient()
        assert client.publish(TOPIC, b"%d" % i).result(timeout=30)
        if close:
            client.close()
        last = weakref.ref(client)
        del client
    left = left_behind(before)
    assert last is not None
    return len(left), last() is None


def test_no_thread_is_left_per_client(local_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    official.PublisherClient().create_topic(name=TOPIC)
    assert cycles(official, close=False) == (0, True)
    assert cycles(ours, close=False) == (0, True)  # +0 threads, and the client collected
    assert cycles(ours, close=True) == (0, True)
    assert local_server.counters.get("Publish") == 3 * CYCLES
