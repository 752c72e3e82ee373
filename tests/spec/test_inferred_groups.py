"""Value groups whose membership is inferred (issue 13): a refusal that rests on one is
a warning that says so, `--strict-groups` makes it an error, and the location data
records where every group comes from. Through `reconcile validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.orgpolicy.locations import catalog

POLICY = """\
name: projects/acme-payments/policies/gcp.resourceLocations
spec:
  rules:
    - values:
        allowedValues: [{allowed}]
"""
TOPIC = """\
apiVersion: reconcile.pubsub/v1
kind: Topic
metadata: {{project: acme-payments, name: orders}}
spec:
  messageStoragePolicy:
    allowedPersistenceRegions:
      - {region}
"""


def tree(tmp_path: Path, allowed: str, region: str) -> Path:
    root = tmp_path / "specs"
    root.mkdir()
    (root / "org-policy.yaml").write_text(POLICY.format(allowed=allowed))
    (root / "topics.yaml").write_text(TOPIC.format(region=region))
    return root


def test_a_refusal_resting_on_an_inferred_group_is_a_warning(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:us-locations", "europe-west1")
    result = run_cli("validate", str(root))
    assert result.exit_code == 0, result.stdout + result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{root / 'topics.yaml'}:7:")
    assert "warning[org-location-denied]: region 'europe-west1' is not allowed" in line
    assert "membership not verified for in:us-locations" in line
    assert "--strict-groups makes this an error" in line


def test_strict_groups_makes_it_an_error(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:us-locations", "europe-west1")
    result = run_cli("validate", str(root), "--strict-groups")
    assert result.exit_code == 1
    assert "error[org-location-denied]: region 'europe-west1' is not allowed" in result.stdout


def test_a_refusal_by_a_verified_group_stays_an_error(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:eu-locations", "europe-west2")  # London: not in eu-locations
    result = run_cli("validate", str(root))
    assert result.exit_code == 1
    assert "error[org-location-denied]: region 'europe-west2' is not allowed" in result.stdout
    assert "inferred" not in result.stdout


def test_us_central2_is_a_us_locations_member(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:us-locations", "us-central2")
    result = run_cli("validate", str(root), "--strict-groups")
    assert result.exit_code == 0, result.stdout
    assert "org-location-denied" not in result.stdout
    assert "warning[region-restricted]" in result.stdout  # not a publicly listed region


def test_every_group_records_its_source() -> None:
    groups = catalog().groups
    assert groups and all(g.source for g in groups.values())
    assert "ITAR" in groups["us-locations"].source
    per_region = catalog().group("in:us-east1-locations")
    assert per_region is not None and per_region.verified and per_region.source
