"""Issue 39 item 1: an ack ID names its subscription and its delivery. An ack (or a
deadline change) for another subscription, a made-up ID, a stale delivery (nacked or
redelivered since), an expired lease or a lease from before a restart changes
nothing; the answer for each is the service's (docs/local-server.md, "Acknowledgements
and leases"): INVALID_ARGUMENT for an ID that is not one or names another
subscription, OK for an unsettled one of this subscription, and with exactly-once
delivery INVALID_ARGUMENT carrying an ErrorInfo that names each unsettled ID. Every
trial goes through the real google-cloud-pubsub clients or real HTTP/1.1 bytes."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rest_support import rest
from subscriber_support import make_subscriber, queued_requests

from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.localserver import LocalServer

P = "projects/proj-alpha"
T = f"{P}/topics/acks"
SUB_A = f"{P}/subscriptions/sub-a"
SUB_B = f"{P}/subscriptions/sub-b"
EOD = f"{P}/subscriptions/exactly-once"


@pytest.fixture
def two_subs(local_server: Any, publisher_client: Any, subscriber_client: Any) -> list[str]:
    """Topic with sub-a and sub-b (and an exactly-once one), three messages in each."""
    publisher_client.create_topic(name=T)
    for name in (SUB_A, SUB_B):
        subscriber_client.create_subscription(request={"name": name, "topic": T})
    subscriber_client.create_subscription(
        request={"name": EOD, "topic": T, "enable_exactly_once_delivery": True}
    )
    ids = publisher_client.publish(
        topic=T, messages=[{"data": f"m{i}".encode()} for i in range(3)]
    ).message_ids
    return list(ids)


def _pull(client: Any, sub: str, n: int = 3) -> list[Any]:
    got: list[Any] = []
    while len(got) < n:
        response = client.pull(request={"subscription": sub, "max_messages": n - len(got)})
        got += list(response.received_messages)
    return got


def _unacked(server: Any, sub: str) -> int:
    stats = server.subscription_stats(sub)
    return sum(s.count for s in stats.unacked.values())


def test_another_subscriptions_ack_ids_are_refused_and_change_nothing(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    from google.api_core.exceptions import InvalidArgument

    from_a = _pull(subscriber_client, SUB_A)
    with pytest.raises(InvalidArgument) as refused:
        subscriber_client.acknowledge(
            request={"subscription": SUB_B, "ack_ids": [m.ack_id for m in from_a]}
        )
    assert refused.value.message == (
        f"Subscription {SUB_B} received an invalid ack ID {from_a[0].ack_id}, meant for "
        f"subscription: {SUB_A}"
    )
    with pytest.raises(InvalidArgument, match=r"Invalid ack id \(ack_id=4-999\)"):
        subscriber_client.acknowledge(request={"subscription": SUB_B, "ack_ids": ["4-999"]})
    with pytest.raises(InvalidArgument, match="meant for subscription"):  # a nack neither
        subscriber_client.modify_ack_deadline(
            request={
                "subscription": SUB_B,
                "ack_ids": [from_a[0].ack_id],
                "ack_deadline_seconds": 0,
            }
        )
    # sub-b delivers all three; sub-a's are still leased to sub-a's puller.
    assert sorted(m.message.message_id for m in _pull(subscriber_client, SUB_B)) == sorted(
        two_subs
    )
    assert _unacked(local_server, SUB_A) == _unacked(local_server, SUB_B) == 3


def test_a_stale_delivery_is_accepted_and_settles_nothing(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    first = _pull(subscriber_client, SUB_B, 1)[0]
    subscriber_client.modify_ack_deadline(  # a nack: delivered again, under a new ID
        request={"subscription": SUB_B, "ack_ids": [first.ack_id], "ack_deadline_seconds": 0}
    )
    wanted = first.message.message_id
    again = next(m for m in _pull(subscriber_client, SUB_B) if m.message.message_id == wanted)
    assert again.ack_id != first.ack_id
    # The old ID is stale: acking or nacking it is answered OK and changes nothing.
    subscriber_client.acknowledge(request={"subscription": SUB_B, "ack_ids": [first.ack_id]})
    subscriber_client.modify_ack_deadline(
        request={"subscription": SUB_B, "ack_ids": [first.ack_id], "ack_deadline_seconds": 0}
    )
    assert _unacked(local_server, SUB_B) == 3
    assert local_server.state.subs.is_leased(SUB_B, int(first.message.message_id))
    subscriber_client.acknowledge(request={"subscription": SUB_B, "ack_ids": [again.ack_id]})
    assert _unacked(local_server, SUB_B) == 2


def test_an_expired_lease_settles_nothing(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    got = _pull(subscriber_client, SUB_B, 1)[0]
    subscriber_client.modify_ack_deadline(
        request={"subscription": SUB_B, "ack_ids": [got.ack_id], "ack_deadline_seconds": 1}
    )
    expired = time.monotonic() + 1.05
    while time.monotonic() < expired:  # the lease's own deadline, not a timing bound
        time.sleep(0.05)
    subscriber_client.acknowledge(request={"subscription": SUB_B, "ack_ids": [got.ack_id]})
    assert _unacked(local_server, SUB_B) == 3
    again = _pull(subscriber_client, SUB_B)  # the message is delivered again
    assert got.message.message_id in {m.message.message_id for m in again}


def test_exactly_once_names_each_unsettled_ack_id_and_settles_the_others(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    from google.api_core.exceptions import InvalidArgument
    from google.rpc import error_details_pb2

    got = _pull(subscriber_client, EOD)
    subscriber_client.acknowledge(request={"subscription": EOD, "ack_ids": [got[0].ack_id]})
    with pytest.raises(InvalidArgument) as refused:  # acked already, plus a valid one
        subscriber_client.acknowledge(
            request={"subscription": EOD, "ack_ids": [got[0].ack_id, got[1].ack_id]}
        )
    assert refused.value.message == (
        "Some acknowledgement ids in the request were invalid. This could be because the "
        "acknowledgement ids have expired or the acknowledgement ids were malformed."
    )
    infos = [d for d in refused.value.details if isinstance(d, error_details_pb2.ErrorInfo)]
    assert len(infos) == 1
    assert (infos[0].reason, infos[0].domain) == (
        "EXACTLY_ONCE_ACKID_FAILURE",
        "pubsub.googleapis.com",
    )
    assert dict(infos[0].metadata) == {got[0].ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    assert _unacked(local_server, EOD) == 1  # the valid one was acknowledged


def test_the_python_client_reports_an_invalid_ack_id_with_exactly_once(
    local_server: Any, two_subs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The high-level subscriber's `ack_with_response` reads the server's ErrorInfo:
    a second ack of the same delivery fails as INVALID_ACK_ID, the first succeeds.
    (The Python client reports OTHER for an ack it happened to batch with an invalid
    one, though the server settled it: it reads only the IDs the ErrorInfo names, and
    fails the rest of a failed call; only the first message is judged here.)"""
    from google.cloud import pubsub_v1
    from google.cloud.pubsub_v1.subscriber import exceptions as sub_exceptions

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.SubscriberClient()
    outcomes: list[Any] = []
    done = threading.Event()

    first: list[str] = []
    lock = threading.Lock()

    def callback(message: Any) -> None:
        with lock:
            first.append(message.message_id)
        if first[0] != message.message_id:
            message.ack()
            return
        for _ in range(2):
            try:
                outcomes.append(message.ack_with_response().result(timeout=60))
            except sub_exceptions.AcknowledgeError as exc:
                outcomes.append(exc.error_code)
        done.set()

    future = client.subscribe(
        EOD, callback, flow_control=pubsub_v1.types.FlowControl(max_messages=1)
    )
    try:
        assert done.wait(60)
    finally:
        future.cancel()
        future.result(timeout=60)
        client.close()
    assert outcomes == [
        sub_exceptions.AcknowledgeStatus.SUCCESS,
        sub_exceptions.AcknowledgeStatus.INVALID_ACK_ID,
    ]


