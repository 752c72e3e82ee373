"""The executor over the real clients and the local server: minimal calls, isolation,
stop, prune. Plans are made by `make_plan`; faults on the server play the service's
transient and permanent errors; results are read from the executor, the live topics
and the server's RPC counters."""

from __future__ import annotations

import threading
from typing import Any

from apply_support import PROJECT, make
from google.api_core import exceptions as gexc
from google.protobuf import duration_pb2, field_mask_pb2
from google.pubsub_v1.types import MessageStoragePolicy, Topic

from reconciler.apply.executor import Executor, matches
from reconciler.apply.guard import GuardedBackend
from reconciler.apply.result import TopicResults
from reconciler.apply.retry import AdminRetry
from reconciler.codec import replace
from reconciler.ownership import PLAN_LABEL, plan_marker
from reconciler.plan.model import Plan

OWNED = {"reconcile-managed": "true", "reconcile-owner": "default"}
QUICK_READBACK = AdminRetry(initial=0.001, maximum=0.002, max_attempts=3, deadline=1.0)


def name(topic: str) -> str:
    return f"projects/{PROJECT}/topics/{topic}"


def seed(client: Any, topic: str, labels: dict[str, str], **fields: Any) -> None:
    client.create_topic(request=Topic(name=name(topic), labels=labels, **fields))


def live(client: Any, topic: str) -> Topic | None:
    try:
        found: Topic = client.get_topic(request={"topic": name(topic)})
    except gexc.NotFound:
        return None
    return found


def marked(plan: Plan) -> dict[str, str]:
    """The label the plan's requests set to its marker (`Request.marker_label`)."""
    return {PLAN_LABEL: plan_marker(plan.digest)}


def labels_of(client: Any, topic: str) -> dict[str, str]:
    found = live(client, topic)
    assert found is not None, f"{topic} is not live"
    return dict(found.labels)


def run(backend: GuardedBackend, plan: Plan, **kw: Any) -> TopicResults:
    """Execute `plan` the way `reconcile apply` does (through the guarded backend),
    with a quick read-back."""
    kw.setdefault("readback", QUICK_READBACK)
    return Executor(backend, **kw).run(plan)


def test_no_op_makes_no_call(local_server: Any, client: Any, backend: GuardedBackend) -> None:
    seed(client, "orders", OWNED)
    plan = make(backend, {"orders": {}})
    assert [rc.action for rc in plan.resource_changes] == ["no-op"]
    local_server.counters.reset()
    result = run(backend, plan)
    assert local_server.counters.total() == 0
    assert result.unchanged == 1 and result.results == []


