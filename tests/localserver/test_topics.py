"""Publisher topic semantics, through the real GAPIC client over loopback gRPC."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions

P = "projects/proj-alpha"
T = f"{P}/topics/orders"


def test_create_get_delete_roundtrip(publisher_client: Any, local_server: Any) -> None:
    created = publisher_client.create_topic(request={"name": T, "labels": {"team": "pay"}})
    assert created.name == T
    got = publisher_client.get_topic(topic=T)
    assert dict(got.labels) == {"team": "pay"}
    # No org policy in effect: the topic carries no storage policy.
    assert "message_storage_policy" not in got
    publisher_client.delete_topic(topic=T)
    with pytest.raises(exceptions.NotFound, match="Topic not found"):
        publisher_client.get_topic(topic=T)
    assert local_server.counters.get("CreateTopic") == 1
    assert local_server.counters.get("GetTopic") == 2
    assert local_server.counters.get("DeleteTopic") == 1


def test_create_twice_is_already_exists(publisher_client: Any) -> None:
    publisher_client.create_topic(name=T)
    with pytest.raises(exceptions.AlreadyExists, match="Topic already exists"):
        publisher_client.create_topic(name=T)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("get", "Topic not found"),
        ("delete", "Topic not found"),
        ("update", "Topic not found."),
        ("publish", "Topic not found"),
    ],
)
def test_missing_topic_is_not_found(publisher_client: Any, call: str, message: str) -> None:
    missing = f"{P}/topics/nowhere"
    calls = {
        "get": lambda: publisher_client.get_topic(topic=missing),
        "delete": lambda: publisher_client.delete_topic(topic=missing),
        "update": lambda: publisher_client.update_topic(
            request={"topic": {"name": missing}, "update_mask": {"paths": ["labels"]}}
        ),
        "publish": lambda: publisher_client.publish(topic=missing, messages=[{"data": b"x"}]),
    }
    with pytest.raises(exceptions.NotFound) as info:
        calls[call]()
    assert info.value.message == message


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (f"{P}/topics/ab", "3 to 255 characters"),
        (f"{P}/topics/{'a' * 256}", "3 to 255 characters"),
        (f"{P}/topics/1abc", "start with a letter"),
        (f"{P}/topics/-abc", "start with a letter"),
        (f"{P}/topics/goog-orders", "goog"),
        (f"{P}/topics/GOOGorders", "goog"),
        (f"{P}/topics/ab$c", "may contain only"),
        (f"{P}/topics/a b c", "may contain only"),
        ("projects/Proj-alpha/topics/orders", "lowercase letter"),
        ("projects/short/topics/orders", "6 to 30"),
        (f"projects/{'p' * 31}/topics/orders", "6 to 30"),
        ("projects/proj-alpha-/topics/orders", "hyphen"),
        ("projects/proj_alpha/topics/orders", "lowercase letters, digits and hyphens"),
        ("foo/bar", "Expected projects/PROJECT_ID/topics/TOPIC_ID"),
        (f"{P}/subscriptions/orders", "Expected projects/PROJECT_ID/topics/TOPIC_ID"),
    ],
)
def test_bad_names_are_invalid_argument(publisher_client: Any, name: str, reason: str) -> None:
    with pytest.raises(exceptions.InvalidArgument) as info:
        publisher_client.create_topic(name=name)
    # The emulator's wording first, then why.
    assert info.value.message.startswith(f"Invalid [topics] name: (name={name})")
    assert reason in info.value.message
    with pytest.raises(exceptions.InvalidArgument):
        publisher_client.get_topic(topic=name)


def test_valid_name_edge_cases_are_accepted(publisher_client: Any) -> None:
    for name in (
        f"{P}/topics/abc",
        f"{P}/topics/A-_.~+%z",
        f"{P}/topics/{'a' * 255}",
        "projects/a23456/topics/abc",
        f"projects/{'a' * 30}/topics/abc",
    ):
        assert publisher_client.create_topic(name=name).name == name


def test_list_topics_exact_project_match(publisher_client: Any) -> None:
    for name in (
        "projects/proj-alpha/topics/b-topic",
        "projects/proj-alpha/topics/a-topic",
        "projects/proj-alpha2/topics/other",
        "projects/proj-alph/topics/other",
    ):
        publisher_client.create_topic(name=name)
    names = [t.name for t in publisher_client.list_topics(project="projects/proj-alpha")]
    assert names == ["projects/proj-alpha/topics/a-topic", "projects/proj-alpha/topics/b-topic"]
    assert list(publisher_client.list_topics(project="projects/proj-empty")) == []


def test_list_topics_bad_project_and_token(publisher_client: Any) -> None:
    with pytest.raises(exceptions.InvalidArgument, match=r"Invalid \[projects\] name"):
        list(publisher_client.list_topics(project="foo"))
    with pytest.raises(exceptions.InvalidArgument, match="Invalid page token"):
        list(publisher_client.list_topics(request={"project": P, "page_token": "%%%"}))


def test_publish_returns_ids_and_keeps_messages(publisher_client: Any, local_server: Any) -> None:
    publisher_client.create_topic(name=T)
    first = publisher_client.publish(topic=T, messages=[{"data": b"a"}, {"data": b"b"}])
    second = publisher_client.publish(topic=T, messages=[{"data": b"", "attributes": {"k": "v"}}])
    ids = [*first.message_ids, *second.message_ids]
    assert len(ids) == 3 and len(set(ids)) == 3
    kept = local_server.messages(T)
    assert [m.data for m in kept] == [b"a", b"b", b""]
    assert [m.message_id for m in kept] == ids
    assert all(m.publish_time.seconds > 0 for m in kept)
    assert local_server.counters.get("Publish") == 2


def test_publish_rejects_empty_requests(publisher_client: Any) -> None:
    publisher_client.create_topic(name=T)
    with pytest.raises(exceptions.InvalidArgument, match="No messages to publish"):
        publisher_client.publish(topic=T, messages=[])
    with pytest.raises(exceptions.InvalidArgument, match="Some messages are empty"):
        publisher_client.publish(topic=T, messages=[{"data": b"x"}, {}])


def test_batching_client_via_emulator_env(
    local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """google-cloud-pubsub's high-level client, unchanged, through PUBSUB_EMULATOR_HOST."""
    from google.cloud import pubsub_v1

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", local_server.address)
    client = pubsub_v1.PublisherClient()
    client.create_topic(name=T)
    futures = [client.publish(T, f"m{i}".encode()) for i in range(5)]
    assert all(f.result(timeout=30) for f in futures)
    assert len(local_server.messages(T)) == 5
    client.stop()
