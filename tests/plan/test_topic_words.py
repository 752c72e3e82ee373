"""Every finding about a topic names that topic, at that topic's own line, whatever
remembers verdicts for many topics (issue 45: a plan's org-policy memo lent the first
topic's name to every topic after it).

Trees of many topics, two or more in each situation, so that a verdict worked out for
one topic could be reused for the next, cover each diagnostic code `validate` and
`plan` report for one topic; every diagnostic that names a topic must name its own
(`topic`, and in its message), sit in that topic's document, and name no other
topic of the tree. The text output groups a finding that repeats across topics, with
each topic at its own line; json keeps one per topic and line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.orgpolicy.snapshot import load_snapshot
from reconciler.yamltext import dump_all

ORG = "organizations/4501"
WORDS, FREE, NONE = "words-org", "words-free", "words-none"
KEY_OK = "projects/keys-ok/locations/europe-west1/keyRings/r/cryptoKeys/k"
KEY_BAD = "projects/keys-bad/locations/europe-west1/keyRings/r/cryptoKeys/k"
KEY_FAR = "projects/keys-far/locations/europe-west1/keyRings/r/cryptoKeys/k"
EU = ["europe-west1"]
GOOD = {"team": "pay", "tier": "gold"}  # what the custom constraints ask

# What `validate` and `plan` must each report, for two topics or more each.
VALIDATE_CODES = {
    "org-location-denied", "org-in-transit", "org-deny-all", "org-cmek-required",
    "org-cmek-key-project", "publisher-region-denied", "publisher-endpoint-denied",
    "publisher-region-rerouted", "publisher-ordering-region", "org-custom-constraint",
    "org-custom-unevaluable",
}
PLAN_CODES = VALIDATE_CODES | {
    "existing-cmek-required", "existing-cmek-key-project", "existing-location-denied",
    "existing-in-transit-off", "existing-custom-constraint", "label-budget",
    "owned-by-another-tree", "org-custom-not-checked",
}
FINDING_CODES = {"plan-warning", "drift-allowed-and-disallowed-stale", "prune-unowned",
                 "prune-subscribed"}
# Findings about a whole project or several topics at once: they name no one topic.
NOT_ONE_TOPIC = {"org-custom-at-plan", "org-policy-stale", "undeclared-topics",
                 "org-policy-missing", "emulator-no-storage-policy", "subscriptions-unknown"}


def _constraint(name: str, condition: str, methods: list[str], action: str = "ALLOW"
                ) -> list[dict[str, Any]]:
    return [
        {"name": f"{ORG}/customConstraints/{name}",
         "resourceTypes": ["pubsub.googleapis.com/Topic"], "methodTypes": methods,
         "condition": condition, "actionType": action, "description": f"{name} says no."},
        {"name": f"{ORG}/policies/{name}", "spec": {"rules": [{"enforce": True}]}},
    ]


def _values(project: str, constraint: str, **values: Any) -> dict[str, Any]:
    return {"name": f"projects/{project}/policies/{constraint}",
            "spec": {"rules": [{"values": values}] if values else [{"denyAll": True}]}}


SNAPSHOT: list[dict[str, Any]] = [
    _values(WORDS, "gcp.resourceLocations", allowedValues=["in:eu-locations"]),
    _values(FREE, "gcp.resourceLocations", allowedValues=["in:eu-locations"]),
    _values(NONE, "gcp.resourceLocations"),  # deny all
    {"name": f"projects/{WORDS}/policies/pubsub.enforceInTransitRegions",
     "spec": {"rules": [{"enforce": True}]}},
    _values(WORDS, "gcp.restrictNonCmekServices", deniedValues=["pubsub.googleapis.com"]),
    # keys-ok is under the organization, keys-bad under another: denied; where
    # keys-far is nobody says: cannot tell.
    _values(WORDS, "gcp.restrictCmekCryptoKeyProjects", allowedValues=[f"under:{ORG}"]),
    *_constraint("custom.team", "'team' in resource.labels", ["CREATE", "UPDATE"]),
    *_constraint("custom.tier", "resource.labels['tier'] == 'gold'", ["CREATE", "UPDATE"]),
    *_constraint("custom.noLegacy",
                 "'team' in resource.labels && resource.labels['team'] == 'legacy'",
                 ["CREATE"], action="DENY"),
    *_constraint("custom.active", "resource.state == 'ACTIVE'", ["CREATE", "UPDATE"]),
    {"ancestry": {**{f"projects/{p}": ORG for p in (WORDS, FREE, NONE, "keys-ok")},
                  "projects/keys-bad": "organizations/999"}},
]


def _topic(project: str, name: str, *, labels: dict[str, str] | None = None,
           regions: list[str] | None = None, eit: bool | None = None,
           policy: str | None = None, key: str | None = None,
           publishers: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["labels"] = labels
    if policy is not None:
        spec["messageStoragePolicy"] = policy
    elif regions is not None:
        spec["messageStoragePolicy"] = {"allowedPersistenceRegions": regions}
        if eit is not None:
            spec["messageStoragePolicy"]["enforceInTransit"] = eit
    if key:
        spec["kmsKeyName"] = key
    if publishers:
        spec["publishers"] = publishers
    return {"apiVersion": "reconcile.pubsub/v1", "kind": "Topic",
            "metadata": {"project": project, "name": name}, "spec": spec}


def _pair(make: Any, stem: str, n: int = 3) -> list[dict[str, Any]]:
    return [make(f"{stem}-{i}") for i in range(1, n + 1)]


def _new_topics() -> list[dict[str, Any]]:
    """Topics no one has made: every org rule's refusal and the publishers' rules."""
    sub = {"regions": ["us-east1"], "messageOrdering": False}
    return [
        *_pair(lambda n: _topic(WORDS, n, regions=["us-east1"]), "region"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, eit=False, key=KEY_OK), "transit"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, key=KEY_BAD), "keybad"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, key=KEY_FAR), "keyfar"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, key=KEY_OK, publishers=sub), "pubdenied"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, key=KEY_OK, publishers={
            "endpoint": "us-east1"}), "endpoint"),
        *_pair(lambda n: _topic(WORDS, n, policy="inherit", key=KEY_OK, publishers={
            "regions": ["us-east1"], "messageOrdering": True}), "ordered"),
        *_pair(lambda n: _topic(WORDS, n, regions=EU, eit=True, key=KEY_OK), "custom"),
        *_pair(lambda n: _topic(FREE, n, labels=GOOD, regions=EU, publishers=sub), "rerouted"),
        *_pair(lambda n: _topic(NONE, n, labels=GOOD, policy="inherit",
                                publishers=sub), "nowhere"),
    ]


# Topics made before the constraints: (spec, what the live topic has).
def _live_topics() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    foreign = {f"x-{i:02d}": "v" for i in range(61)}
    return [
        *[(_topic(WORDS, n, labels=GOOD, regions=["us-east1"], eit=False),
           {"regions": ["us-east1"], "eit": False}) for n in ("old-1", "old-2", "old-3")],
        *[(_topic(WORDS, n, labels=GOOD, regions=EU, eit=True, key=KEY_BAD),
           {"regions": EU, "eit": True, "key": KEY_BAD}) for n in ("oldkey-1", "oldkey-2")],
        *[(_topic(WORDS, n, labels={"team": "legacy", "tier": "gold"}, regions=EU, eit=True,
                  key=KEY_OK), {"regions": EU, "eit": True, "key": KEY_OK})
          for n in ("legacy-1", "legacy-2")],
        *[(_topic(WORDS, n, labels=GOOD, regions=EU, eit=True, key=KEY_OK),
           {"regions": EU, "eit": True, "key": KEY_OK, "labels": foreign})
          for n in ("crowded-1", "crowded-2")],
        *[(_topic(WORDS, n, labels=GOOD, regions=EU, eit=True, key=KEY_OK),
           {"regions": EU, "eit": True, "key": KEY_OK,
            "labels": {"reconcile-managed": "true", "reconcile-owner": "other"}})
          for n in ("taken-1", "taken-2")],
    ]


def _make_live(publisher: Any, project: str, name: str, live: dict[str, Any]) -> None:
    request: dict[str, Any] = {"name": f"projects/{project}/topics/{name}",
                               "labels": live.get("labels", {})}
    if "regions" in live:
        request["message_storage_policy"] = {
            "allowed_persistence_regions": live["regions"],
            "enforce_in_transit": live.get("eit", False)}
    if live.get("key"):
        request["kms_key_name"] = live["key"]
    publisher.create_topic(request=request)


def _declarations(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, address) of each Topic document of a file."""
    lines = path.read_text().splitlines()
    starts = [0] + [i + 1 for i, line in enumerate(lines) if line.startswith("---")]
    out = []
    project = None  # a Defaults document's, for the topics after it
    for k, start in enumerate(starts):
        end = (starts[k + 1] - 1) if k + 1 < len(starts) else len(lines)
        doc = yaml.safe_load("\n".join(lines[start:end]))
        if doc and doc.get("kind") == "Defaults":
            project = doc["spec"].get("project", project)
        if doc and doc.get("kind") == "Topic":
            meta = doc["metadata"]
            owner = meta.get("project", project)
            out.append((start + 1, end, f"projects/{owner}/topics/{meta['name']}"))
    return out