def test_update_sends_the_plan_mask_only(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    day = duration_pb2.Duration(seconds=86400)
    seed(client, "orders", {"x": "1", **OWNED}, message_retention_duration=day)
    plan = make(backend, {"orders": {"x": "2"}})
    assert plan.resource_changes[0].request is not None
    assert plan.resource_changes[0].request.update_mask == ["labels"]
    local_server.counters.reset()
    result = run(backend, plan)
    assert local_server.counters.snapshot() == {"GetTopic": 1, "UpdateTopic": 1}  # fresh labels
    topic = live(client, "orders")
    assert topic is not None
    assert dict(topic.labels) == {"x": "2", **OWNED, **marked(plan)}
    assert topic.message_retention_duration.total_seconds() == 86400  # not in the mask
    assert [r.status for r in result.results] == ["applied"]


def test_create_reads_back_and_tolerates_a_cached_not_found(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    plan = make(backend, {"new": {}})
    assert [rc.action for rc in plan.resource_changes] == ["create"]
    # The first two read-backs answer a (cached) NOT_FOUND, as Pub/Sub briefly may.
    local_server.faults.add(
        method="GetTopic", error="NOT_FOUND", error_next=2, resource=name("new")
    )
    local_server.counters.reset()
    result = run(backend, plan)
    assert result.results[0].status == "applied"
    assert result.results[0].notes == []
    assert (
        local_server.counters.get("CreateTopic") == 1 and local_server.counters.get("GetTopic") == 3
    )
    assert labels_of(client, "new") == {**OWNED, **marked(plan)}


def test_transient_errors_are_retried_permanent_ones_isolated(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    topics = [f"topic-{i}" for i in range(6)]
    for t in topics:
        seed(client, t, OWNED)
    plan = make(backend, {t: {"k": "v"} for t in topics})
    local_server.faults.add(
        method="UpdateTopic", error="UNAVAILABLE", error_next=1, resource=name("topic-0")
    )
    local_server.faults.add(
        method="UpdateTopic",
        error="PERMISSION_DENIED",
        resource=name("topic-1"),
        message="denied here",
    )
    local_server.counters.reset()
    result = run(backend, plan, concurrency=3)
    status = {r.address: r for r in result.results}
    t0, t1 = status[name("topic-0")], status[name("topic-1")]
    assert t0.status == "applied" and t0.attempts == 2
    assert t1.status == "failed"
    assert t1.attempts == 1
    assert "PERMISSION_DENIED" in (t1.error or "")
    assert "denied here" in (t1.error or "")
    assert all(status[name(t)].status == "applied" for t in topics[2:])
    assert result.failed
    # 6 updates + the one retry of t0; the client library retried nothing by itself.
    assert local_server.counters.get("UpdateTopic") == 7
    assert labels_of(client, "topic-1") == OWNED
    assert all(
        labels_of(client, t) == {"k": "v", **OWNED, **marked(plan)}
        for t in topics if t != "topic-1"
    )


def test_create_already_existing_with_declared_settings_counts_as_done(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    plan = make(backend, {"orders": {}})
    seed(client, "orders", {**OWNED, "other": "x"})  # an earlier, killed run got this far
    local_server.counters.reset()
    result = run(backend, plan)
    assert result.results[0].status == "applied"
    assert "already existed" in result.results[0].notes[0]
    assert (
        local_server.counters.get("CreateTopic") == 1
        and local_server.counters.get("UpdateTopic") == 0
    )
    assert labels_of(client, "orders") == {**OWNED, "other": "x"}


def test_create_already_existing_with_other_settings_fails(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    plan = make(backend, {"orders": {}})
    seed(client, "orders", {"team": "other"})  # someone else's topic, created since the plan
    result = run(backend, plan)
    assert result.results[0].status == "failed"
    assert "ALREADY_EXISTS" in (result.results[0].error or "")
    assert labels_of(client, "orders") == {"team": "other"}


def test_delete_rechecks_the_ownership_label_on_the_live_topic(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    for t in ("kept", "owned", "foreign"):
        seed(client, t, OWNED)
    plan = make(backend, {"kept": {}}, prune=True)
    assert {rc.address: rc.action for rc in plan.resource_changes} == {
        name("kept"): "no-op",
        name("owned"): "delete",
        name("foreign"): "delete",
    }
    # Between plan and apply, someone takes "foreign" out of reconcile's hands.
    client.update_topic(
        request={
            "topic": Topic(name=name("foreign"), labels={}),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )
    local_server.counters.reset()
    result = run(backend, plan)
    by = {r.address: r for r in result.results}
    assert by[name("owned")].status == "applied"
    assert by[name("foreign")].status == "failed"
    assert "no longer owned by this spec tree" in (by[name("foreign")].error or "")
    assert live(client, "foreign") is not None
    assert live(client, "owned") is None
    assert local_server.counters.get("DeleteTopic") == 1


def test_delete_needs_prune(local_server: Any, client: Any, backend: GuardedBackend) -> None:
    seed(client, "kept", OWNED)
    seed(client, "owned", OWNED)
    plan = replace(make(backend, {"kept": {}}, prune=True), prune=False)  # a delete anyway
    local_server.counters.reset()
    result = run(backend, plan)
    assert [r.status for r in result.results] == ["failed"]
    assert "--prune" in (result.results[0].error or "")
    assert local_server.counters.total() == 0
    assert live(client, "owned") is not None


def test_stop_lets_in_flight_calls_finish_and_starts_no_new_one(
    local_server: Any, client: Any, backend: GuardedBackend
) -> None:
    topics = [f"topic-{i}" for i in range(10)]
    for t in topics:
        seed(client, t, OWNED)
    plan = make(backend, {t: {"k": "v"} for t in topics})
    # The third update is slow; Ctrl-C arrives while it is in flight.
    local_server.faults.add(method="UpdateTopic", delay=1.0, resource=name("topic-2"))
    local_server.counters.reset()
    stop, done = backend.guard.stop, threading.Event()

    def ctrl_c_once_the_third_call_arrived() -> None:
        while not done.is_set():
            if local_server.counters.get("UpdateTopic") >= 3:
                stop.set()
                return
            done.wait(0.005)

    watcher = threading.Thread(target=ctrl_c_once_the_third_call_arrived, daemon=True)
    watcher.start()
    try:
        result = run(backend, plan, concurrency=1)
    finally:
        done.set()
        watcher.join()
    statuses = [r.status for r in result.results]
    assert statuses[:3] == ["applied"] * 3  # the in-flight one completed
    assert statuses[3:] == ["not-attempted"] * 7
    assert local_server.counters.get("UpdateTopic") == 3
    assert result.interrupted
    assert labels_of(client, "topic-2") == {"k": "v", **OWNED, **marked(plan)}
    assert labels_of(client, "topic-3") == OWNED


def test_matches_is_a_subset_check_on_labels_and_a_set_check_on_regions(
    client: Any, backend: GuardedBackend
) -> None:
    seed(
        client,
        "orders",
        {"a": "1", "b": "2"},
        message_storage_policy=MessageStoragePolicy(
            allowed_persistence_regions=["us-central1", "us-east1"], enforce_in_transit=False
        ),
    )
    declared = {
        "labels": {"a": "1"},
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1", "us-central1"]},
    }
    observed = backend.get_topic(name("orders"))
    assert observed is not None
    assert matches(declared, observed.body)
    client.update_topic(
        request={
            "topic": Topic(name=name("orders"), labels={"a": "2"}),
            "update_mask": field_mask_pb2.FieldMask(paths=["labels"]),
        }
    )
    observed = backend.get_topic(name("orders"))
    assert observed is not None
    assert not matches(declared, observed.body)
