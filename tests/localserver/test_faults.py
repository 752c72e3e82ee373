"""Fault and latency injection, and RPC counters, as a client sees them."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.api_core import exceptions
from google.api_core import retry as retries

from reconciler.localserver.faults import parse_duration, parse_fault_spec

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