def _names_its_own_topic(found: list[dict[str, Any]], path: Path, every: list[str]) -> None:
    """Each finding about one topic: `topic` set, named in the message, no other topic
    of the tree named, and placed in that topic's document (a declared one)."""
    declared = _declarations(path)
    for d in found:
        if d["code"] in NOT_ONE_TOPIC:
            continue
        topic = d["topic"]
        assert topic, d
        assert re.search(re.escape(topic) + r"(?![\w.~+%-])", d["message"]), d
        others = [a for a in every if a != topic
                  and re.search(re.escape(a) + r"(?![\w.~+%-])", d["message"])]
        assert not others, (others, d)
        within = [a for first, last, a in declared if first <= d["line"] <= last]
        if d["file"] == str(path):
            assert within == [topic], (within, d)
        else:  # an undeclared topic: the finding is placed on its name
            assert d["file"] == topic and topic not in [a for _, _, a in declared], d


@pytest.fixture
def world(local_server: Any, publisher_client: Any, tmp_path: Path) -> Any:
    """Tree A: new and live topics of the three projects, the live ones made before the
    policies are put on the server. `validate` judges them with the snapshot
    `full.yaml`; the tree's own snapshot holds only the ancestry, so that what validate
    refuses does not stop `plan`, which judges every topic with the live policies."""
    live = _live_topics()
    for spec, shape in live:
        _make_live(publisher_client, spec["metadata"]["project"], spec["metadata"]["name"],
                   shape)
    root = tmp_path / "a"
    root.mkdir()
    (tmp_path / "full.yaml").write_text(yaml.safe_dump_all(SNAPSHOT))
    (root / "org-policy.yaml").write_text(yaml.safe_dump_all(SNAPSHOT[-1:]))
    local_server.seed_policies(load_snapshot(tmp_path / "full.yaml"))
    docs = _new_topics() + [spec for spec, _ in live]
    (root / "topics.yaml").write_text(dump_all(docs))
    every = [f"projects/{d['metadata']['project']}/topics/{d['metadata']['name']}"
             for d in docs]
    return root, every


