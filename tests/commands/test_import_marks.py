"""The marks `reconcile import` writes at the values the org would refuse today
(importer.mark_findings): a comment that holds only the finding's code, at the end of
the value's line; a value that does not end on its line gets the comment on a line of
its own above it; the file always reads back as the same data."""

from __future__ import annotations

import yaml

from reconciler.importer import Finding, mark_findings
from reconciler.spec.export import render_documents

KEY = "projects/keys-b/locations/us-east1/keyRings/r/cryptoKeys/k"


def _topic(name: str, spec: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "reconcile.pubsub/v1", "kind": "Topic",
            "metadata": {"project": "proj-marks", "name": name}, "spec": spec}


def test_a_mark_sits_at_the_end_of_its_value_s_line() -> None:
    docs = [_topic("null", {"kmsKeyName": KEY, "messageStoragePolicy": {
        "allowedPersistenceRegions": ["asia-east1", "europe-west1"], "enforceInTransit": False,
    }})]
    text = render_documents(docs, "header")
    marked = mark_findings(text, {"null": [
        Finding("existing-cmek-key-project", ("spec", "kmsKeyName")),
        Finding("existing-location-denied",
                ("spec", "messageStoragePolicy", "allowedPersistenceRegions"), "asia-east1"),
    ]})
    lines = marked.splitlines()
    assert f"  kmsKeyName: {KEY}  # plan warns: existing-cmek-key-project" in lines
    assert "    - asia-east1  # plan warns: existing-location-denied" in lines
    assert "    - europe-west1" in lines
    assert list(yaml.safe_load_all(marked)) == list(yaml.safe_load_all(text))


def test_a_value_over_several_lines_gets_its_mark_on_a_line_above() -> None:
    folded = " ".join(["word"] * 40)  # folded by the writer: it does not end on its line
    docs = [_topic("orders", {"kmsKeyName": folded})]
    text = render_documents(docs, "header")
    assert len([x for x in text.splitlines() if "word" in x]) > 1
    marked = mark_findings(text, {"orders": [Finding("existing-cmek-key-project",
                                                     ("spec", "kmsKeyName"))]})
    assert list(yaml.safe_load_all(marked)) == list(yaml.safe_load_all(text))
    lines = marked.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("  kmsKeyName:"))
    assert lines[at - 1].strip() == "# plan warns: existing-cmek-key-project"


def test_a_value_in_the_defaults_document_is_marked_at_the_topic_s_name() -> None:
    shared = {"apiVersion": "reconcile.pubsub/v1", "kind": "Defaults",
              "metadata": {"name": "imported"}, "spec": {"kmsKeyName": KEY}}
    text = render_documents([shared, _topic("orders", {}), _topic("refunds", {})], "header")
    marked = mark_findings(text, {"refunds": [Finding("existing-cmek-key-project",
                                                      ("spec", "kmsKeyName"))]})
    lines = marked.splitlines()
    assert "  name: refunds  # plan warns: existing-cmek-key-project" in lines
    assert "  name: orders" in lines and f"  kmsKeyName: {KEY}" in lines
