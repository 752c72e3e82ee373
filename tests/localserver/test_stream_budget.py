"""Issue 39 item 4: open StreamingPulls never starve unary calls. Each open stream
holds a worker thread, so streams have a budget of their own beside the unary calls'
workers; a stream beyond it is answered RESOURCE_EXHAUSTED at once, as the service
answers a project over its quota of open StreamingPull connections. Through the real
google-cloud-pubsub clients."""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest
from google.api_core import exceptions
from subscriber_support import make_subscriber, queued_requests

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer

P = "projects/proj-alpha"
T = f"{P}/topics/crowded"
S = f"{P}/subscriptions/crowded-sub"


def _wait_for_streams(server: Any, n: int) -> None:
    """Until the server has taken `n` StreamingPulls (a safety net, not a timing)."""
    end = time.monotonic() + 120
    while server.counters.get("StreamingPull") < n:
        assert time.monotonic() < end, f"{server.counters.get('StreamingPull')} of {n} streams"
        time.sleep(0.05)


def test_seventy_subscribers_leave_publish_and_get_topic_served(
    local_server: Any,
    publisher_client: Any,
    subscriber_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's trial: 70 `subscribe()` streams (more than the 64 unary workers)
    and then a Publish and a GetTopic (30 s deadlines: a safety net; they took
    forever before, each stream holding one of the 64 workers)."""
    from google.cloud import pubsub_v1

    publisher_client.create_topic(name=T)
    subscriber_client.create_subscription(request={"name": S, "topic": T})
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    clients = [pubsub_v1.SubscriberClient() for _ in range(7)]
    futures = [
        client.subscribe(S, lambda message: message.ack()) for client in clients for _ in range(10)
    ]
    try:
        _wait_for_streams(local_server, 64)
        publisher_client.get_topic(topic=T, timeout=30, retry=None)
        publisher_client.publish(topic=T, messages=[{"data": b"x"}], timeout=30, retry=None)
        _wait_for_streams(local_server, 70)  # every stream was taken, none refused
    finally:
        for future in futures:
            future.cancel()
        for future in futures:
            future.result(timeout=60)
        for client in clients:
            client.close()


def test_a_stream_beyond_the_budget_is_refused_and_unary_calls_go_on() -> None:
    from google.pubsub_v1.types import StreamingPullRequest

    with LocalServer(max_workers=2, max_streams=3) as server:
        pub, sub = publisher_client(server.address), make_subscriber(server.address)
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": S, "topic": T})
        first = StreamingPullRequest(subscription=S, stream_ack_deadline_seconds=60)
        opened = []
        for _ in range(3):
            q: queue.Queue[Any] = queue.Queue()
            q.put(first)
            opened.append((q, sub.streaming_pull(requests=queued_requests(q))))
        _wait_for_streams(server, 3)
        q4: queue.Queue[Any] = queue.Queue()
        q4.put(first)
        with pytest.raises(exceptions.ResourceExhausted, match="StreamingPull connection quota"):
            next(iter(sub.streaming_pull(requests=queued_requests(q4))))
        q4.put(None)
        for _ in range(5):  # more unary calls than unary workers, one after another
            assert pub.get_topic(topic=T, timeout=30, retry=None).name == T
        # Streams that end give their place back: a new one is served.
        for q, stream in opened:
            q.put(None)
            stream.cancel()
        pub.publish(topic=T, messages=[{"data": b"x"}], timeout=30, retry=None)
        end = time.monotonic() + 60  # the places come back as the server sees the ends
        while True:
            q5: queue.Queue[Any] = queue.Queue()
            q5.put(first)
            again = sub.streaming_pull(requests=queued_requests(q5))
            try:
                got = next(iter(again)).received_messages
                break
            except exceptions.ResourceExhausted:
                assert time.monotonic() < end, "no stream's place came back"
                time.sleep(0.05)
            finally:
                q5.put(None)
                again.cancel()
        assert [m.message.data for m in got] == [b"x"]
