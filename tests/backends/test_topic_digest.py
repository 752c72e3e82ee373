"""A live topic's fingerprint comes from its wire form (no JSON conversion per topic):
it must see every field, managed or not, and nothing else (not map order)."""

from __future__ import annotations

from google.pubsub_v1.types import Topic

from reconciler.backends.topicproto import observed, observed_pb
from reconciler.plan.observation import topic_fingerprint

NAME = "projects/acme/topics/orders"


def topic(labels: dict[str, str], **fields: object) -> Topic:
    t = Topic(name=NAME, labels=labels, **fields)
    t.message_storage_policy.allowed_persistence_regions = ["us-east1"]
    return t


def test_equal_topics_have_equal_fingerprints_whatever_the_label_order() -> None:
    a = topic({"team": "a", "tier": "b", "reconcile-managed": "true"})
    b = topic({"reconcile-managed": "true", "tier": "b", "team": "a"})
    assert topic_fingerprint(observed(a)) == topic_fingerprint(observed(b))


def test_an_unmanaged_field_changes_the_fingerprint() -> None:
    plain = topic({"team": "a"})
    with_key = topic({"team": "a"}, kms_key_name="projects/acme/keyRings/r/cryptoKeys/k")
    assert topic_fingerprint(observed(plain)) != topic_fingerprint(observed(with_key))


def test_a_label_value_changes_the_fingerprint() -> None:
    assert topic_fingerprint(observed(topic({"team": "a"}))) != topic_fingerprint(
        observed(topic({"team": "b"}))
    )


def test_the_bare_message_reads_the_same_shape_as_the_wrapper() -> None:
    t = topic({"team": "a"})
    wrapped, bare = observed(t), observed_pb(Topic.pb(t))
    assert bare.body == wrapped.body == {
        "name": NAME,
        "labels": {"team": "a"},
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1"],
                                   "enforce_in_transit": False},
    }
    assert bare.shape == wrapped.shape
    assert bare.digest == wrapped.digest != ""
