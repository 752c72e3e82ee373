"""Read-ahead: a second process reads the live topics while the specs are validated.
The plan it makes is the plan reading in one process makes, errors included."""

from __future__ import annotations

import json
import marshal
import socket
from pathlib import Path
from typing import Any

import pytest

from reconciler.backends.base import GaugeQuery, TargetOptions
from reconciler.backends.connect import open_backend
from reconciler.errors import BackendError, UsageError
from reconciler.localserver import CLIENT_REGION_KEY
from reconciler.plan.readahead import START_ENV, ReadAhead, ReadAheadReads, start_threshold
from tests.specs_support import owner_doc, topic_doc

DEFAULTS_AND_TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Defaults
spec: {project: proj-c}
---
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {name: audit}
"""


def test_the_child_reads_what_the_backend_reads(local_server: Any, seed: Any) -> None:
    seed("orders", {"team": "a", "zeta": "1", "alpha": "2"}, ["us-east1", "europe-west1"], True)
    seed("refunds", {"team": "b"}, project="proj-b")
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=2)
    read_ahead.document("proj-a")
    assert read_ahead.proc is None  # one document: not yet
    read_ahead.document(None)
    assert read_ahead.proc is not None
    backend = read_ahead.served(["proj-a", "proj-b", "proj-c"])
    assert isinstance(backend, ReadAheadReads)
    proc = read_ahead.proc
    assert proc is not None and proc.poll() is None  # it stays, for the gauges a plan asks
    direct = open_backend(TargetOptions(emulator=local_server.address))
    try:
        for project in ("proj-a", "proj-b", "proj-c"):
            assert backend.list_topics(project) == direct.list_topics(project)
            assert backend.effective_policy(project) == direct.effective_policy(project)
            assert backend.list_subscriptions(project) == direct.list_subscriptions(project)
        assert backend.info == direct.info
        local_server.counters.reset()
        query = GaugeQuery("proj-a", "topic", ("orders",))
        assert backend.stored([query]) == direct.stored([query])
        # One PromQL query each (every gauge at once), none through ListTimeSeries.
        assert local_server.counters.get("PromQLQuery") == 2  # 1 by the child, 1 here
        assert local_server.counters.get("ListTimeSeries") == 0
    finally:
        direct.close()
    [orders] = backend.list_topics("proj-a")
    assert list(orders.shape.labels) == ["alpha", "team", "zeta"]  # sorted by key
    backend.close()
    assert read_ahead.proc is None and proc.poll() is not None  # closing stops it


def plan_json(run_cli: Any, root: Path, *args: str) -> dict[str, Any]:
    result = run_cli("plan", str(root), *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "note: reading the live topics" not in result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    for volatile in ("created_at", "digest"):
        data.pop(volatile)
    return data


def test_read_ahead_makes_the_same_plan(
    run_cli: Any, local_server: Any, specs: Any, seed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed("orders", {"team": "old", "reconcile-managed": "true"})
    seed("stray", {"reconcile-managed": "true", "reconcile-owner": "team-a"})
    seed("audit", {"team": "c"}, ["us-east1"], project="proj-c")
    root = specs(
        topic_doc("orders", project="proj-a", labels={"team": "a"}),
        topic_doc("refunds", project="proj-b"),
    )
    (root / "c").mkdir()
    (root / "c" / "topics.yaml").write_text(DEFAULTS_AND_TOPIC)  # its project from Defaults
    (root / "owner.yaml").write_text(owner_doc("team-a"))  # prune needs an owner
    plans = []
    for setting in ("0", "off"):
        monkeypatch.setenv(START_ENV, setting)
        plans.append(plan_json(run_cli, root, "--emulator", local_server.address, "--prune"))
    assert plans[0] == plans[1]
    actions = {rc["address"]: rc["change"]["actions"][0] for rc in plans[0]["resource_changes"]}
    assert actions == {
        "projects/proj-a/topics/orders": "update",
        "projects/proj-a/topics/stray": "delete",
        "projects/proj-b/topics/refunds": "create",
        "projects/proj-c/topics/audit": "update",
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("setting", ["0", "off"])
def test_an_unreachable_emulator_is_reported_the_same_way(
    run_cli: Any, specs: Any, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(START_ENV, setting)
    address = f"127.0.0.1:{free_port()}"
    root = specs(topic_doc("orders", project="proj-a"))
    result = run_cli("plan", str(root), "--emulator", address, "--timeout", "1")
    assert result.exit_code == 1
    assert f"cannot connect to the emulator at {address} (no answer within 1 s)" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr and "note:" not in result.stderr


def test_a_child_that_dies_is_replaced_by_reading_here(local_server: Any) -> None:
    """The note is a value; `plan` prints it on stderr (commands/plan.py)."""
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=0)
    read_ahead.document("proj-a")
    assert read_ahead.proc is not None
    read_ahead.proc.kill()
    assert read_ahead.served(["proj-a"]) is None
    err = read_ahead.note or ""
    assert "note: reading the live topics in a second process failed (exit status -9" in err
    assert "reading them in this one instead" in err


def test_gauges_are_read_here_when_the_child_is_gone(local_server: Any, seed: Any) -> None:
    seed("orders", {"team": "a"}, ["us-east1"])
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=0)
    read_ahead.document("proj-a")
    backend = read_ahead.served(["proj-a"])
    assert backend is not None and read_ahead.proc is not None
    read_ahead.proc.kill()
    local_server.counters.reset()
    [stored] = backend.stored([GaugeQuery("proj-a", "topic", ("orders",))])
    assert stored.unavailable is None and stored.calls == 1  # one PromQL query
    assert local_server.counters.get("PromQLQuery") == 1  # by this process's own client
    backend.close()


def test_gauge_requests_are_each_answered_with_its_own(
    local_server: Any, seed: Any, publisher_client: Any, subscriber_client: Any
) -> None:
    """A plan asks for several projects' gauges in one request: every answer is its own
    query's, in the order asked, and a child gone meanwhile leaves this process to
    read them."""
    stored_in = {"proj-a": "europe-west1", "proj-b": "us-east1", "proj-c": "asia-east1"}
    for project, region in stored_in.items():
        topic = f"projects/{project}/topics/orders"
        seed("orders", {"team": "a"}, project=project)
        subscriber_client.create_subscription(request={
            "name": f"projects/{project}/subscriptions/orders-sub", "topic": topic})
        publisher_client.publish(topic=topic, messages=[{"data": b"x"}] * len(project),
                                 metadata=[(CLIENT_REGION_KEY, region)], retry=None)
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=0)
    read_ahead.document("proj-a")
    backend = read_ahead.served(list(stored_in))
    assert backend is not None
    queries = {p: GaugeQuery(p, "topic", ("orders",)) for p in stored_in}
    answers = backend.stored([queries["proj-c"], queries["proj-a"]])
    for project, found in zip(("proj-c", "proj-a"), answers, strict=True):
        assert list(found.unacked["orders"]) == [stored_in[project]]
        assert found.unacked["orders"][stored_in[project]].messages == len(project)
    assert read_ahead.proc is not None
    read_ahead.proc.kill()
    [found] = backend.stored([queries["proj-b"]])
    assert list(found.unacked["orders"]) == ["us-east1"]
    backend.close()


def test_closing_stops_the_child_and_it_never_starts_again(local_server: Any) -> None:
    read_ahead = ReadAhead(TargetOptions(emulator=local_server.address), start_at=0)
    read_ahead.document("proj-a")
    proc = read_ahead.proc
    assert proc is not None
    read_ahead.close()
    assert proc.returncode is not None
    read_ahead.document("proj-b")
    assert read_ahead.proc is None and read_ahead.served(["proj-b"]) is None


def test_only_the_projects_asked_for_are_read(local_server: Any, seed: Any) -> None:
    seed("other", {"team": "b"}, project="proj-b")
    target = TargetOptions(emulator=local_server.address)
    read_ahead = ReadAhead(target, start_at=0, only=["proj-a"])
    for project in ("proj-a", "proj-b", None):
        read_ahead.document(project)
    assert list(read_ahead.seen) == ["proj-a"]
    backend = read_ahead.served(["proj-a"])
    assert backend is not None and backend.list_topics("proj-a") == []
    with pytest.raises(BackendError, match="proj-b was not read ahead"):
        backend.list_topics("proj-b")


def test_local_targets_and_off_never_read_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ReadAhead.for_target(TargetOptions(local=True)) is None
    monkeypatch.setenv(START_ENV, "off")
    assert ReadAhead.for_target(TargetOptions(emulator="127.0.0.1:1")) is None
    monkeypatch.setenv(START_ENV, "12")
    assert start_threshold() == 12
    monkeypatch.delenv(START_ENV)
    assert start_threshold() == 5000


def test_a_misspelt_setting_is_refused_naming_it(
    run_cli: Any, specs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(START_ENV, "of")
    with pytest.raises(UsageError, match="RECONCILE_READ_AHEAD_FROM='of'"):
        start_threshold()
    root = specs(topic_doc("orders", project="proj-a"))
    result = run_cli("plan", str(root), "--emulator", "127.0.0.1:1")
    assert result.exit_code != 0
    assert "RECONCILE_READ_AHEAD_FROM='of' is neither a number" in result.stderr


def test_a_row_reads_back_as_the_topic_it_was_made_from() -> None:
    from google.pubsub_v1.types import Topic

    from reconciler.backends.topicproto import observed_pb, topic_row
    from reconciler.topic import ObservedTopic

    bare = Topic(name="projects/p/topics/bare")
    full = Topic(name="projects/p/topics/full", labels={"z": "1", "a": "2", "m": ""},
                 kms_key_name="projects/p/locations/l/keyRings/r/cryptoKeys/k",
                 message_retention_duration={"seconds": 3600})
    full.message_storage_policy.allowed_persistence_regions = ["us-east1", "eu-west1", "us-east1"]
    full.message_storage_policy.enforce_in_transit = True
    regionless = Topic(name="projects/p/topics/regionless")
    regionless.message_storage_policy.enforce_in_transit = False
    regionless.message_storage_policy.allowed_persistence_regions = []
    regionless_pb = Topic.pb(regionless)
    regionless_pb.message_storage_policy.SetInParent()  # set, with no region
    for pb in (Topic.pb(bare), Topic.pb(full), regionless_pb):
        live = observed_pb(pb)
        again = ObservedTopic.from_row(marshal.loads(marshal.dumps(topic_row(pb))))
        assert again == live
        assert again.shape == live.shape
        assert again.retention_seconds == live.retention_seconds
    assert observed_pb(Topic.pb(full)).retention_seconds == 3600
    assert list(observed_pb(Topic.pb(full)).shape.labels) == ["a", "m", "z"]
    assert observed_pb(regionless_pb).shape.policy is not None  # set, no region
