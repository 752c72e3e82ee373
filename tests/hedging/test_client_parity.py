"""`reconciler.hedging.PublisherClient` against `google.cloud.pubsub_v1.PublisherClient`.

Each scenario runs through the official client and through ours (by default, each
topic's labels decide, and these topics declare no profile; `hedging=False`; and
hedging on with a hedge delay no call here reaches), each built the way a user
would: `PUBSUB_EMULATOR_HOST` pointing at the local server. The test requires the
same observations from all of them (results, stored messages, exception types and
messages, RPC counts), and checks the official client's against what the scenario
expects, so that two equally wrong answers cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1 import types
from google.cloud.pubsub_v1.publisher import exceptions as pub_exceptions

from reconciler.hedging import HedgingSettings, PublisherClient

PROJECT = "parity"
QUIET = HedgingSettings(hedge_delay=4.0)  # hedging on; no call here takes 4 s
KINDS = ("official", "ours", "ours-off", "ours-hedged")

Observe = Callable[[Any, str, Any], Any]


@pytest.fixture
def make_client(local_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    made: list[Any] = []

    def make(kind: str, **kwargs: Any) -> Any:
        if kind == "official":
            client = pubsub_v1.PublisherClient(**kwargs)
        elif kind == "ours":
            client = PublisherClient(**kwargs)
        elif kind == "ours-off":
            client = PublisherClient(hedging=False, **kwargs)
        else:
            client = PublisherClient(hedging=QUIET, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.transport.close()


def outcome(future: Future[str]) -> tuple[str, str]:
    """("ok", "") or (exception type, message) of a publish future."""
    error = future.exception(timeout=60)
    return ("ok", "") if error is None else (type(error).__name__, str(error))


def run_all(make_client: Callable[..., Any], local_server: Any, observe: Observe,
            **kwargs: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for kind in KINDS:
        client = make_client(kind, **kwargs)
        topic = client.topic_path(PROJECT, f"t-{kind}")
        before = local_server.counters.get("Publish")
        seen[kind] = observe(client, topic, local_server)
        seen[kind + ":publish-rpcs"] = local_server.counters.get("Publish") - before
    return seen


def same_for_all(seen: dict[str, Any]) -> Any:
    for suffix in ("", ":publish-rpcs"):
        values = {kind: seen[kind + suffix] for kind in KINDS}
        for kind in KINDS[1:]:
            assert values[kind] == values["official"], values
    return seen["official"]


def stored(server: Any, topic: str) -> list[tuple[bytes, dict[str, str]]]:
    return sorted((m.data, dict(m.attributes)) for m in server.messages(topic))


def test_batched_messages_with_attributes(make_client: Any, local_server: Any) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        futures = [
            client.publish(topic, f"m{i}".encode(), n=str(i), raw=b"bytes-too")
            for i in range(25)
        ]
        ids = [f.result(timeout=60) for f in futures]
        assert len(set(ids)) == 25 and all(isinstance(i, str) for i in ids)
        by_id = {m.message_id: m.data for m in server.messages(topic)}
        return [by_id[i] for i in ids], stored(server, topic)

    batching = types.BatchSettings(max_messages=10, max_latency=0.05)
    seen = run_all(make_client, local_server, observe, batch_settings=batching)
    order, messages = same_for_all(seen)
    assert order == [f"m{i}".encode() for i in range(25)]  # each future has its own ID
    assert messages == sorted(
        (f"m{i}".encode(), {"n": str(i), "raw": "bytes-too"}) for i in range(25)
    )
    assert seen["official:publish-rpcs"] == 3


def test_many_topics_from_one_client(make_client: Any, local_server: Any) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        topics = [f"{topic}-{n}" for n in range(3)]
        for t in topics:
            client.create_topic(name=t)
        futures = [client.publish(t, t[-1:].encode()) for t in topics for _ in range(2)]
        [f.result(timeout=60) for f in futures]
        return [[d for d, _ in stored(server, t)] for t in topics]

    result = same_for_all(run_all(make_client, local_server, observe))
    assert result == [[b"0", b"0"], [b"1", b"1"], [b"2", b"2"]]


def test_missing_topic_and_permanent_errors(make_client: Any, local_server: Any) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        missing = outcome(client.publish(topic, b"x"))
        client.create_topic(name=topic)
        server.faults.add(
            method="Publish", resource=topic, error="PERMISSION_DENIED",
            message="User not authorized to perform this action.", error_next=1,
        )
        denied = outcome(client.publish(topic, b"x"))
        return missing, denied, stored(server, topic)

    missing, denied, messages = same_for_all(run_all(make_client, local_server, observe))
    assert missing == ("NotFound", "404 Topic not found")
    assert denied == ("PermissionDenied", "403 User not authorized to perform this action.")
    assert messages == []


@pytest.mark.parametrize("code", ["UNAVAILABLE", "CANCELLED", "ABORTED", "INTERNAL"])
def test_transient_errors_are_retried(make_client: Any, local_server: Any, code: str) -> None:
    """CANCELLED sent by the service is retried, as by the official client."""

    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        server.faults.add(method="Publish", resource=topic, error=code, error_next=2)
        return outcome(client.publish(topic, b"x")), stored(server, topic)

    seen = run_all(make_client, local_server, observe)
    assert same_for_all(seen) == (("ok", ""), [(b"x", {})])
    assert seen["official:publish-rpcs"] == 3


def test_bad_input_is_refused_the_same_way(make_client: Any, local_server: Any) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        raised = []
        for call in (
            lambda: client.publish(topic, "text"),
            lambda: client.publish(topic, b"x", n=1),
            lambda: client.publish(topic, b"x", ordering_key="k"),
            lambda: client.resume_publish(topic, "k"),
            lambda: client.publish(topic, b"x" * 10_000_001),
        ):
            with pytest.raises(Exception) as info:
                call()
            raised.append((type(info.value).__name__, str(info.value)))
        return raised

    raised = same_for_all(run_all(make_client, local_server, observe))
    assert [name for name, _ in raised] == [
        "TypeError", "TypeError", "ValueError", "ValueError", "MessageTooLargeError"
    ]
    assert "bytestring" in raised[0][1] and "ordering is not enabled" in raised[2][1]


def test_stop_flushes_and_refuses(make_client: Any, local_server: Any) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        future = client.publish(topic, b"queued")
        client.stop()
        with pytest.raises(RuntimeError) as after:
            client.publish(topic, b"late")
        with pytest.raises(RuntimeError) as again:
            client.stop()
        return outcome(future), str(after.value), str(again.value), stored(server, topic)

    result = same_for_all(
        run_all(make_client, local_server, observe,
                batch_settings=types.BatchSettings(max_latency=30.0))
    )
    assert result[0] == ("ok", "") and result[3] == [(b"queued", {})]
    assert result[1] == "Cannot publish on a stopped publisher."


def test_flow_control_error(make_client: Any, local_server: Any) -> None:
    limits = types.PublishFlowControl(
        message_limit=2, limit_exceeded_behavior=types.LimitExceededBehavior.ERROR
    )

    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        held = server.faults.hold(method="Publish", resource=topic, count=2)
        futures = [client.publish(topic, f"{i}".encode()) for i in range(3)]
        third = outcome(futures[2])  # over the limit while two are unanswered
        held.wait_arrived(2)
        held.release_all()
        return [outcome(f) for f in futures[:2]], third[0], third[1].split(" - ")[0]

    seen = run_all(
        make_client, local_server, observe,
        batch_settings=types.BatchSettings(max_messages=1),
        publisher_options=types.PublisherOptions(flow_control=limits),
    )
    assert same_for_all(seen) == (
        [("ok", ""), ("ok", "")], "FlowControlLimitError", "Flow control limits would be exceeded"
    )


def test_ordering_keys_with_hedging_off(make_client: Any, local_server: Any) -> None:
    """Ordered keys, a failure pausing its key, resume_publish: as the official client
    (ours by default follows the topic's labels, and never hedges keyed messages)."""
    options = types.PublisherOptions(enable_message_ordering=True)
    seen = {}
    for kind in ("official", "ours", "ours-off"):
        client = make_client(kind, publisher_options=options)
        topic = client.topic_path(PROJECT, f"ordered-{kind}")
        client.create_topic(name=topic)
        ok = [client.publish(topic, f"a{i}".encode(), ordering_key="a") for i in range(20)]
        [f.result(timeout=60) for f in ok]
        local_server.faults.add(
            method="Publish", resource=topic, error="INVALID_ARGUMENT", error_next=1
        )
        failed = outcome(client.publish(topic, b"b0", ordering_key="b"))
        paused = outcome(client.publish(topic, b"b1", ordering_key="b"))
        client.resume_publish(topic, "b")
        resumed = outcome(client.publish(topic, b"b2", ordering_key="b"))
        data = [m.data for m in local_server.messages(topic)]
        seen[kind] = (data, failed[0], paused[0], resumed)
    assert seen["ours"] == seen["official"] == seen["ours-off"]
    data, failed_type, paused_type, resumed = seen["official"]
    assert data == [f"a{i}".encode() for i in range(20)] + [b"b2"]
    assert (failed_type, paused_type, resumed) == (
        "InvalidArgument", "PublishToPausedOrderingKeyException", ("ok", "")
    )


def test_topic_path_is_the_official_one() -> None:
    assert PublisherClient.topic_path("p", "t") == pubsub_v1.PublisherClient.topic_path("p", "t")
    assert issubclass(pub_exceptions.MessageTooLargeError, ValueError)
