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
from dataclasses import dataclass
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
            kinds: tuple[str, ...] = KINDS, **kwargs: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for kind in kinds:
        client = make_client(kind, **kwargs)
        topic = client.topic_path(PROJECT, f"t-{kind}")
        before = local_server.counters.get("Publish")
        seen[kind] = observe(client, topic, local_server)
        seen[kind + ":publish-rpcs"] = local_server.counters.get("Publish") - before
    return seen


def same_for_all(seen: dict[str, Any]) -> Any:
    kinds = [kind for kind in KINDS if kind in seen]
    for suffix in ("", ":publish-rpcs"):
        values = {kind: seen[kind + suffix] for kind in kinds}
        for kind in kinds[1:]:
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


# -- every setting the official client takes (issue 39) ---------------------------------
# Each row: a BatchSettings / PublisherOptions / PublishFlowControl value at or past the
# edge of what the official client means, what it does with it (its own source, google-
# cloud-pubsub 2.x: publisher/client.py, publisher/_batch/thread.py,
# publisher/flow_controller.py), and `n` messages of `size` bytes published. Every kind
# must construct, publish, store and count Publish calls as the official client does.
MIB = 1024 * 1024
LATE = types.BatchSettings(max_latency=30.0)  # a batch goes when full or stopped


@dataclass(frozen=True)
class Setting:
    name: str
    official: str  # what the official client does with it
    kwargs: dict[str, Any]
    n: int = 5
    size: int = 100
    kinds: tuple[str, ...] = KINDS


def flow(**fields: Any) -> types.PublisherOptions:
    return types.PublisherOptions(flow_control=types.PublishFlowControl(**fields))


