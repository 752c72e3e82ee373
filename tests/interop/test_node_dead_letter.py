"""The Node client (`@google-cloud/pubsub`, installed on first use) against the local
server on issue 50's surfaces: a streaming subscriber that nacks sees delivery
attempts 1 to 5 and the message then arrives on the dead-letter subscription with the
service's attributes; a nested update mask; modifyPushConfig pull to push and back,
and a refused endpoint. Skipped, with the reason printed, only where node or npm is
not installed."""

from __future__ import annotations

from typing import Any

from node_support import run_script

INVALID_ARGUMENT = 3


def test_node_client_dead_letters_and_push_configs(local_server: Any) -> None:
    seen = run_script(
        "deadletter.js", ["proj-alpha"], {"PUBSUB_EMULATOR_HOST": local_server.address}
    )
    assert seen["attempts"] == [1, 2, 3, 4, 5]
    assert seen["dead"]["data"] == "poison"
    attributes = seen["dead"]["attributes"]
    assert attributes["k"] == "v"
    assert attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert attributes["CloudPubSubDeadLetterSourceSubscription"] == "orders-sub"
    assert attributes["CloudPubSubDeadLetterSourceSubscriptionProject"] == "proj-alpha"
    assert seen["policy"] == {
        "deadLetterTopic": "projects/proj-alpha/topics/orders-dead", "maxDeliveryAttempts": 20,
    }
    assert seen["pushed"] == "https://push.example.com/orders"
    assert seen["pushed_account"] == "pusher@proj-alpha.iam.gserviceaccount.com"
    assert seen["pulled"] == ""
    assert seen["refused"]["code"] == INVALID_ARGUMENT
    assert "Unsupported push_endpoint" in seen["refused"]["details"]
    assert local_server.counters.get("ModifyPushConfig") == 3
    stats = local_server.subscription_stats("projects/proj-alpha/subscriptions/orders-sub")
    assert stats.unacked == {}
