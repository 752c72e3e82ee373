"""The managed-shape value type: what counts as the same storage policy and which labels
are reconcile's, and its conversion to and from the wire `Topic` (the real proto type)."""

from __future__ import annotations

from google.pubsub_v1.types import Topic

from reconciler.backends.topicproto import shape_of, topic_body, topic_to_proto
from reconciler.names import project_of, split_topic_name, topic_name
from reconciler.ownership import OWNERSHIP_LABEL, is_owned
from reconciler.topic import StoragePolicy, TopicShape, norm_policy, request_body

NAME = "projects/orders-prod/topics/orders"


def test_regions_are_a_sorted_set_and_in_transit_false_equals_absent() -> None:
    a = StoragePolicy.from_json({"allowed_persistence_regions": ["us-east1", "us-central1",
                                                                 "us-east1"]})
    b = StoragePolicy.from_json({"allowed_persistence_regions": ["us-central1", "us-east1"],
                                 "enforce_in_transit": False})
    assert a == b
    assert a is not None and a.regions == ("us-central1", "us-east1")
    assert a.to_json() == {"allowed_persistence_regions": ["us-central1", "us-east1"],
                           "enforce_in_transit": False}


def test_an_empty_policy_compares_as_no_policy_but_is_kept_as_set() -> None:
    empty = StoragePolicy.from_json({"allowed_persistence_regions": []})
    assert empty is not None  # the topic does carry a (useless) policy
    assert norm_policy(empty) is None
    assert StoragePolicy.from_json(None) is None
    assert StoragePolicy.from_json({}) is None


def test_managed_labels_are_declared_and_reserved_keys_only() -> None:
    shape = TopicShape({"team": "a", "owner": "ops", "reconcile-old": "1", OWNERSHIP_LABEL: "true"})
    declared = {"team": "b"}
    assert shape.managed_labels(declared) == {
        OWNERSHIP_LABEL: "true", "reconcile-old": "1", "team": "a"
    }
    assert shape.foreign_labels(declared) == {"owner": "ops"}
    assert is_owned(shape.labels)
    assert not is_owned({"owner": "ops"})


def test_proto_round_trip_keeps_labels_and_policy() -> None:
    policy = StoragePolicy.of(["europe-west1", "europe-west4"], True)
    body = request_body(NAME, {"team": "a", "owner": "ops"}, policy)
    topic = topic_to_proto(body)
    assert list(topic.message_storage_policy.allowed_persistence_regions) == [
        "europe-west1", "europe-west4"
    ]
    assert topic.message_storage_policy.enforce_in_transit is True
    assert shape_of(topic) == TopicShape({"team": "a", "owner": "ops"}, policy)


def test_an_unset_policy_stays_unset_both_ways() -> None:
    topic = topic_to_proto(request_body(NAME, {"team": "a"}, None))
    assert "message_storage_policy" not in topic
    assert shape_of(topic).policy is None
    assert topic_body(Topic(name=NAME))["message_storage_policy"] is None


def test_topic_names_parse_once() -> None:
    assert split_topic_name(NAME) == ("orders-prod", "orders")
    assert split_topic_name("projects/p/subscriptions/s") is None
    assert split_topic_name("projects//topics/t") is None
    assert topic_name("orders-prod", "orders") == NAME
    assert project_of(NAME) == "orders-prod"
    assert project_of("orders") == "orders"
