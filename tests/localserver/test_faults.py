"""Fault and latency injection, and RPC counters, as a client sees them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from google.api_core import exceptions
from google.api_core import retry as retries

from reconciler.localserver.faults.faultspec import parse_duration, parse_fault_spec

T = "projects/proj-alpha/topics/orders"
OTHER = "projects/proj-alpha/topics/other"
NO_RETRY = retries.Retry(predicate=lambda exc: False)


def test_error_on_one_resource_only(publisher_client: Any, local_server: Any) -> None:
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(name=OTHER)
    local_server.faults.add(method="UpdateTopic", error="PERMISSION_DENIED", resource=T)
    request = {"update_mask": {"paths": ["labels"]}}
    with pytest.raises(exceptions.PermissionDenied, match="injected fault"):
        publisher_client.update_topic(request={**request, "topic": {"name": T}})
    publisher_client.update_topic(request={**request, "topic": {"name": OTHER}})
    publisher_client.get_topic(topic=T)  # other methods unaffected
    assert local_server.counters.get("UpdateTopic") == 2


def test_each_rule_logs_its_first_match_once(
    publisher_client: Any, local_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A user who injects a fault sees that it matched (and on what); a rule whose
    resource matches nothing says nothing; later matches add no line."""
    publisher_client.create_topic(name=T)
    local_server.faults.add(method="GetTopic", error="NOT_FOUND", error_next=1, resource=T)
    local_server.faults.add(method="GetTopic", delay=0.001, resource=OTHER + "-typo")
    with caplog.at_level("WARNING", logger="reconciler.localserver.faults.injection"):
        with pytest.raises(exceptions.NotFound):
            publisher_client.get_topic(topic=T, retry=NO_RETRY)
        publisher_client.get_topic(topic=T)
    lines = [r.getMessage() for r in caplog.records if "matched its first call" in r.getMessage()]
    assert lines == [
        f"local server: fault GetTopic:error=NOT_FOUND,error_next=1,resource={T} matched "
        f"its first call (GetTopic on {T}); later ones are not logged"
    ]


def test_error_next_n_then_success_with_client_retry(
    publisher_client: Any, local_server: Any
) -> None:
    publisher_client.create_topic(name=T)
    local_server.counters.reset()
    local_server.faults.add(method="GetTopic", error="UNAVAILABLE", error_next=2)
    # GetTopic's default retry covers UNAVAILABLE: two failures, then success.
    assert publisher_client.get_topic(topic=T).name == T
    assert local_server.counters.get("GetTopic") == 3


def test_error_next_not_found(publisher_client: Any, local_server: Any) -> None:
    publisher_client.create_topic(name=T)
    local_server.faults.add(method="GetTopic", error="NOT_FOUND", error_next=1)
    with pytest.raises(exceptions.NotFound):
        publisher_client.get_topic(topic=T)
    assert publisher_client.get_topic(topic=T).name == T


def test_error_fraction(publisher_client: Any, local_server: Any) -> None:
    publisher_client.create_topic(name=T)
    local_server.faults.add(method="GetTopic", error="UNAVAILABLE", error_fraction=0.3)
    failures = 0
    for _ in range(200):
        try:
            publisher_client.get_topic(topic=T, retry=NO_RETRY)
        except exceptions.ServiceUnavailable:
            failures += 1
    assert 20 < failures < 110  # seeded; about 60 expected
    assert local_server.counters.get("GetTopic") == 200


def test_wildcard_and_clear(publisher_client: Any, local_server: Any) -> None:
    local_server.faults.add(method="*", error="INTERNAL")
    with pytest.raises(exceptions.InternalServerError):
        publisher_client.create_topic(name=T, retry=NO_RETRY)
    with pytest.raises(exceptions.InternalServerError):
        list(publisher_client.list_topics(project="projects/proj-alpha", retry=NO_RETRY))
    local_server.faults.clear()
    assert publisher_client.create_topic(name=T).name == T
    snapshot = local_server.counters.snapshot()
    assert snapshot["CreateTopic"] == 2 and snapshot["ListTopics"] == 1


def test_delay_does_not_block_other_calls(publisher_client: Any, local_server: Any) -> None:
    """A slow call is held on its own worker: calls on other resources complete while
    it is still pending (ordering, not wall-clock)."""
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(name=OTHER)
    release = threading.Event()
    local_server.faults.add(method="GetTopic", delay=1.0, resource=T)
    done: list[str] = []

    def slow() -> None:
        publisher_client.get_topic(topic=T)
        done.append("slow")
        release.set()

    worker = threading.Thread(target=slow)
    worker.start()
    for _ in range(20):
        publisher_client.get_topic(topic=OTHER)
    assert done == []  # the slow call has not finished; 20 others did
    assert release.wait(30)
    worker.join()
    assert done == ["slow"]


