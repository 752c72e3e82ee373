"""What import writes under Defaults documents that already apply (spec/inherited.py),
checked with the spec loader's own merge: the nearest document wins a whole value,
labels merge outermost first; a value the topic states itself refuses an inherited
one; `inherit` and `publishers: {}` are written where they give the topic back as it
is; what no spec can refuse is a conflict naming the document's line, grouped."""

from __future__ import annotations

from pathlib import Path

from reconciler.diagnostics import Diagnostics
from reconciler.spec.defaults import defaults_chain, index_defaults
from reconciler.spec.export import build_documents
from reconciler.spec.inherited import SHOWN_TOPICS, Inherited, inherited_values
from reconciler.spec.loader import load_tree
from reconciler.topic import ObservedTopic, StoragePolicy, TopicShape

P = "acme-under"
OUTER = """\
apiVersion: reconcile.pubsub/v1
kind: Defaults
spec:
  labels: {team: outer, tier: gold}
  messageStoragePolicy: {allowedPersistenceRegions: [us-central1]}
  publishers: {regions: [us-east1]}
"""
INNER = """\
apiVersion: reconcile.pubsub/v1
kind: Defaults
spec:
  labels:
    team: inner
  messageRetentionDuration: 2d
  kmsKeyName: projects/k/locations/us-east1/keyRings/r/cryptoKeys/c
"""


def _inherited(tmp_path: Path) -> tuple[Inherited, Path]:
    inner = tmp_path / "org" / "team"
    inner.mkdir(parents=True)
    (tmp_path / "org" / "defaults.yaml").write_text(OUTER)
    (inner / "defaults.yaml").write_text(INNER)
    tree = load_tree([tmp_path / "org"], Diagnostics())
    chain = defaults_chain(inner, index_defaults(tree.defaults, Diagnostics()))
    return inherited_values(chain), inner


def _topic(name: str, **shape: object) -> ObservedTopic:
    return ObservedTopic.of_shape(f"projects/{P}/topics/{name}", TopicShape(**shape), "d")


def test_nearest_document_wins_and_labels_merge(tmp_path: Path) -> None:
    inherited, inner = _inherited(tmp_path)
    assert {k: g.shown for k, g in inherited.labels.items()} == {
        "team": "label team='inner'", "tier": "label tier='gold'",
    }
    assert inherited.labels["team"].where == f"{inner}/defaults.yaml:5"
    assert inherited.labels["tier"].where == f"{tmp_path}/org/defaults.yaml:4"
    assert inherited.fields["messageRetentionDuration"].where == f"{inner}/defaults.yaml:6"
    assert inherited.fields["messageStoragePolicy"].shown == (
        "messageStoragePolicy (allowedPersistenceRegions [us-central1])"
    )
    assert set(inherited.fields) == {
        "messageStoragePolicy", "messageRetentionDuration", "kmsKeyName", "publishers"
    }


def test_own_values_refuse_inherited_ones_and_the_rest_are_conflicts(tmp_path: Path) -> None:
    inherited, inner = _inherited(tmp_path)
    key = "projects/k/locations/us-east1/keyRings/r/cryptoKeys/other"
    full = {"labels": {"team": "a", "tier": "b"}, "retention": "3600s", "kms_key_name": key}
    topics = [
        _topic("stated", policy=StoragePolicy.of(["europe-west1"]), **full),
        _topic("no-policy", **full),  # the org policy computes none: `inherit` is it
        *(_topic(f"bare-{i}") for i in range(SHOWN_TOPICS + 2)),
    ]
    result = build_documents({P: topics}, computed={P: None}, inherited=inherited)
    docs = {d["metadata"]["name"]: d["spec"] for d in result.documents[P]}
    assert docs["stated"]["messageStoragePolicy"] == {
        "allowedPersistenceRegions": ["europe-west1"], "enforceInTransit": False,
    }
    assert docs["no-policy"]["messageStoragePolicy"] == "inherit"
    assert docs["stated"]["publishers"] == {} == docs["no-policy"]["publishers"]
    messages = [c.message() for c in result.conflicts]
    assert len(messages) == 4  # team, tier, retention, key: the bare topics lack each
    team = next(m for m in messages if "label team" in m)
    assert team.startswith(f"{inner}/defaults.yaml:5: gives label team='inner' to every "
                           f"topic in {inner}/ and below; the live topics ")
    assert team.endswith(f"projects/{P}/topics/bare-4 and 2 more have no label team")


def test_a_policy_inherit_would_not_give_back_is_a_conflict(tmp_path: Path) -> None:
    inherited, _ = _inherited(tmp_path)
    labels = {"team": "a", "tier": "b"}
    computed = StoragePolicy.of(["us-east1"])
    topics = [_topic("none", labels=labels, retention="600s",
                     kms_key_name="projects/k/locations/l/keyRings/r/cryptoKeys/c")]
    for given in ({P: computed}, {}):  # the org policy computes another one, or unknown
        result = build_documents({P: topics}, computed=given, inherited=inherited)
        assert [c.what for c in result.conflicts] == ["messageStoragePolicy"]
        assert result.conflicts[0].topics == [f"projects/{P}/topics/none"]
