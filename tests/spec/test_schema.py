"""The checked-in JSON Schema is the one the models generate, and it agrees with
validate on the reference tree."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
    kinds = sorted({doc["kind"] for doc in documents})
    assert kinds == ["Defaults", "HedgingProfile", "Topic"]  # every kind is exercised
    for doc in documents:
        jsonschema.validate(doc, schema)


def test_schema_rejects_a_duration_without_unit() -> None:
    schema = json.loads(CHECKED_IN.read_text())
    doc: dict[str, Any] = {
        "apiVersion": "reconcile.pubsub/v1",
        "kind": "Topic",
        "metadata": {"project": "acme-payments", "name": "orders"},
        "spec": {"publishers": {"retry": {"totalTimeout": 5}}},
    }
    validator = jsonschema.Draft202012Validator(schema)
    at_fault = {tuple(e.absolute_path) for e in _leaf_errors(validator.iter_errors(doc))}
    assert ("spec", "publishers", "retry", "totalTimeout") in at_fault
    # The same document with a unit is valid: the unit is what the schema asks for.
    doc["spec"] = {"publishers": {"retry": {"totalTimeout": "5s"}}}
    assert list(validator.iter_errors(doc)) == []


def _leaf_errors(errors: Iterable[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    """The innermost errors of anyOf/oneOf branches: the ones that name a field."""
    out: list[jsonschema.ValidationError] = []
    for error in errors:
        out.extend(_leaf_errors(error.context) if error.context else [error])
    return out
