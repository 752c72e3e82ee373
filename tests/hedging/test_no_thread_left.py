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


def client_threads() -> int:
    """Threads of this process but the local server's own (its handler pool grows
    with concurrent calls, whoever the client is)."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("localserver"))


def settled_threads(baseline: int) -> int:
    """The thread count once finished work has wound down (threads of the last
    cycle's gRPC calls and batches end on their own): polled, never slept on."""
    gc.collect()
    end = time.monotonic() + SETTLE_SECONDS
    while client_threads() > baseline and time.monotonic() < end:
        time.sleep(0.01)
    return client_threads()


def cycles(module: Any, close: bool) -> tuple[int, bool]:
    """Threads added by CYCLES create/publish/drop cycles, and whether the last
    client was garbage collected."""
    baseline = settled_threads(client_threads())
    last: weakref.ref[Any] | None = None
    for i in range(CYCLES):
        client = module.PublisherClient()
        assert client.publish(TOPIC, b"%d" % i).result(timeout=30)
        if close:
            client.close() if module is ours else client.stop()
        last = weakref.ref(client)
        del client
    after = settled_threads(baseline)
    assert last is not None
    return after - baseline, last() is None


@pytest.mark.parametrize("close", [False, True], ids=["dropped", "closed"])
def test_no_thread_is_left_per_client(
    local_server: Any, monkeypatch: pytest.MonkeyPatch, close: bool
) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    official.PublisherClient().create_topic(name=TOPIC)
    theirs = cycles(official, close)
    mine = cycles(ours, close)
    assert theirs == (0, True)
    assert mine == (0, True)  # +0 threads, and the client was collected
    assert local_server.counters.get("Publish") == 2 * CYCLES