def test_validate_names_each_topic_at_its_own_line(run_cli: Any, world: Any) -> None:
    root, every = world
    full = str(root.parent / "full.yaml")
    result = run_cli("validate", str(root), "--org-policy", full, "--format", "json")
    found = json.loads(result.stdout)
    codes = [d["code"] for d in found if d["topic"]]
    assert {c for c in set(codes) if codes.count(c) >= 2} >= VALIDATE_CODES, sorted(set(codes))
    _names_its_own_topic(found, root / "topics.yaml", every)
    # Text: a finding that repeats across topics once, each topic at its own line.
    text = run_cli("validate", str(root), "--org-policy", full)
    groups = re.findall(r"(?m)^projects/words-org: warning\[org-cmek-required\]: .*$", text.stdout)
    # the three new key-less topics, and the three that exist (validate cannot know)
    assert len(groups) == 1 and "each of these 6 topics" in groups[0], text.stdout
    members = text.stdout.split(groups[0], 1)[1].splitlines()[1:7]
    lines = (root / "topics.yaml").read_text().splitlines()
    for name in ("region-1", "region-2", "region-3", "old-1", "old-2", "old-3"):
        line = lines.index(f"  name: {name}") + 1  # metadata.name, where it is placed
        address = f"projects/{WORDS}/topics/{name}"
        assert f"  {root / 'topics.yaml'}:{line}:9: {address}" in members, members


