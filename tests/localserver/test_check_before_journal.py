"""Issue 39 item 2: every value is checked before it is journaled, and a state that
holds a bad record written by an earlier version (which journaled before checking)
opens with --recover, that record set aside and named. Through the real clients, the
real `reconcile local-server` command and its state directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from rest_support import rest
from subscriber_support import make_subscriber

from reconciler.backends.clients import publisher_client
from reconciler.localserver import LocalServer
from reconciler.localserver.api import protos
from reconciler.localserver.persistence import frames
from reconciler.localserver.persistence import journal as j

P = "projects/proj-alpha"
T = f"{P}/topics/checked"
S = f"{P}/subscriptions/pushed"
KEPT = f"{P}/subscriptions/kept"


def test_a_push_endpoint_that_is_no_url_is_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    with LocalServer(state_dir=tmp_path) as server:
        pub, sub = publisher_client(server.address), make_subscriber(server.address)
        pub.create_topic(name=T)
        with pytest.raises(exceptions.InvalidArgument, match=r"Invalid push_endpoint 'http://\[::1'"):
            sub.create_subscription(
                request={"name": S, "topic": T, "push_config": {"push_endpoint": "http://[::1"}}
            )
        with pytest.raises(exceptions.InvalidArgument, match="Unsupported push_endpoint"):
            sub.create_subscription(
                request={"name": S, "topic": T, "push_config": {"push_endpoint": "ftp://host/x"}}
            )
        with pytest.raises(exceptions.NotFound):
            sub.get_subscription(request={"subscription": S})
        # An update to such an endpoint is refused too, and leaves the subscription
        # as it was: on its topic, receiving.
        sub.create_subscription(request={"name": KEPT, "topic": T})
        with pytest.raises(exceptions.InvalidArgument, match="Invalid push_endpoint"):
            sub.update_subscription(
                request={
                    "subscription": {"name": KEPT, "push_config": {"push_endpoint": "http://[::1"}},
                    "update_mask": {"paths": ["push_config"]},
                }
            )
        assert list(pub.list_topic_subscriptions(topic=T)) == [KEPT]
        pub.publish(topic=T, messages=[{"data": b"still delivered"}])
        got = sub.pull(request={"subscription": KEPT, "max_messages": 1}).received_messages
        assert [m.message.data for m in got] == [b"still delivered"]
    with LocalServer(state_dir=tmp_path) as again:  # the state opens as it was
        assert again.state.subs.names() == [KEPT]


def test_a_duration_no_json_can_hold_is_refused(local_server: Any) -> None:
    pub, sub = publisher_client(local_server.address), make_subscriber(local_server.address)
    bad = {"seconds": 700, "nanos": 2_000_000_000}
    with pytest.raises(exceptions.InvalidArgument, match="'message_retention_duration'"):
        pub.create_topic(request={"name": T, "message_retention_duration": bad})
    pub.create_topic(name=T)
    ttl = {"ttl": {"seconds": -1, "nanos": 5}}
    with pytest.raises(exceptions.InvalidArgument, match=r"'expiration_policy\.ttl'"):
        sub.create_subscription(request={"name": S, "topic": T, "expiration_policy": ttl})
    # Nothing half-made: the topic reads back over REST, the subscription is absent.
    assert rest(local_server.address, "GET", f"/v1/{T}").status == 200
    assert rest(local_server.address, "GET", f"/v1/{S}").status == 404


def _write_old_state(state: Path) -> None:
    """A state as the previous version left it after CreateSubscription with the push
    endpoint `http://[::1`: it journaled the subscription before checking it."""
    journal = j.Journal(state)
    journal.load()
    topic = protos.Topic(name=T)
    kept = protos.Subscription(name=KEPT, topic=T, ack_deadline_seconds=10)
    kept.push_config.SetInParent()
    bad = protos.Subscription(name=S, topic=T, ack_deadline_seconds=10)
    bad.push_config.push_endpoint = "http://[::1"
    journal.append(
        [
            (j.PUT_TOPIC, T, topic.SerializeToString()),
            (j.PUT_SUBSCRIPTION, KEPT, kept.SerializeToString()),
            (j.PUT_SUBSCRIPTION, S, bad.SerializeToString()),
        ]
    )
    journal.close()


def test_a_bad_record_of_an_earlier_version_is_set_aside_by_recover(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    state = tmp_path / "state"
    _write_old_state(state)
    before = sorted(p.name for p in state.iterdir())

    code, err = refused_start("--state", str(state))
    assert code == 1, err
    assert f"the subscription record of {S}" in err
    assert "Invalid push_endpoint" in err and "--recover" in err
    assert "Traceback" not in err and "internal error" not in err
    assert sorted(p.name for p in state.iterdir()) == before  # nothing written

    server = server_process("--state", str(state), "--recover")
    sub = make_subscriber(server.address)
    names = [s.name for s in sub.list_subscriptions(project=P)]
    report = server.stop()
    assert names == [KEPT]  # every other record kept
    line = next(ln for ln in report.splitlines() if "set aside" in ln)
    assert f"the subscription record of {S}" in line and "Invalid push_endpoint" in line
    aside = [p for p in state.iterdir() if p.name.startswith("unusable-records-")]
    assert len(aside) == 1 and aside[0].name in line
    data = aside[0].read_bytes()
    kept = frames.scan(data, frames.HEADER_SIZE).records
    assert [(kind, key) for kind, key, _ in kept] == [(j.PUT_SUBSCRIPTION, S)]
    assert protos.Subscription.FromString(kept[0][2]).push_config.push_endpoint == "http://[::1"

    again = server_process("--state", str(state))  # opens without --recover now
    assert [s.name for s in make_subscriber(again.address).list_subscriptions(project=P)] == [
        KEPT
    ]


def _write_state_with_bad_records_of_every_kind(state: Path) -> list[tuple[int, str]]:
    """A state holding, beside good records, one record of each kind that carries a
    value (topics, subscriptions, schemas, snapshots and their changes, Seeks, IAM
    policies) that this version cannot use: bytes that decode as no record of their
    kind, or a duration or time out of its type's range. Deletions carry only a name
    and replay one that is gone as nothing to do."""
    journal = j.Journal(state)
    journal.load()
    far = protos.Topic(name=f"{P}/topics/far")
    far.message_retention_duration.seconds = 10**13  # no JSON can hold it
    config = protos.Snapshot(name=f"{P}/snapshots/snap", topic=T)
    config.expire_time.seconds = 10**15
    undecodable = b"\x0a\xff"  # a length-delimited field cut short
    bad = [
        (j.PUT_TOPIC, far.name, far.SerializeToString()),
        (j.PUT_SCHEMA, f"{P}/schemas/schema", undecodable),
        (j.PUT_SNAPSHOT, f"{P}/snapshots/snap", b"\x00"),
        (j.SNAPSHOT_CONFIG, f"{P}/snapshots/snap", config.SerializeToString()),
        (j.SEEK, KEPT, b"\x00"),
        (j.PUT_IAM_POLICY, T, undecodable),
    ]
    journal.append(
        [
            (j.PUT_TOPIC, T, protos.Topic(name=T).SerializeToString()),
            (j.PUT_SUBSCRIPTION, KEPT, protos.Subscription(name=KEPT, topic=T).SerializeToString()),
            *bad,
        ]
    )
    journal.close()
    return [(kind, key) for kind, key, _ in bad]


def test_bad_records_of_every_kind_refuse_the_start_and_recover_sets_them_aside(
    tmp_path: Path, server_process: Any, refused_start: Any
) -> None:
    state = tmp_path / "state"
    bad = _write_state_with_bad_records_of_every_kind(state)

    code, err = refused_start("--state", str(state))
    assert code == 1, err
    assert f"the topic record of {P}/topics/far" in err and "(and 5 more)" in err
    assert "'message_retention_duration'" in err and "--recover" in err
    assert "Traceback" not in err and "internal error" not in err

    server = server_process("--state", str(state), "--recover")
    pub = publisher_client(server.address)
    topics = [t.name for t in pub.list_topics(project=P)]
    subs = [s.name for s in make_subscriber(server.address).list_subscriptions(project=P)]
    report = server.stop()
    assert (topics, subs) == ([T], [KEPT])
    lines = [ln for ln in report.splitlines() if "set aside" in ln]
    for what in (
        f"the topic record of {P}/topics/far",
        f"the schema record of {P}/schemas/schema",
        f"the snapshot record of {P}/snapshots/snap",
        f"the snapshot change record of {P}/snapshots/snap",
        f"the Seek record of {KEPT}",
        f"the IAM policy record of {T}",
    ):
        assert any(what in ln for ln in lines), (what, report)
    assert "'expire_time'" in next(ln for ln in lines if "snapshot change" in ln)
    aside = next(p for p in state.iterdir() if p.name.startswith("unusable-records-"))
    kept = frames.scan(aside.read_bytes(), frames.HEADER_SIZE).records
    assert [(kind, key) for kind, key, _ in kept] == bad
