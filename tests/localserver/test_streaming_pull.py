"""StreamingPull through the real clients: the high-level `subscribe()` with its flow
control, and the raw stream with the server's flow control (max_outstanding_messages)
and acks and deadline changes sent in the stream."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest
from subscriber_support import queued_requests

P = "projects/proj-alpha"
T = f"{P}/topics/streamed"
S = f"{P}/subscriptions/streamed-sub"


@pytest.fixture
def topic_and_sub(publisher_client: Any, subscriber_client: Any) -> None:
    publisher_client.create_topic(name=T)
    subscriber_client.create_subscription(request={"name": S, "topic": T})


def _wait_until(server: Any, done: Any, what: str) -> None:
    """Wait on the subscription's changes (not a sleep) until `done()`; a 60 s safety
    net against a hang, not a latency expectation."""
    end = time.monotonic() + 60
    while not done():
        assert time.monotonic() < end, f"gave up waiting: {what}"
        server.state.subs.wait_change(S, 0.2)


def test_subscribe_with_flow_control_receives_everything_once(
    local_server: Any, publisher_client: Any, topic_and_sub: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.cloud import pubsub_v1

    published = set()
    for i in range(6):
        batch = [{"data": f"{i}-{j}".encode()} for j in range(10)]
        published |= set(publisher_client.publish(topic=T, messages=batch).message_ids)
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.SubscriberClient()
    lock = threading.Lock()
    seen: list[str] = []
    busy = [0, 0]  # now, most at once
    all_in = threading.Event()

    def callback(message: Any) -> None:
        with lock:
            busy[0] += 1
            busy[1] = max(busy)
        message.ack()
        with lock:
            busy[0] -= 1
            seen.append(message.message_id)
            if len(seen) >= len(published):
                all_in.set()

    future = client.subscribe(
        S, callback, flow_control=pubsub_v1.types.FlowControl(max_messages=5)
    )
    try:
        assert all_in.wait(60), f"{len(seen)} of {len(published)} received"
    finally:
        future.cancel()
        future.result(timeout=60)
        client.close()
    assert sorted(seen) == sorted(published)
    assert busy[1] <= 5
    _wait_until(local_server, lambda: not local_server.subscription_stats(S).unacked, "acks")
    assert local_server.counters.get("StreamingPull") >= 1


def test_server_side_flow_control_and_acks_in_the_stream(
    local_server: Any, publisher_client: Any, subscriber_client: Any, topic_and_sub: None
) -> None:
    from google.pubsub_v1.types import StreamingPullRequest

    publisher_client.publish(topic=T, messages=[{"data": str(i).encode()} for i in range(10)])
    q: queue.Queue[Any] = queue.Queue()
    q.put(
        StreamingPullRequest(
            subscription=S, stream_ack_deadline_seconds=60, max_outstanding_messages=3
        )
    )
    stream = subscriber_client.streaming_pull(requests=queued_requests(q))
    responses = iter(stream)
    try:
        first = next(responses).received_messages
        assert [m.message.data for m in first] == [b"0", b"1", b"2"]  # 3 outstanding at most
        # An ack and a nack (deadline 0) in the stream make room for two more; the
        # nacked message comes back.
        q.put(
            StreamingPullRequest(
                ack_ids=[first[0].ack_id],
                modify_deadline_ack_ids=[first[1].ack_id],
                modify_deadline_seconds=[0],
            )
        )
        got: list[bytes] = []
        while len(got) < 2:
            got += [m.message.data for m in next(responses).received_messages]
        assert sorted(got) == [b"1", b"3"]
    finally:
        q.put(None)
        stream.cancel()
    stats = local_server.subscription_stats(S)
    assert stats is not None and stats.unacked["us-central1"].count == 9


def test_stop_ends_waiting_pulls_and_open_streams(
    local_server: Any, subscriber_client: Any, topic_and_sub: None
) -> None:
    """Nothing waits out its poll when the server stops: a long-polling Pull (it would
    wait 10 s for a message) and an open stream are answered at once (the 5 s safety
    nets are shorter than the poll)."""
    from google.pubsub_v1.types import PullRequest, StreamingPullRequest

    pull = subscriber_client.transport.pull.future(PullRequest(subscription=S, max_messages=5))
    q: queue.Queue[Any] = queue.Queue()
    q.put(StreamingPullRequest(subscription=S, stream_ack_deadline_seconds=60))
    stream = subscriber_client.transport.streaming_pull(queued_requests(q))
    _wait_until(local_server, lambda: local_server.counters.get("StreamingPull") == 1, "stream")
    local_server.stop()
    assert pull.exception(timeout=5) is None and list(pull.result().received_messages) == []
    with pytest.raises(Exception) as ended:
        next(iter(stream))
    assert ended.value.code().name in ("UNAVAILABLE", "CANCELLED")  # type: ignore[attr-defined]
    q.put(None)
