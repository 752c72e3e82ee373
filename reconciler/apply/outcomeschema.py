"""The JSON Schema of `reconcile apply --format json`, generated from the outcome's
dataclasses (reconciler/apply/outcome.py), never written by hand:

    python -m reconciler.apply.outcomeschema > docs/apply-outcome.schema.json

(tests/apply/test_apply_outcome.py fails when the published file is stale). Imported
by nothing on the command's path: pydantic is only the generator here.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import TypeAdapter

from reconciler.apply.outcome import ApplyOutcome

SCHEMA_ID = "https://reconcile.invalid/schemas/apply-outcome-v1.json"


def _one_line(node: Any) -> Any:
    """Descriptions as one line each (the docstrings are wrapped for the source)."""
    if isinstance(node, dict):
        return {
            k: " ".join(v.split()) if k == "description" else _one_line(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_one_line(v) for v in node]
    return node


def outcome_schema() -> dict[str, Any]:
    schema = _one_line(TypeAdapter(ApplyOutcome).json_schema(mode="serialization"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "description": (ApplyOutcome.__doc__ or "").strip(),
    }


def outcome_schema_text() -> str:
    return json.dumps(outcome_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(outcome_schema_text())
