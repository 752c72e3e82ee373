"""Issue 46: a plan's finding on a value the topic inherits from a Defaults document
is placed at that document's line (it pointed at the topic's start or its
`spec: {}`), through the CLI against the local server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.specs_support import API_VERSION, topic_doc

DEFAULTS = f"""\
apiVersion: {API_VERSION}
kind: Defaults
spec:
  project: proj-a
  messageStoragePolicy:
    allowedPersistenceRegions:
      - us-east1
      - europe-west1
"""


def test_a_finding_on_an_inherited_value_is_placed_in_the_defaults_document(
    run_cli: Any, local_server: Any, org_policy_file: Any, publisher_client: Any,
    tmp_path: Path, monkeypatch: Any,
) -> None:
    publisher_client.create_topic(request={
        "name": "projects/proj-a/topics/orders",
        "message_storage_policy": {"allowed_persistence_regions": ["us-east1", "europe-west1"]},
    })
    monkeypatch.chdir(tmp_path)
    team = tmp_path / "specs" / "team"
    team.mkdir(parents=True)
    (tmp_path / "specs" / "defaults.yaml").write_text(DEFAULTS)
    (team / "orders.yaml").write_text(topic_doc("orders", project=None))
    policy = org_policy_file(["us-east1"])
    result = run_cli("plan", "specs", "--emulator", local_server.address,
                     "--org-policy", str(policy))
    assert result.exit_code == 0, result.stderr
    # The region is written at line 8, column 9 of the Defaults document.
    [line] = [x.strip() for x in result.stdout.splitlines() if "existing-location-denied" in x]
    assert line.startswith(
        "specs/defaults.yaml:8:9: warning[existing-location-denied]: topic "
        "projects/proj-a/topics/orders exists with region 'europe-west1'"
    ), line
    assert "specs/team/orders.yaml" not in result.stdout.split("Warnings:")[1]