def test_plan_names_each_topic_at_its_own_line(
    run_cli: Any, world: Any, local_server: Any
) -> None:
    root, every = world
    result = run_cli("plan", str(root), "--emulator", local_server.address, "--format", "json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)["diagnostics"]
    codes = [d["code"] for d in found if d["topic"]]
    assert {c for c in set(codes) if codes.count(c) >= 2} >= PLAN_CODES, sorted(set(codes))
    _names_its_own_topic(found, root / "topics.yaml", every)
    # The bug of the trial: each key-less topic's refusal names that topic.
    refused = {d["topic"]: d["message"] for d in found if d["code"] == "org-cmek-required"}
    for name in ("region-1", "region-2", "region-3"):
        address = f"projects/{WORDS}/topics/{name}"
        assert f"refuses to create topic {address} without one" in refused[address]


def test_ci_findings_name_each_topic_at_its_own_line(
    run_cli: Any, local_server: Any, publisher_client: Any, subscriber_client: Any,
    tmp_path: Path,
) -> None:
    """A plan without errors: its warnings and drift as CI findings (SARIF), and
    --prune's, one per topic and line."""
    for name in ("drift-1", "drift-2"):
        _make_live(publisher_client, FREE, name, {"regions": ["us-east1"]})
    for name in ("narrow-1", "narrow-2"):
        _make_live(publisher_client, FREE, name, {"regions": ["europe-west1", "europe-west4"]})
    for name in ("legacy-1", "legacy-2"):
        _make_live(publisher_client, FREE, name, {"labels": {"reconcile-managed": "true"}})
    for name in ("subbed-1", "subbed-2"):
        _make_live(publisher_client, FREE, name, {
            "labels": {"reconcile-managed": "true", "reconcile-owner": "team-b"}})
        subscriber_client.create_subscription(
            name=f"projects/{FREE}/subscriptions/{name}",
            topic=f"projects/{FREE}/topics/{name}")
    local_server.seed_policies(load_snapshot_text(tmp_path, SNAPSHOT[1:2]))
    root = tmp_path / "b"
    root.mkdir()
    docs = [
        {"apiVersion": "reconcile.pubsub/v1", "kind": "Owner", "metadata": {"name": "team-b"}},
        *[_topic(FREE, n, labels=GOOD) for n in ("drift-1", "drift-2")],
        *[_topic(FREE, n, labels=GOOD, regions=EU) for n in ("narrow-1", "narrow-2")],
    ]
    (root / "topics.yaml").write_text(dump_all(docs))
    (root / "org-policy.yaml").write_text(yaml.safe_dump_all(SNAPSHOT[1:2]))
    result = run_cli("plan", str(root), "--emulator", local_server.address, "--prune",
                     "--format", "sarif")
    assert result.exit_code == 0, result.output
    found = [
        {"code": r["ruleId"], "message": r["message"]["text"],
         "file": r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         "line": r["locations"][0]["physicalLocation"]["region"]["startLine"],
         "topic": _topic_of(r["message"]["text"])}
        for r in json.loads(result.stdout)["runs"][0]["results"]
    ]
    codes = [d["code"] for d in found]
    assert {c for c in set(codes) if codes.count(c) >= 2} >= FINDING_CODES, sorted(set(codes))
    every = [f"projects/{FREE}/topics/{n}" for n in (
        "drift-1", "drift-2", "narrow-1", "narrow-2", "legacy-1", "legacy-2", "subbed-1",
        "subbed-2")]
    for d in found:  # SARIF has no topic field: the one the message names
        d["file"] = str(root / "topics.yaml") if d["file"].endswith("topics.yaml") else (
            d["file"])
    _names_its_own_topic(found, root / "topics.yaml", every)


def load_snapshot_text(tmp_path: Path, docs: list[dict[str, Any]]) -> Any:
    path = tmp_path / "seed.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load_snapshot(path)


def _topic_of(message: str) -> str | None:
    found = re.findall(r"projects/[a-z][a-z0-9-]+/topics/[A-Za-z][\w.~+%-]*[\w~+%-]", message)
    return found[0] if found else None


def test_the_trial_reproduction_names_each_topic(
    run_cli: Any, local_server: Any, publisher_client: Any, orgpolicy_client: Any,
    tmp_path: Path,
) -> None:
    """The issue's reproduction: three key-less topics, gcp.restrictNonCmekServices
    denying pubsub on the project, `import`, `plan`: each finding at a topic's line
    names that topic and no other."""
    names = ("aaa-first", "bbb-second", "ccc-third")
    for name in names:
        publisher_client.create_topic(name=f"projects/proj-one/topics/{name}")
    orgpolicy_client.create_policy(parent="projects/proj-one", policy={
        "name": "projects/proj-one/policies/gcp.restrictNonCmekServices",
        "spec": {"rules": [{"values": {"denied_values": ["pubsub.googleapis.com"]}}]},
    })
    specs = tmp_path / "specs"
    imported = run_cli("import", "--project", "proj-one", "--out", str(specs),
                       "--emulator", local_server.address)
    assert imported.exit_code == 0, imported.output
    result = run_cli("plan", str(specs), "--emulator", local_server.address,
                     "--format", "json")
    assert result.exit_code == 0, result.output
    found = [d for d in json.loads(result.stdout)["diagnostics"] if "cmek" in d["code"]]
    declared = _declarations(specs / "proj-one.yaml")
    assert len(found) == len(names) == len(declared)
    for d in found:
        (own,) = [a for first, last, a in declared if first <= d["line"] <= last]
        named = re.findall(r"projects/proj-one/topics/[\w.~+%-]*[\w~+%-]", d["message"])
        assert set(named) == {own}, (own, d["message"])
