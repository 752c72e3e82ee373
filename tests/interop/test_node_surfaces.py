"""The Node client's GAPIC clients (gRPC) against the local server on the surfaces
beyond publish and pull: an Avro schema (create, get, list, validate a message), a
topic with schema settings and publishes through it, a subscription filter (messages
it excludes are never delivered; a malformed one is refused at create), and a
snapshot with Seek (a message acknowledged after the snapshot comes back), and the
Publish limits (1,000 messages; a request over 10,000,000 bytes, decimal). Skipped,
with the reason printed, only where node or npm is not installed."""

from __future__ import annotations

from typing import Any

from node_support import run_script

INVALID_ARGUMENT = 3


def test_node_client_schemas_filters_snapshots_and_seek(local_server: Any) -> None:
    seen = run_script("surfaces.js", ["proj-alpha"], {"PUBSUB_EMULATOR_HOST": local_server.address})
    assert seen["schema"] == {
        "name": "projects/proj-alpha/schemas/orders", "type": "AVRO", "revision": True,
    }
    assert seen["listed"] == ["projects/proj-alpha/schemas/orders"]
    assert seen["bad_message"] == INVALID_ARGUMENT
    assert seen["accepted"] == 1
    assert seen["bad_publish"] == INVALID_ARGUMENT
    assert seen["bad_filter"] == INVALID_ARGUMENT
    assert seen["filtered"] == ["eu"]  # 'us' is excluded by the filter
    assert seen["after_ack"] == []
    assert seen["after_seek"] == ["eu"]  # the snapshot held it unacknowledged
    assert seen["thousand"] == 1000
    assert seen["too_many"] == INVALID_ARGUMENT
    assert "request_size" in seen["too_big"] and "10000000" in seen["too_big"]
    counters = local_server.counters
    assert counters.get("Seek") == 1
    assert counters.get("CreateSnapshot") == 1
    assert counters.get("CreateSchema") == 1