def test_latency_tail_applies_to_a_fraction(local_server: Any) -> None:
    local_server.faults.add(method="Publish", delay=0.001, tail_fraction=0.02, tail_delay=2.0)
    delays = [local_server.faults.decide("Publish", None)[0] for _ in range(5000)]
    tail = sum(1 for d in delays if d > 1.0)
    assert 50 <= tail <= 160  # ~100 of 5000
    assert all(d >= 0.001 for d in delays)


def test_random_delay_range(local_server: Any) -> None:
    local_server.faults.add(method="GetTopic", delay=0.01, delay_max=0.02)
    delays = [local_server.faults.decide("GetTopic", None)[0] for _ in range(200)]
    assert all(0.01 <= d <= 0.02 for d in delays) and len(set(delays)) > 100
    assert local_server.faults.decide("Publish", None) == (0.0, None)


def test_orgpolicy_methods_are_counted_and_faultable(
    orgpolicy_client: Any, local_server: Any
) -> None:
    name = "projects/proj-alpha/policies/gcp.resourceLocations"
    local_server.faults.add(method="GetEffectivePolicy", error="PERMISSION_DENIED", error_next=1)
    with pytest.raises(exceptions.PermissionDenied):
        orgpolicy_client.get_effective_policy(name=name)
    orgpolicy_client.get_effective_policy(name=name)
    assert local_server.counters.get("GetEffectivePolicy") == 2


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "Publish:delay=5ms,tail_fraction=0.02,tail_delay=2s",
            {"method": "Publish", "delay": 0.005, "tail_fraction": 0.02, "tail_delay": 2.0},
        ),
        (
            "UpdateTopic:error=PERMISSION_DENIED,resource=projects/p/topics/t",
            {
                "method": "UpdateTopic",
                "error": "PERMISSION_DENIED",
                "resource": "projects/p/topics/t",
            },
        ),
        (
            "GetTopic:error=NOT_FOUND,error_next=1",
            {"method": "GetTopic", "error": "NOT_FOUND", "error_next": 1},
        ),
        ("*:delay=0.02", {"method": "*", "delay": 0.02}),
        (
            "UpdateTopic:error=UNAVAILABLE,error_fraction=0.2",
            {"method": "UpdateTopic", "error": "UNAVAILABLE", "error_fraction": 0.2},
        ),
    ],
)
def test_parse_fault_spec(spec: str, expected: dict[str, Any], local_server: Any) -> None:
    assert parse_fault_spec(spec) == expected
    local_server.faults.add(**parse_fault_spec(spec))


@pytest.mark.parametrize(
    "spec",
    [
        "",
        ":delay=1",
        "Publish:delay",
        "Publish:bogus=1",
        "Publish:delay=fast",
        "Publish:error_next=x",
    ],
)
def test_parse_fault_spec_rejects(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_fault_spec(spec)


def test_add_rejects_bad_rules(local_server: Any) -> None:
    with pytest.raises(ValueError, match="unknown gRPC status code"):
        local_server.faults.add(method="Publish", error="NOPE")
    with pytest.raises(ValueError, match="between 0 and 1"):
        local_server.faults.add(method="Publish", error="INTERNAL", error_fraction=2)
    with pytest.raises(ValueError, match="need error"):
        local_server.faults.add(method="Publish", error_next=1)
    assert parse_duration("1.5s") == 1.5 and parse_duration("250ms") == 0.25


# -- holds: calls parked until the test answers them ----------------------------------


@pytest.fixture
def background() -> Iterator[ThreadPoolExecutor]:
    """Threads for client calls that the server holds."""
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="client") as pool:
        yield pool


