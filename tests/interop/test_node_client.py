"""The Node client (`@google-cloud/pubsub`, installed by `.ci/run` with `npm ci` in
tests/interop/node) against the local server: create, publish, Pull, acknowledge.
Skipped, with the reason printed, only where node or npm is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = "node and npm are needed for the Node client test (not installed)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    if not (NODE_DIR / "node_modules" / "@google-cloud" / "pubsub").is_dir():
        pytest.fail(f"the Node client is not installed: run `npm ci` in {NODE_DIR}")
    return node


def test_node_client_publishes_pulls_and_acknowledges(local_server: Any) -> None:
    node = _node()
    env = {
        **os.environ,
        "PUBSUB_EMULATOR_HOST": local_server.address,
        "METADATA_SERVER_DETECTION": "none",  # no GCE metadata probing on this machine
    }
    done = subprocess.run(
        [node, str(NODE_DIR / "pull.js"), "proj-alpha", "node-topic", "node-sub"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
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