def _stream(client: Any, sub: str) -> tuple[queue.Queue[Any], Any]:
    from google.pubsub_v1.types import StreamingPullRequest

    q: queue.Queue[Any] = queue.Queue()
    q.put(StreamingPullRequest(subscription=sub, stream_ack_deadline_seconds=60))
    return q, iter(client.streaming_pull(requests=queued_requests(q), timeout=60))


@pytest.mark.parametrize("kind", ["foreign", "malformed", "negative", "sizes"])
def test_a_stream_request_the_service_aborts_for_ends_the_stream(
    local_server: Any, subscriber_client: Any, two_subs: list[str], kind: str
) -> None:
    from google.api_core.exceptions import InvalidArgument
    from google.pubsub_v1.types import StreamingPullRequest

    from_a = _pull(subscriber_client, SUB_A, 1)
    q, responses = _stream(subscriber_client, SUB_B)
    try:
        first = next(responses).received_messages
        request, expected = {
            "foreign": (
                StreamingPullRequest(ack_ids=[from_a[0].ack_id]),
                f"meant for subscription: {SUB_A}",
            ),
            "malformed": (StreamingPullRequest(ack_ids=["4-999"]), "Invalid ack id"),
            "negative": (
                StreamingPullRequest(
                    modify_deadline_ack_ids=[first[0].ack_id], modify_deadline_seconds=[-1]
                ),
                "Ack deadline cannot be negative",
            ),
            "sizes": (
                StreamingPullRequest(
                    modify_deadline_ack_ids=[first[0].ack_id], modify_deadline_seconds=[5, 5]
                ),
                "ack IDs and deadlines must have the same size",
            ),
        }[kind]
        q.put(request)
        with pytest.raises(InvalidArgument, match=expected):
            for _ in responses:
                pass
    finally:
        q.put(None)
    assert _unacked(local_server, SUB_A) == 3  # nothing of sub-a's was touched