def test_held_call_does_not_return_until_released(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    publisher_client.create_topic(name=OTHER)
    held = local_server.faults.hold(method="GetTopic", resource=T)
    slow = background.submit(publisher_client.get_topic, topic=T, retry=NO_RETRY)
    (call,) = held.wait_arrived(1)
    assert (call.method, call.resource, call.outcome) == ("GetTopic", T, None)
    # Other topics, and the next call on T (the hold caught only one), go through.
    assert publisher_client.get_topic(topic=OTHER).name == OTHER
    assert publisher_client.get_topic(topic=T).name == T
    assert not slow.done()
    assert call.release() is True
    assert slow.result(timeout=30).name == T
    assert call.outcome == "released"
    assert call.release() is False and call.fail("INTERNAL") is False  # answered once
    assert held.arrived() == [call] and not held.active
    assert local_server.counters.get("GetTopic") == 3


def test_held_calls_arrive_in_order_and_each_is_answered_on_its_own(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="Publish", count=2, resource=T)
    first = background.submit(
        publisher_client.publish, topic=T, messages=[{"data": b"one"}], retry=NO_RETRY
    )
    calls = held.wait_arrived(1)
    second = background.submit(
        publisher_client.publish, topic=T, messages=[{"data": b"two"}], retry=NO_RETRY
    )
    calls = held.wait_arrived(2)
    assert [c.number for c in calls] == [1, 2]
    calls[1].release()
    (two_id,) = second.result(timeout=30).message_ids
    assert not first.done()
    assert [(m.data, m.message_id) for m in local_server.messages(T)] == [(b"two", two_id)]
    calls[0].release()
    (one_id,) = first.result(timeout=30).message_ids
    assert [m.message_id for m in local_server.messages(T)] == [two_id, one_id]


def test_fail_answers_with_the_code_and_message(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="Publish")
    pending = background.submit(
        publisher_client.publish, topic=T, messages=[{"data": b"x"}], retry=NO_RETRY
    )
    (call,) = held.wait_arrived(1)
    call.fail("PERMISSION_DENIED", "User not authorized to publish")
    with pytest.raises(exceptions.PermissionDenied, match="User not authorized to publish"):
        pending.result(timeout=30)
    assert call.outcome == "PERMISSION_DENIED"
    assert local_server.messages(T) == []  # the handler never ran


def test_a_failed_held_call_is_retried_by_the_client_like_a_real_error(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="GetTopic")
    pending = background.submit(publisher_client.get_topic, topic=T)  # default retry
    held.wait_arrived(1)[0].fail("UNAVAILABLE", "try again")
    assert pending.result(timeout=30).name == T
    assert local_server.counters.get("GetTopic") == 2


def test_release_all_ends_the_hold(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="GetTopic", count=5)
    pending = background.submit(publisher_client.get_topic, topic=T, retry=NO_RETRY)
    held.wait_arrived(1)
    assert held.release_all() == 1
    assert pending.result(timeout=30).name == T
    # The four calls the hold had left pass untouched.
    for _ in range(4):
        publisher_client.get_topic(topic=T, retry=NO_RETRY)
    assert len(held.arrived()) == 1 and local_server.faults.holds() == []


def test_clear_releases_held_calls_to_the_handler(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="Publish", count=3)
    pending = background.submit(
        publisher_client.publish, topic=T, messages=[{"data": b"x"}], retry=NO_RETRY
    )
    (call,) = held.wait_arrived(1)
    local_server.faults.clear()
    (message_id,) = pending.result(timeout=30).message_ids
    assert call.outcome == "released"
    assert [m.message_id for m in local_server.messages(T)] == [message_id]
    publisher_client.publish(topic=T, messages=[{"data": b"y"}], retry=NO_RETRY)
    assert len(held.arrived()) == 1


def test_stop_answers_every_held_call(
    publisher_client: Any, local_server: Any, background: ThreadPoolExecutor
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="GetTopic", count=2)
    pending = [
        background.submit(publisher_client.get_topic, topic=T, retry=NO_RETRY) for _ in range(2)
    ]
    calls = held.wait_arrived(2)
    publisher_client.get_topic(topic=T, retry=NO_RETRY)  # the full hold lets it pass
    assert local_server.faults.holds() == [held]  # and still answers for its calls
    local_server.stop(grace=None)
    for future in pending:
        # UNAVAILABLE from the hold, or the shutdown's own status if it got there first.
        with pytest.raises((exceptions.ServiceUnavailable, exceptions.Cancelled)):
            future.result(timeout=30)
    assert [c.outcome for c in calls] == ["UNAVAILABLE", "UNAVAILABLE"]


def test_a_forgotten_hold_lets_the_call_through_after_its_cap(
    publisher_client: Any, local_server: Any
) -> None:
    publisher_client.create_topic(name=T)
    held = local_server.faults.hold(method="GetTopic", max_hold=0.2)
    assert publisher_client.get_topic(topic=T, retry=NO_RETRY).name == T
    assert [c.outcome for c in held.arrived()] == ["expired"]


def test_hold_checks_its_arguments(local_server: Any) -> None:
    with pytest.raises(ValueError, match="count"):
        local_server.faults.hold(method="Publish", count=0)
    with pytest.raises(ValueError, match="max_hold"):
        local_server.faults.hold(method="Publish", max_hold=0)
    held = local_server.faults.hold(method="Publish", count=2)
    with pytest.raises(ValueError, match="cannot catch 3"):
        held.wait_arrived(3)
    with pytest.raises(TimeoutError, match="only 0 of 1 held Publish calls"):
        held.wait_arrived(1, timeout=0.01)
    with pytest.raises(ValueError, match="unknown gRPC status code"):
        held.fail_all("NOPE")


def test_add_and_hold_refuse_methods_the_server_does_not_answer(local_server: Any) -> None:
    with pytest.raises(ValueError, match="did you mean 'UpdateTopic'"):
        local_server.faults.add(method="UpdateTopics", error="INTERNAL")
    with pytest.raises(ValueError, match="unknown method 'Pubish'"):
        local_server.faults.hold(method="Pubish")
    assert local_server.faults.rules() == [] and local_server.faults.holds() == []


def test_parse_checks_methods_only_when_given_them() -> None:
    assert parse_fault_spec("Anything:delay=1ms")["method"] == "Anything"
    with pytest.raises(ValueError, match="unknown method 'Anything'"):
        parse_fault_spec("Anything:delay=1ms", ["Publish"])
