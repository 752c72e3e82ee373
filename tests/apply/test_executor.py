"""The executor against an in-memory backend: minimal calls, isolation, stop, prune."""

from __future__ import annotations

import threading
from typing import Any

from apply_fakes import CodedError, FakeBackend, change, quick_guard

from reconciler.apply.executor import Executor, matches
from reconciler.apply.result import ApplyResult
from reconciler.apply.retry import RetryPolicy
from reconciler.plan.model import ResourceChange

OWNED = {"reconcile-managed": "true"}
QUICK_READBACK = RetryPolicy(initial=0.001, maximum=0.002, max_attempts=3, deadline=1.0)


def run(backend: FakeBackend, changes: list[ResourceChange], **kw: Any) -> ApplyResult:
    kw.setdefault("readback", QUICK_READBACK)
    return Executor(backend, kw.pop("guard", quick_guard()), **kw).run(changes)


def test_no_op_makes_no_call() -> None:
    backend = FakeBackend({"projects/p/topics/a": {"labels": {}}})
    result = run(backend, [change("no-op", "projects/p/topics/a")])
    assert sum(backend.calls.values()) == 0
    assert result.unchanged == 1 and result.results == []


def test_update_sends_the_plan_mask_only() -> None:
    backend = FakeBackend({"projects/p/topics/a": {"labels": {"x": "1"}, "retention": "1d"}})
    result = run(backend, [change("update", "projects/p/topics/a", labels={"x": "2"})])
    assert backend.calls == {"UpdateTopic": 1}
    assert backend.topics["projects/p/topics/a"] == {"labels": {"x": "2"}, "retention": "1d"}
    assert [r.status for r in result.results] == ["applied"]


def test_create_reads_back_and_tolerates_a_cached_not_found() -> None:
    backend = FakeBackend()
    hidden = {"n": 2}

    original = backend.get_topic

    def flaky_get(name: str):  # type: ignore[no-untyped-def]
        if hidden["n"]:
            hidden["n"] -= 1
            backend.calls["GetTopic"] += 1
            return None
        return original(name)

    backend.get_topic = flaky_get  # type: ignore[method-assign]
    result = run(backend, [change("create", "projects/p/topics/new", labels=OWNED)])
    assert result.results[0].status == "applied"
    assert result.results[0].notes == []
    assert backend.calls["CreateTopic"] == 1 and backend.calls["GetTopic"] == 3


def test_transient_errors_are_retried_permanent_ones_isolated() -> None:
    names = [f"projects/p/topics/t{i}" for i in range(6)]
    backend = FakeBackend({n: {"labels": {}} for n in names})
    backend.fail("UpdateTopic", names[0], CodedError("UNAVAILABLE", "blip"))
    backend.fail("UpdateTopic", names[1], CodedError("PERMISSION_DENIED", "denied here"))
    result = run(backend, [change("update", n, labels={"k": "v"}) for n in names], concurrency=3)
    status = {r.address: r for r in result.results}
    assert status[names[0]].status == "applied" and status[names[0]].attempts == 2
    assert status[names[1]].status == "failed"
    assert status[names[1]].attempts == 1
    assert "PERMISSION_DENIED" in (status[names[1]].error or "")
    assert "denied here" in (status[names[1]].error or "")
    assert all(status[n].status == "applied" for n in names[2:])
    assert result.failed


def test_create_already_existing_with_declared_settings_counts_as_done() -> None:
    backend = FakeBackend({"projects/p/topics/a": {"labels": {**OWNED, "other": "x"}}})
    result = run(backend, [change("create", "projects/p/topics/a", labels=OWNED)])
    assert result.results[0].status == "applied"
    assert "already existed" in result.results[0].notes[0]


def test_create_already_existing_with_other_settings_fails() -> None:
    backend = FakeBackend({"projects/p/topics/a": {"labels": {"team": "other"}}})
    result = run(backend, [change("create", "projects/p/topics/a", labels=OWNED)])
    assert result.results[0].status == "failed"
    assert "ALREADY_EXISTS" in (result.results[0].error or "")


def test_delete_rechecks_the_ownership_label_on_the_live_topic() -> None:
    backend = FakeBackend(
        {"projects/p/topics/owned": {"labels": OWNED}, "projects/p/topics/foreign": {"labels": {}}}
    )
    changes = [
        change("delete", "projects/p/topics/owned"),
        change("delete", "projects/p/topics/foreign"),
    ]
    result = run(backend, changes, allow_delete=True)
    by = {r.address: r for r in result.results}
    assert by["projects/p/topics/owned"].status == "applied"
    assert by["projects/p/topics/foreign"].status == "failed"
    assert "ownership label" in (by["projects/p/topics/foreign"].error or "")
    assert "projects/p/topics/foreign" in backend.topics
    assert backend.calls["DeleteTopic"] == 1


def test_delete_needs_prune() -> None:
    backend = FakeBackend({"projects/p/topics/owned": {"labels": OWNED}})
    result = run(backend, [change("delete", "projects/p/topics/owned")])
    assert result.results[0].status == "failed"
    assert backend.calls["DeleteTopic"] == 0


def test_stop_lets_in_flight_calls_finish_and_starts_no_new_one() -> None:
    names = [f"projects/p/topics/t{i}" for i in range(10)]
    backend = FakeBackend({n: {"labels": {}} for n in names})
    stop = threading.Event()

    def on_call(method: str, name: str) -> None:
        if name == names[2]:
            stop.set()  # Ctrl-C arrives while this call is in flight

    backend.on_call = on_call
    guard = quick_guard(stop=stop)
    result = run(
        backend, [change("update", n, labels={"k": "v"}) for n in names], guard=guard, concurrency=1
    )
    statuses = [r.status for r in result.results]
    assert statuses[:3] == ["applied"] * 3  # the in-flight one completed
    assert statuses[3:] == ["not-attempted"] * 7
    assert backend.calls["UpdateTopic"] == 3
    assert result.interrupted


def test_matches_is_a_subset_check_on_labels_and_a_set_check_on_regions() -> None:
    declared = {
        "labels": {"a": "1"},
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1", "us-central1"]},
    }
    live = {
        "labels": {"a": "1", "b": "2"},
        "message_storage_policy": {
            "allowed_persistence_regions": ["us-central1", "us-east1"],
            "enforce_in_transit": False,
        },
    }
    assert matches(declared, live)
    live["labels"] = {"a": "2"}
    assert not matches(declared, live)
