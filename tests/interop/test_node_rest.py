"""The Node client's REST transport (`fallback: 'rest'`, which sends Google's system
parameters `$alt=json;enum-encoding=int` and, asked to minify, `$prettyPrint=0` on
every call, and binds getIamPolicy as a POST) against the local server's REST face:
topics, subscriptions, publish, pull, acknowledge and a topic's IAM policy, etag
conflict included. Skipped, with the reason printed, only where node or npm is not
installed."""

from __future__ import annotations

from typing import Any

from node_support import run_script


def test_node_rest_client_round_trip(local_server: Any) -> None:
    seen = run_script(
        "rest.js",
        ["proj-alpha", "node-topic", "node-sub"],
        {"REST_HOST": local_server.address},
    )
    assert seen["subscription_state"] == "ACTIVE"  # answered as a number, read back
    assert [(m["data"], m["attributes"]) for m in seen["received"]] == [
        ("one", {"n": "one"}),
        ("two", {"n": "two"}),
    ]
    assert [m["id"] for m in seen["received"]] == seen["published"]
    assert seen["after_ack"] == 0
    assert seen["empty_etag"] == "ACAB"
    assert seen["bindings"] == [
        {"role": "roles/pubsub.publisher", "members": ["user:node@example.com"]}
    ]
    assert seen["stale_etag_code"] == 409  # ABORTED: the policy changed since it was read
    assert seen["permissions"] == ["pubsub.topics.publish", "pubsub.topics.attachSubscription"]
    assert seen["topics"] == [
        {"name": "projects/proj-alpha/topics/node-topic", "labels": {"team": "node"}}
    ]
    counters = local_server.counters
    assert [counters.get(m) for m in ("GetIamPolicy", "SetIamPolicy", "TestIamPermissions")] == [
        1,
        2,
        1,
    ]
    stats = local_server.subscription_stats("projects/proj-alpha/subscriptions/node-sub")
    assert stats.unacked == {}
