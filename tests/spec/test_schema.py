"""The checked-in JSON Schema is the one the models generate, and it agrees with
validate on the reference tree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from reconciler.spec.schema import spec_schema_text

ROOT = Path(__file__).parents[2]
CHECKED_IN = ROOT / "specs" / "schema.json"


def test_checked_in_schema_is_current() -> None:
    assert CHECKED_IN.read_text() == spec_schema_text(), (
        "specs/schema.json is stale: run `reconcile schema > specs/schema.json`"
    )


def test_schema_command_prints_the_schema(run_cli) -> None:
    result = run_cli("schema")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads(CHECKED_IN.read_text())


def test_reference_documents_satisfy_the_schema() -> None:
    schema = json.loads(CHECKED_IN.read_text())
    documents = [
        doc
        for path in sorted((ROOT / "specs").rglob("*.yaml"))
        if path.name != "org-policy.yaml"
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    assert len(documents) >= 8
    for doc in documents:
        jsonschema.validate(doc, schema)


def test_schema_rejects_a_duration_without_unit() -> None:
    schema = json.loads(CHECKED_IN.read_text())
    doc = {
        "apiVersion": "reconcile.pubsub/v1",
        "kind": "Topic",
        "metadata": {"project": "acme-payments", "name": "orders"},
        "spec": {"publishers": {"retry": {"totalTimeout": 5}}},
    }
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert errors