def test_a_stream_of_an_exactly_once_subscription_confirms_its_acks(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    from google.pubsub_v1.types import StreamingPullRequest

    q, responses = _stream(subscriber_client, EOD)
    try:
        got = list(next(responses).received_messages)
        while len(got) < 3:
            got += list(next(responses).received_messages)
        q.put(StreamingPullRequest(ack_ids=[got[0].ack_id]))
        q.put(StreamingPullRequest(ack_ids=[got[0].ack_id, got[1].ack_id]))
        confirmations = []
        while len(confirmations) < 2:
            response = next(responses)
            if response.acknowledge_confirmation.ack_ids or (
                response.acknowledge_confirmation.invalid_ack_ids
            ):
                confirmations.append(response.acknowledge_confirmation)
    finally:
        q.put(None)
    assert [(list(c.ack_ids), list(c.invalid_ack_ids)) for c in confirmations] == [
        ([got[0].ack_id], []),
        ([got[1].ack_id], [got[0].ack_id]),
    ]
    assert _unacked(local_server, EOD) == 1


def test_rest_carries_the_error_info_and_the_refusals(
    local_server: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    got = _pull(subscriber_client, EOD, 1)
    path = f"/v1/{EOD}:acknowledge"
    assert rest(local_server.address, "POST", path, {"ackIds": [got[0].ack_id]}).status == 200
    again = rest(local_server.address, "POST", path, {"ackIds": [got[0].ack_id]})
    assert again.status == 400
    assert again.body["error"]["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "EXACTLY_ONCE_ACKID_FAILURE",
            "domain": "pubsub.googleapis.com",
            "metadata": {got[0].ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"},
        }
    ]
    foreign = rest(
        local_server.address, "POST", f"/v1/{SUB_B}:acknowledge", {"ackIds": [got[0].ack_id]}
    )
    assert (foreign.status, foreign.body["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert f"meant for subscription: {EOD}" in foreign.body["error"]["message"]


def test_ack_ids_from_before_a_restart_are_stale(tmp_path: Path) -> None:
    """Leases do not survive a restart (every unacknowledged message is delivered
    again), so neither do the ack IDs that named them: acking one is accepted and
    settles nothing, and the message comes again with a new ID."""
    with LocalServer(state_dir=tmp_path) as server:
        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": SUB_B, "topic": T})
        pub.publish(topic=T, messages=[{"data": b"once"}])
        before = _pull(sub, SUB_B, 1)[0]
    with LocalServer(state_dir=tmp_path) as server:
        sub = make_subscriber(server.address)
        sub.acknowledge(request={"subscription": SUB_B, "ack_ids": [before.ack_id]})
        after = _pull(sub, SUB_B, 1)[0]
        assert after.message.message_id == before.message.message_id
        assert after.ack_id != before.ack_id
        sub.acknowledge(request={"subscription": SUB_B, "ack_ids": [after.ack_id]})
        assert _unacked(server, SUB_B) == 0


def test_a_seek_makes_the_ack_ids_handed_out_before_it_stale(
    local_server: Any, publisher_client: Any, subscriber_client: Any, two_subs: list[str]
) -> None:
    """A Seek sets the acknowledgement state of every retained message anew (the
    service's words: it alters the ack state in bulk), so the leases handed out before
    it are not current: acking one afterwards is answered as a stale ID (OK, or the
    exactly-once ErrorInfo) and settles nothing; the message is delivered again under
    a new ID, which settles it."""
    from google.api_core.exceptions import InvalidArgument
    from google.rpc import error_details_pb2

    before = _pull(subscriber_client, SUB_B)
    before_eod = _pull(subscriber_client, EOD)
    for sub in (SUB_B, EOD):
        subscriber_client.seek(request={"subscription": sub, "time": {"seconds": 0}})
    subscriber_client.acknowledge(
        request={"subscription": SUB_B, "ack_ids": [m.ack_id for m in before]}
    )
    subscriber_client.modify_ack_deadline(  # extends nothing either
        request={"subscription": SUB_B, "ack_ids": [before[0].ack_id], "ack_deadline_seconds": 600}
    )
    assert _unacked(local_server, SUB_B) == 3
    with pytest.raises(InvalidArgument) as refused:
        subscriber_client.acknowledge(
            request={"subscription": EOD, "ack_ids": [before_eod[0].ack_id]}
        )
    infos = [d for d in refused.value.details if isinstance(d, error_details_pb2.ErrorInfo)]
    assert dict(infos[0].metadata) == {before_eod[0].ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    assert _unacked(local_server, EOD) == 3
    again = _pull(subscriber_client, SUB_B)  # delivered again at once, under new IDs
    assert {m.message.message_id for m in again} == {m.message.message_id for m in before}
    assert not {m.ack_id for m in again} & {m.ack_id for m in before}
    subscriber_client.acknowledge(
        request={"subscription": SUB_B, "ack_ids": [m.ack_id for m in again]}
    )
    assert _unacked(local_server, SUB_B) == 0