SETTINGS = [
    Setting("BatchSettings.max_bytes=20MiB", "capped to the 10 MB request limit when "
            "publishing: 4 MB messages go two to a request",
            {"batch_settings": types.BatchSettings(max_bytes=20 * MIB, max_latency=30.0)},
            n=3, size=4 * MIB),
    Setting("BatchSettings.max_bytes=0", "every message a request of its own",
            {"batch_settings": types.BatchSettings(max_bytes=0, max_latency=30.0)}),
    Setting("BatchSettings.max_bytes=-1", "every message a request of its own",
            {"batch_settings": types.BatchSettings(max_bytes=-1, max_latency=30.0)}),
    Setting("BatchSettings.max_bytes=1.5e6 (a float)", "compared as a number",
            {"batch_settings": types.BatchSettings(max_bytes=1.5e6, max_latency=30.0)}),
    Setting("BatchSettings.max_messages=0", "every message a request of its own",
            {"batch_settings": types.BatchSettings(max_messages=0, max_latency=30.0)}),
    Setting("BatchSettings.max_messages=-3", "every message a request of its own",
            {"batch_settings": types.BatchSettings(max_messages=-3, max_latency=30.0)}),
    Setting("BatchSettings.max_messages=3", "batches of max_messages - 1",
            {"batch_settings": types.BatchSettings(max_messages=3, max_latency=30.0)}),
    Setting("BatchSettings.max_latency=inf", "no timer: sent when stopped",
            {"batch_settings": types.BatchSettings(max_latency=float("inf"))}),
    Setting("BatchSettings.max_latency=nan", "no timer (NaN < inf is false): sent when "
            "stopped", {"batch_settings": types.BatchSettings(max_latency=float("nan"))}),
    Setting("PublishFlowControl.message_limit=0, block", "FlowControlLimitError on the "
            "future: it would block forever",
            {"publisher_options": flow(message_limit=0, limit_exceeded_behavior="block"),
             "batch_settings": LATE}),
    Setting("PublishFlowControl.byte_limit=-1, error", "FlowControlLimitError on the future",
            {"publisher_options": flow(byte_limit=-1, limit_exceeded_behavior="error"),
             "batch_settings": LATE}),
    Setting("PublishFlowControl.message_limit=2, 'error' (a string)", "compared with ==: "
            "FlowControlLimitError on the third message's future",
            {"publisher_options": flow(message_limit=2, limit_exceeded_behavior="error"),
             "batch_settings": LATE}, n=3),
    Setting("PublishFlowControl.limit_exceeded_behavior='bogus'", "taken; messages within "
            "the limits publish", {"publisher_options": flow(limit_exceeded_behavior="bogus"),
                                    "batch_settings": LATE}),
    Setting("PublisherOptions.timeout=None", "no per-call deadline",
            {"publisher_options": types.PublisherOptions(timeout=None), "batch_settings": LATE}),
    Setting("PublisherOptions.timeout=5 (a number)", "a 5 s deadline",
            {"publisher_options": types.PublisherOptions(timeout=5), "batch_settings": LATE}),
    Setting("PublisherOptions.retry=None", "one attempt",
            {"publisher_options": types.PublisherOptions(retry=None), "batch_settings": LATE}),
    # An explicit HedgingSettings with ordering is refused by design (as the Java and
    # Go clients refuse it): ordering is compared without it.
    Setting("PublisherOptions.enable_message_ordering=1 (truthy)", "ordering on",
            {"publisher_options": types.PublisherOptions(enable_message_ordering=1),
             "batch_settings": LATE}, kinds=KINDS[:3]),
    Setting("PublisherOptions.enable_open_telemetry_tracing=True", "tracing on",
            {"publisher_options": types.PublisherOptions(enable_open_telemetry_tracing=True),
             "batch_settings": LATE}),
]


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.name for s in SETTINGS])
def test_every_setting_the_official_client_takes(
    make_client: Any, local_server: Any, setting: Setting
) -> None:
    def observe(client: Any, topic: str, server: Any) -> Any:
        client.create_topic(name=topic)
        futures = [client.publish(topic, bytes([65 + i]) * setting.size)
                   for i in range(setting.n)]
        client.stop()  # sends what is queued; a batch waiting for no timer goes now
        # The error's type and sentence (the official load figures add reservations).
        return ([(kind, text.split(" - ")[0]) for kind, text in map(outcome, futures)],
                len(server.messages(topic)))

    seen = run_all(make_client, local_server, observe, setting.kinds, **setting.kwargs)
    outcomes, stored = same_for_all(seen)
    failed = [o for o in outcomes if o[0] != "ok"]
    assert stored == setting.n - len(failed)
    if "FlowControlLimitError" in setting.official:
        assert failed and {o[0] for o in failed} == {"FlowControlLimitError"}
    else:
        assert failed == []
    requests = {"capped": 2, "of its own": setting.n, "max_messages - 1": 3}
    expected = next((n for key, n in requests.items() if key in setting.official), None)
    if expected is not None:
        assert seen["official:publish-rpcs"] == expected


def test_a_negative_max_latency_sends_at_once(make_client: Any, local_server: Any) -> None:
    """The one value read differently, on purpose: the official client takes
    max_latency=-1 and its timer thread then dies (time.sleep refuses a negative
    length), so its batches wait until full or stopped; ours sends them at once."""
    settings = types.BatchSettings(max_latency=-1)
    for kind in KINDS[1:]:
        client = make_client(kind, batch_settings=settings)
        topic = client.topic_path(PROJECT, f"negative-{kind}")
        client.create_topic(name=topic)
        assert outcome(client.publish(topic, b"now")) == ("ok", "")  # without a stop


def test_a_behavior_that_is_none_of_the_three_is_said_when_a_limit_is_reached(
    make_client: Any, local_server: Any
) -> None:
    """The official client takes limit_exceeded_behavior='bogus' and fails the
    publish that goes over a limit with an AssertionError (an `assert`: under
    python -O it blocks instead); ours raises ValueError naming the value."""
    options = flow(message_limit=1, limit_exceeded_behavior="bogus")
    for kind in KINDS[1:]:
        client = make_client(kind, publisher_options=options, batch_settings=LATE)
        topic = client.topic_path(PROJECT, f"bogus-{kind}")
        client.create_topic(name=topic)
        first = client.publish(topic, b"within")
        with pytest.raises(ValueError, match="'bogus' is none of 'ignore', 'block' and"):
            client.publish(topic, b"over")
        client.stop()
        assert outcome(first) == ("ok", "")
