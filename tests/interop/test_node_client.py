"""The Node client (`@google-cloud/pubsub`, installed on first use with `npm ci` in
tests/interop/node) against the local server: create, publish, Pull, acknowledge.
Skipped, with the reason printed, only where node or npm is not installed."""

from __future__ import annotations

from typing import Any

from node_support import run_script


def test_node_client_publishes_pulls_and_acknowledges(local_server: Any) -> None:
    seen = run_script(
        "pull.js",
        ["proj-alpha", "node-topic", "node-sub"],
        {"PUBSUB_EMULATOR_HOST": local_server.address},
    )
    assert [(m["data"], m["attributes"]) for m in seen["received"]] == [
        ("one", {"n": "one"}),
        ("two", {"n": "two"}),
        ("three", {"n": "three"}),
    ]
    assert [m["id"] for m in seen["received"]] == seen["published"]
    assert seen["after_ack"] == 0
    assert local_server.counters.get("Pull") >= 2
    assert local_server.counters.get("Acknowledge") == 1
    stats = local_server.subscription_stats("projects/proj-alpha/subscriptions/node-sub")
    assert stats.unacked == {}
