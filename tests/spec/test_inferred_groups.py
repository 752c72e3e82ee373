"""Value groups whose membership is inferred (issue 13): a refusal that rests on one is
a warning that says so, `--strict-groups` makes it an error, and the location data
records where every group comes from. A region outside the geography an inferred
group can hold is certainly not a member: refusing it is an error (issue 21). Whether
a region refusal stops anything depends on whether the topic exists (a topic that
lists it already keeps it): `plan` refuses a new topic (live org policy), and
`validate` (snapshot), which cannot know, says so in a warning that still tells a
certain refusal from an inferred one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reconciler.orgpolicy import locations
from reconciler.orgpolicy.locations import catalog
from tests.specs_support import ancestry_doc, location_policy_doc

PROJECT = "projects/acme-payments"

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
    (root / "org-policy.yaml").write_text(
        location_policy_doc(PROJECT, allowed) + "---\n" + ancestry_doc(PROJECT)
    )
    (root / "topics.yaml").write_text(TOPIC.format(region=region))
    return root


def test_a_refusal_resting_on_an_inferred_group_is_a_warning(run_cli: Any, tmp_path: Path) -> None:
    # Bangkok is in Asia, but the third-party member list predates it.
    root = tree(tmp_path, "in:asia-locations", "asia-southeast3")
    result = run_cli("validate", str(root))
    assert result.exit_code == 0, result.stdout + result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{root / 'topics.yaml'}:7:")
    assert "warning[org-location-denied]: region 'asia-southeast3' is not allowed" in line
    assert "membership not verified for in:asia-locations" in line
    assert "--strict-groups counts it as refused" in line
    assert "the topic may exist, so `reconcile plan` decides" in line


def test_strict_groups_makes_it_an_error_for_a_new_topic(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    from reconciler.orgpolicy.model import Policy

    root = tree(tmp_path, "in:asia-locations", "asia-southeast3")
    local_server.put_policy(Policy.from_dict(
        yaml.safe_load(location_policy_doc(PROJECT, "in:asia-locations"))
    ))
    result = run_cli("plan", str(root), "--emulator", local_server.address, "--strict-groups")
    assert result.exit_code == 1
    assert "error[org-location-denied]: region 'asia-southeast3' is not allowed" in (
        result.stderr
    )
    # Offline, the topic may exist: validate leaves it to plan, strict or not.
    validated = run_cli("validate", str(root), "--strict-groups")
    assert validated.exit_code == 0, validated.stdout
    assert "warning[org-location-denied]: region 'asia-southeast3'" in validated.stdout


def test_a_region_outside_the_groups_geography_is_certain(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:us-locations", "asia-east1")
    result = run_cli("validate", str(root))
    assert result.exit_code == 0  # the topic may exist: plan decides
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{root / 'topics.yaml'}:7:")
    assert "warning[org-location-denied]: region 'asia-east1' is not allowed" in line
    assert "asia-east1 is in none of the allowed groups: in:us-locations holds only us-*" in line
    assert "inferred" not in line and "may be a member" not in line
    assert "a new topic before any call" in line


def test_plan_refuses_it_from_the_live_org_policy(
    run_cli: Any, local_server: Any, tmp_path: Path
) -> None:
    from reconciler.orgpolicy.model import Policy

    local_server.put_policy(
        Policy.from_dict(yaml.safe_load(location_policy_doc(PROJECT, "in:us-locations")))
    )
    root = tmp_path / "specs"
    root.mkdir()
    (root / "topics.yaml").write_text(TOPIC.format(region="asia-east1"))
    result = run_cli("plan", str(root), "--emulator", local_server.address)
    assert result.exit_code == 1, result.stderr
    assert (
        f"{root / 'topics.yaml'}:7:9: error[org-location-denied]: region 'asia-east1' is not "
        "allowed"  # at the value, where validate puts it
    ) in result.stderr
    assert "in:us-locations holds only us-* regions" in result.stderr
    assert "inferred" not in result.stderr
    assert "no plan made, nothing changed" in result.stderr
    # A us-* region the inferred list lacks may still be a member: a warning, a plan.
    (root / "topics.yaml").write_text(TOPIC.format(region="us-west8"))
    maybe = run_cli("plan", str(root), "--emulator", local_server.address)
    assert maybe.exit_code == 0, maybe.stderr
    assert "Plan: 1 to create" in maybe.stdout
    assert "warning[org-location-denied]: region 'us-west8' is not allowed" in maybe.stdout
    assert "membership not verified for in:us-locations" in maybe.stdout


def test_a_refusal_by_a_verified_group_is_certain(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:eu-locations", "europe-west2")  # London: not in eu-locations
    result = run_cli("validate", str(root), "--strict-groups")
    assert result.exit_code == 0  # the topic may exist: plan decides
    assert "warning[org-location-denied]: region 'europe-west2' is not allowed" in result.stdout
    assert "inferred" not in result.stdout


def test_us_central2_is_a_us_locations_member(run_cli: Any, tmp_path: Path) -> None:
    root = tree(tmp_path, "in:us-locations", "us-central2")
    result = run_cli("validate", str(root), "--strict-groups")
    assert result.exit_code == 0, result.stdout
    assert "org-location-denied" not in result.stdout
    assert "warning[region-restricted]" in result.stdout  # not a publicly listed region


def test_every_inferred_group_states_its_geography_and_why() -> None:
    raw = yaml.safe_load(locations._DATA.read_text())
    for name, group in catalog().groups.items():
        body = raw["groups"][name]
        if group.verified:
            assert not group.within and "within" not in body, name
            continue
        assert group.within and body["within_source"], name
        assert all(group.may_contain(r) for r in group.regions), name
        outside = sorted(r for r in catalog().all_regions if not group.may_contain(r))
        assert outside, f"{name}: a geography holding every region bounds nothing"
    us = catalog().groups["us-locations"]
    assert us.may_contain("us-west8") and not us.may_contain("asia-east1")
    assert not us.may_contain("northamerica-northeast1")


def test_every_group_records_its_source() -> None:
    groups = catalog().groups
    assert groups and all(g.source for g in groups.values())
    assert "ITAR" in groups["us-locations"].source
    per_region = catalog().group("in:us-east1-locations")
    assert per_region is not None and per_region.verified and per_region.source
