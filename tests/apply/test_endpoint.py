"""`publishers.endpoint` (issue 13): recorded on the topic for publishers to read, kept
by import, and a second plan has nothing to do. Through the CLI and the local server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from google.pubsub_v1.types import Topic

from reconciler.hedging import labels as hedging_labels
from reconciler.orgpolicy.snapshot import load_snapshot
from tests.cli_support import reconcile
from tests.specs_support import Tree

ENFORCED = """\
name: projects/{project}/policies/gcp.resourceLocations
spec:
  rules:
    - values:
        allowedValues: [us-central1]
---
name: projects/{project}/policies/pubsub.enforceInTransitRegions
spec:
  rules: [{{enforce: true}}]
"""


def test_endpoint_is_recorded_and_round_trips(local_server: Any, tree: Tree, client: Any) -> None:
    tree.policy.write_text(ENFORCED.format(project=tree.project))
    local_server.seed_policies(load_snapshot(tree.policy))
    at = ["--emulator", local_server.address, "--org-policy", str(tree.policy)]
    tree.write(
        {
            "orders": {
                "messageStoragePolicy": "inherit",
                # Publishers in Tokyo, outside the allowed regions, publish through the
                # us-central1 endpoint: valid under in-transit enforcement.
                "publishers": {"regions": ["asia-northeast1"], "endpoint": "us-central1"},
            }
        }
    )
    run = reconcile("apply", "specs", *at, "--auto-approve")
    assert run.exit_code == 0, run.output
    assert "publisher-region-denied" not in run.output
    live: Topic = client.get_topic(request={"topic": tree.address("orders")})
    assert hedging_labels.endpoint(dict(live.labels)) == "us-central1"
    assert dict(live.labels)["reconcile-publish-endpoint"] == "us-central1"
    assert reconcile("plan", "specs", *at, "--detailed-exitcode").exit_code == 0

    out = tree.root / "imported"
    imported = reconcile(
        "import", "--project", tree.project, "--out", str(out), "--emulator", local_server.address
    )
    assert imported.exit_code == 0, imported.output
    (doc,) = [
        d for f in sorted(Path(out).glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())
    ]
    assert doc["spec"]["publishers"] == {"endpoint": "us-central1"}


def test_without_an_endpoint_publishers_outside_get_a_warning(
    local_server: Any, tree: Tree
) -> None:
    tree.policy.write_text(ENFORCED.format(project=tree.project))
    local_server.seed_policies(load_snapshot(tree.policy))
    tree.write(
        {
            "orders": {
                "messageStoragePolicy": "inherit",
                "publishers": {"regions": ["asia-northeast1"]},
            }
        }
    )
    run = reconcile(
        "plan", "specs", "--emulator", local_server.address, "--org-policy", str(tree.policy)
    )
    assert run.exit_code == 0, run.output
    assert "warning[publisher-region-denied]" in run.output
    assert "us-central1-pubsub.googleapis.com" in run.output
