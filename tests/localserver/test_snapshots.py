"""Issue 40 item 5: snapshots and Seek through the real clients (gRPC, REST for a
representative set): what a snapshot retains and when it expires, Seek to a snapshot
and to a time with the retention rules, the service's refusals, the snapshot gauges
(ListTimeSeries and PromQL), and a restart after a crash and after compaction."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from google.api_core import exceptions
from rest_support import rest

from reconciler.backends.clients import monitoring_client as make_monitoring
from reconciler.backends.clients import publisher_client as make_publisher
from reconciler.backends.clients import subscriber_client as make_subscriber
from reconciler.localserver import CLIENT_REGION_KEY, LocalServer
from reconciler.localserver.api import protos
from reconciler.localserver.pubsub.backlog import Batch
from tests.waiting import wait_until

PROJECT = "proj-alpha"
P = f"projects/{PROJECT}"
T = f"{P}/topics/orders"
S = f"{P}/subscriptions/orders-sub"
SNAP = f"{P}/snapshots/before-deploy"
DAY_S = 24 * 3600


@pytest.fixture
def orders(publisher_client: Any, subscriber_client: Any) -> None:
    """orders with orders-sub, which retains acknowledged messages."""
    publisher_client.create_topic(name=T)
    subscriber_client.create_subscription(
        request={"name": S, "topic": T, "retain_acked_messages": True}
    )


def _publish(pub: Any, *data: str, topic: str = T, region: str = "us-central1") -> None:
    pub.publish(topic=topic, messages=[{"data": d.encode()} for d in data],
                metadata=[(CLIENT_REGION_KEY, region)])


def _pull(sub: Any, name: str = S) -> list[tuple[str, str]]:
    """Everything deliverable now: (data, ack ID), in data order."""
    got = sub.pull(request={"subscription": name, "max_messages": 1000,
                            "return_immediately": True})
    return sorted((m.message.data.decode(), m.ack_id) for m in got.received_messages)


def _drain(sub: Any, name: str = S) -> list[str]:
    """Pull and acknowledge everything deliverable now; the data, sorted."""
    got = _pull(sub, name)
    if got:
        sub.acknowledge(request={"subscription": name, "ack_ids": [a for _, a in got]})
    return [d for d, _ in got]


# ---------------------------------------------------------------------------- admin


def test_create_get_list_update_delete(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    sub = subscriber_client
    before = time.time()
    created = sub.create_snapshot(
        request={"name": SNAP, "subscription": S, "labels": {"team": "payments"}}
    )
    after = time.time()
    assert created.name == SNAP and created.topic == T
    assert dict(created.labels) == {"team": "payments"}
    # No backlog: 7 days from now.
    expire = created.expire_time.timestamp()
    assert before + 7 * DAY_S <= expire <= after + 7 * DAY_S
    assert sub.get_snapshot(snapshot=SNAP) == created
    assert [s.name for s in sub.list_snapshots(project=P)] == [SNAP]
    assert list(publisher_client.list_topic_snapshots(topic=T)) == [SNAP]
    relabelled = sub.update_snapshot(request={
        "snapshot": {"name": SNAP, "labels": {"team": "billing"}},
        "update_mask": {"paths": ["labels"]},
    })
    assert dict(relabelled.labels) == {"team": "billing"}
    assert relabelled.expire_time == created.expire_time
    sooner = int(after) + DAY_S
    moved = sub.update_snapshot(request={
        "snapshot": {"name": SNAP, "expire_time": {"seconds": sooner}},
        "update_mask": {"paths": ["expire_time"]},
    })
    assert moved.expire_time.timestamp() == sooner
    sub.delete_snapshot(snapshot=SNAP)
    with pytest.raises(exceptions.NotFound, match="Snapshot does not exist"):
        sub.get_snapshot(snapshot=SNAP)
    assert list(sub.list_snapshots(project=P)) == []


def test_a_snapshot_without_a_name_is_named_by_the_server(
    subscriber_client: Any, orders: None
) -> None:
    made = subscriber_client.create_snapshot(request={"name": "", "subscription": S})
    assert made.name.startswith(f"{P}/snapshots/snapshot-")
    assert subscriber_client.get_snapshot(snapshot=made.name).topic == T


REFUSED = [
    ("missing subscription", "create_snapshot",
     {"name": f"{P}/snapshots/other", "subscription": f"{P}/subscriptions/nope"},
     exceptions.NotFound, "Subscription does not exist"),
    ("bad snapshot name", "create_snapshot", {"name": f"{P}/snapshots/-x", "subscription": S},
     exceptions.InvalidArgument, r"Invalid \[snapshots\] name: \(name=projects/proj-alpha/"
     r"snapshots/-x\)\. snapshot ID '-x' must be 3 to 255 characters long"),
    ("bad label", "create_snapshot",
     {"name": f"{P}/snapshots/other", "subscription": S, "labels": {"Team": "x"}},
     exceptions.InvalidArgument, "Invalid labels"),
    ("get missing", "get_snapshot", {"snapshot": f"{P}/snapshots/nope"}, exceptions.NotFound,
     "Snapshot does not exist"),
    ("delete missing", "delete_snapshot", {"snapshot": f"{P}/snapshots/nope"},
     exceptions.NotFound, "Snapshot does not exist"),
    ("update without mask", "update_snapshot", {"snapshot": {"name": SNAP}},
     exceptions.InvalidArgument, "must contain a non-empty paths list"),
    ("update the topic", "update_snapshot",
     {"snapshot": {"name": SNAP, "topic": T}, "update_mask": {"paths": ["topic"]}},
     exceptions.InvalidArgument, "the topic field in the Snapshot is not mutable"),
    ("update an unknown field", "update_snapshot",
     {"snapshot": {"name": SNAP}, "update_mask": {"paths": ["ttl"]}},
     exceptions.InvalidArgument, r"ttl is not a field of Snapshot that can be updated"),
    ("expire later than 7 days", "update_snapshot",
     {"snapshot": {"name": SNAP, "expire_time": {"seconds": int(time.time()) + 8 * DAY_S}},
      "update_mask": {"paths": ["expire_time"]}}, exceptions.InvalidArgument,
     "may be moved earlier"),
    ("expire in the past", "update_snapshot",
     {"snapshot": {"name": SNAP, "expire_time": {"seconds": 1}},
      "update_mask": {"paths": ["expire_time"]}}, exceptions.InvalidArgument,
     "to a time after now"),
    ("seek without a target", "seek", {"subscription": S}, exceptions.InvalidArgument,
     "No target was specified in the SeekRequest. Must specify either a time or a snapshot"),
    ("seek to a missing snapshot", "seek", {"subscription": S, "snapshot": f"{P}/snapshots/nope"},
     exceptions.NotFound, "Snapshot does not exist"),
    ("seek a missing subscription", "seek",
     {"subscription": f"{P}/subscriptions/nope", "time": {"seconds": 1}},
     exceptions.NotFound, "Subscription does not exist"),
]


@pytest.mark.parametrize(("label", "method", "request_", "error", "says"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_refusals_have_the_service_codes(
    subscriber_client: Any, orders: None, label: str, method: str, request_: dict[str, Any],
    error: type[Exception], says: str,
) -> None:
    subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    with pytest.raises(error, match=says):
        getattr(subscriber_client, method)(request=request_)
    assert subscriber_client.get_snapshot(snapshot=SNAP).name == SNAP  # nothing changed


def test_a_second_snapshot_of_the_same_name_already_exists(
    subscriber_client: Any, orders: None
) -> None:
    subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    with pytest.raises(exceptions.AlreadyExists, match="Snapshot already exists"):
        subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})


def test_seek_to_a_snapshot_of_another_topic_is_refused(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    other_topic, other_sub = f"{P}/topics/refunds", f"{P}/subscriptions/refunds-sub"
    publisher_client.create_topic(name=other_topic)
    subscriber_client.create_subscription(request={"name": other_sub, "topic": other_topic})
    subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    with pytest.raises(exceptions.FailedPrecondition) as caught:
        subscriber_client.seek(request={"subscription": other_sub, "snapshot": SNAP})
    assert caught.value.message == (
        f"The subscription's topic {other_topic} is different from that of the snapshot {T}; "
        "they must match in order for Seek work. Note that if a topic is deleted and then "
        "re-created with the same name, it is considered a distinct topic for these purposes."
    )


def test_a_snapshot_outlives_its_topic_but_a_topic_made_again_is_another(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    publisher_client.delete_topic(topic=T)
    assert subscriber_client.get_snapshot(snapshot=SNAP).topic == "_deleted-topic_"
    publisher_client.create_topic(name=T)
    again = f"{P}/subscriptions/orders-again"
    subscriber_client.create_subscription(request={"name": again, "topic": T})
    assert list(publisher_client.list_topic_snapshots(topic=T)) == []
    with pytest.raises(exceptions.FailedPrecondition, match="was deleted"):
        subscriber_client.seek(request={"subscription": again, "snapshot": SNAP})


# ------------------------------------------------------------------------ Seek


def test_seek_back_to_a_snapshot_redelivers(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    sub = subscriber_client
    _publish(publisher_client, "a0", "a1")
    assert _drain(sub) == ["a0", "a1"]
    _publish(publisher_client, "b0", "b1")
    sub.create_snapshot(request={"name": SNAP, "subscription": S})  # retains b0, b1
    _publish(publisher_client, "c0")  # and every later message
    assert _drain(sub) == ["b0", "b1", "c0"]
    assert _drain(sub) == []
    sub.seek(request={"subscription": S, "snapshot": SNAP})
    assert _drain(sub) == ["b0", "b1", "c0"]  # a0, a1 were acknowledged before it
    # Another subscription of the topic takes the snapshot's state too.
    audit = f"{P}/subscriptions/audit"
    sub.create_subscription(request={"name": audit, "topic": T})
    sub.seek(request={"subscription": audit, "snapshot": SNAP})
    assert _drain(sub, audit) == ["b0", "b1", "c0"]


def test_seek_to_a_time_replays_or_purges_within_retention(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    sub = subscriber_client
    plain = f"{P}/subscriptions/plain"  # does not retain acknowledged messages
    sub.create_subscription(request={"name": plain, "topic": T})
    _publish(publisher_client, "early")
    wait_until(lambda: time.time_ns() > _publish_ns(sub) + 2_000_000, what="time to pass")
    cut = time.time_ns()
    _publish(publisher_client, "late0", "late1")
    assert _drain(sub) == ["early", "late0", "late1"]
    assert _drain(sub, plain) == ["early", "late0", "late1"]
    stamp = {"seconds": cut // 10**9, "nanos": cut % 10**9}
    sub.seek(request={"subscription": S, "time": stamp})
    assert _drain(sub) == ["late0", "late1"]  # retained acked, published after the time
    sub.seek(request={"subscription": plain, "time": stamp})
    assert _drain(sub, plain) == []  # acknowledged and not retained: gone
    # Seek to the future: a purge.
    _publish(publisher_client, "pending")
    sub.seek(request={"subscription": S, "time": {"seconds": int(time.time()) + 3600}})
    assert _drain(sub) == []
    sub.seek(request={"subscription": S, "time": {"seconds": 0}})  # all retained, again
    assert _drain(sub) == ["early", "late0", "late1", "pending"]


def _publish_ns(sub: Any) -> int:
    """The publish time of the newest message of orders-sub (left unacknowledged)."""
    got = sub.pull(request={"subscription": S, "max_messages": 1000, "return_immediately": True})
    stamps = [m.message.publish_time.timestamp() for m in got.received_messages]
    if got.received_messages:
        sub.modify_ack_deadline(request={"subscription": S, "ack_ids": [
            m.ack_id for m in got.received_messages], "ack_deadline_seconds": 0})
    return int(max(stamps, default=0) * 10**9)


def test_seek_keeps_the_subscription_filter(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    sub = subscriber_client
    picky = f"{P}/subscriptions/picky"
    sub.create_subscription(request={"name": picky, "topic": T, "filter": "attributes:keep",
                                     "retain_acked_messages": True})
    publisher_client.publish(topic=T, messages=[
        {"data": b"kept", "attributes": {"keep": "1"}}, {"data": b"dropped"}])
    sub.create_snapshot(request={"name": SNAP, "subscription": S})  # holds both
    assert _drain(sub, picky) == ["kept"]
    sub.seek(request={"subscription": picky, "snapshot": SNAP})
    assert _drain(sub, picky) == ["kept"]
    sub.seek(request={"subscription": picky, "time": {"seconds": 0}})
    assert _drain(sub, picky) == ["kept"]


def test_a_seek_keeps_the_backlog_bound() -> None:
    with LocalServer(max_backlog=3) as server:
        pub, sub = make_publisher(server.address), make_subscriber(server.address)
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": S, "topic": T, "retain_acked_messages": True})
        for i in range(5):
            _publish(pub, f"m{i}")
            assert _drain(sub) == [f"m{i}"]
        sub.seek(request={"subscription": S, "time": {"seconds": 0}})
        assert _drain(sub) == ["m2", "m3", "m4"]  # the oldest beyond the bound dropped


# --------------------------------------------------------------- expiry and lifetime


def test_a_snapshot_is_gone_at_its_expire_time(
    publisher_client: Any, subscriber_client: Any, orders: None
) -> None:
    sub = subscriber_client
    _publish(publisher_client, "m")
    sub.create_snapshot(request={"name": SNAP, "subscription": S})
    soon = time.time() + 1
    sub.update_snapshot(request={
        "snapshot": {"name": SNAP, "expire_time": {"seconds": int(soon),
                                                   "nanos": int(soon % 1 * 1e9)}},
        "update_mask": {"paths": ["expire_time"]},
    })

    def gone() -> bool:
        try:
            sub.get_snapshot(snapshot=SNAP)
        except exceptions.NotFound:
            return True
        return False

    wait_until(gone, what="the snapshot's expire time")
    assert list(sub.list_snapshots(project=P)) == []
    with pytest.raises(exceptions.NotFound, match="Snapshot does not exist"):
        sub.seek(request={"subscription": S, "snapshot": SNAP})
    sub.create_snapshot(request={"name": SNAP, "subscription": S})  # the name is free again


def _old_message(server: LocalServer, age_s: float) -> None:
    """A message published `age_s` ago, placed in orders-sub's backlog: the API cannot
    publish in the past, and the lifetime rule is about a backlog days old."""
    request = protos.PublishRequest(topic=T, messages=[protos.PubsubMessage(data=b"old")])
    publish_ns = time.time_ns() - int(age_s * 10**9)
    batch = Batch(T, 10**9, publish_ns, "us-central1", request.SerializeToString(), 1)
    with server.state.lock:
        server.state.subs._backlogs[S].add(batch)


def test_lifetime_is_seven_days_from_the_oldest_unacked_message(
    local_server: Any, subscriber_client: Any, orders: None
) -> None:
    _old_message(local_server, 3 * DAY_S)
    made = subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    left = made.expire_time.timestamp() - time.time()
    assert 4 * DAY_S - 60 < left <= 4 * DAY_S


def test_a_snapshot_that_would_expire_within_an_hour_is_refused(
    local_server: Any, subscriber_client: Any, orders: None
) -> None:
    _old_message(local_server, 7 * DAY_S - 1800)  # 30 minutes of lifetime left
    with pytest.raises(exceptions.FailedPrecondition,
                       match=r"less than 1 hour from now .* Acknowledge or seek past"):
        subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    # Seeking past it clears the way.
    subscriber_client.seek(request={"subscription": S, "time": {"seconds": int(time.time())}})
    made = subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    assert made.expire_time.timestamp() > time.time() + 7 * DAY_S - 60


# ---------------------------------------------------------------------- the gauges


def test_snapshot_gauges_count_what_it_retains(
    local_server: Any, publisher_client: Any, subscriber_client: Any, monitoring_client: Any
) -> None:
    publisher_client.create_topic(request={
        "name": T, "message_storage_policy": {
            "allowed_persistence_regions": ["us-east1", "europe-west1"]}})
    subscriber_client.create_subscription(request={"name": S, "topic": T})
    _publish(publisher_client, "abc", region="us-east1")
    subscriber_client.create_snapshot(request={"name": SNAP, "subscription": S})
    _publish(publisher_client, "hello", "world", region="europe-west1")
    _drain(subscriber_client)  # acknowledging leaves the snapshot as it is

    def read(metric: str) -> dict[str, int]:
        series = monitoring_client.list_time_series(request={
            "name": P,
            "filter": f'metric.type = "pubsub.googleapis.com/snapshot/{metric}"',
            "interval": {"end_time": {"seconds": int(time.time()) + 1}},
        })
        out = {}
        for ts in series:
            assert ts.resource.type == "pubsub_snapshot"
            assert ts.resource.labels["snapshot_id"] == "before-deploy"
            out[ts.metric.labels.get("region", "*")] = ts.points[0].value.int64_value
        return out

    assert read("num_messages_by_region") == {"us-east1": 1, "europe-west1": 2}
    assert read("backlog_bytes_by_region") == {"us-east1": 3, "europe-west1": 10}
    assert read("num_messages") == {"*": 3}
    assert read("backlog_bytes") == {"*": 13}
    assert read("oldest_message_age")["*"] >= 0
    assert set(read("oldest_message_age_by_region")) == {"us-east1", "europe-west1"}
    # PromQL, as residency reads the gauges.
    query = "pubsub_googleapis_com:snapshot_num_messages_by_region"
    answer = rest(local_server.address, "GET", f"/v1/projects/{PROJECT}/location/global/"
                  f"prometheus/api/v1/query?{urlencode({'query': query})}")
    assert answer.status == 200
    got = {r["metric"]["region"]: r["value"][1] for r in answer.body["data"]["result"]}
    assert got == {"us-east1": "1", "europe-west1": "2"}
    assert {r["metric"]["monitored_resource"] for r in answer.body["data"]["result"]} == {
        "pubsub_snapshot"}
    # Deleted: no series.
    subscriber_client.delete_snapshot(snapshot=SNAP)
    assert read("num_messages_by_region") == {}


# ---------------------------------------------------------------------------- REST


def test_snapshot_and_seek_over_rest(local_server: Any, publisher_client: Any,
                                     subscriber_client: Any, orders: None) -> None:
    address = local_server.address
    _publish(publisher_client, "x0", "x1")
    made = rest(address, "PUT", f"/v1/{SNAP}", {"subscription": S, "labels": {"a": "b"}})
    assert made.status == 200, made.body
    assert made.body["topic"] == T and made.body["labels"] == {"a": "b"}
    listed = rest(address, "GET", f"/v1/{P}/snapshots")
    assert [s["name"] for s in listed.body["snapshots"]] == [SNAP]
    assert rest(address, "GET", f"/v1/{T}/snapshots").body["snapshots"] == [SNAP]
    assert _drain(subscriber_client) == ["x0", "x1"]
    sought = rest(address, "POST", f"/v1/{S}:seek", {"snapshot": SNAP})
    assert sought.status == 200 and sought.body == {}
    assert _drain(subscriber_client) == ["x0", "x1"]
    future = rest(address, "POST", f"/v1/{S}:seek", {"time": "2999-01-01T00:00:00Z"})
    assert future.status == 200
    missing = rest(address, "POST", f"/v1/{S}:seek", {"snapshot": f"{P}/snapshots/nope"})
    assert missing.status == 404 and missing.body["error"]["message"] == "Snapshot does not exist"
    patched = rest(address, "PATCH", f"/v1/{SNAP}",
                   {"snapshot": {"labels": {"c": "d"}}, "updateMask": "labels"})
    assert patched.status == 200 and patched.body["labels"] == {"c": "d"}
    assert rest(address, "DELETE", f"/v1/{SNAP}").status == 200
    assert rest(address, "GET", f"/v1/{SNAP}").status == 404


# ----------------------------------------------------------------------- durability


def test_snapshots_and_seeks_survive_a_crash_and_a_compacted_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"

    def serve() -> tuple[LocalServer, Any, Any, Any]:
        server = LocalServer(state_dir=state).start()
        return (server, make_publisher(server.address), make_subscriber(server.address),
                make_monitoring(server.address))

    server, pub, sub, _ = serve()
    try:
        pub.create_topic(name=T)
        sub.create_subscription(request={"name": S, "topic": T, "retain_acked_messages": True})
        _publish(pub, "a")
        sub.create_snapshot(request={"name": SNAP, "subscription": S, "labels": {"k": "v"}})
        _publish(pub, "b")
        assert _drain(sub) == ["a", "b"]
        sub.seek(request={"subscription": S, "snapshot": SNAP})  # a and b unacked again
        sub.update_snapshot(request={"snapshot": {"name": SNAP, "labels": {"k": "w"}},
                                     "update_mask": {"paths": ["labels"]}})
        made = sub.get_snapshot(snapshot=SNAP)
    finally:
        server.crash()  # only the journal survives
    for restart in ("after the crash", "after a clean, compacting stop"):
        server, pub, sub, _ = serve()
        try:
            assert sub.get_snapshot(snapshot=SNAP) == made, restart
            got = _pull(sub)
            assert [d for d, _ in got] == ["a", "b"], restart
            sub.modify_ack_deadline(request={"subscription": S, "ack_ids": [a for _, a in got],
                                             "ack_deadline_seconds": 0})
        finally:
            server.stop()
    server, pub, sub, _ = serve()
    try:  # the snapshot still retains both after the restarts
        assert _drain(sub) == ["a", "b"]
        sub.seek(request={"subscription": S, "snapshot": SNAP})
        assert _drain(sub) == ["a", "b"]
    finally:
        server.stop()
