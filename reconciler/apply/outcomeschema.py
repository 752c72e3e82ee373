"""docs/apply-outcome.schema.json, the JSON Schema of `reconcile apply --format json`,
generated from the outcome's dataclasses (reconciler/apply/outcome.py) by
reconciler/codec.py, never written by hand:

    python -m reconciler.apply.outcomeschema > docs/apply-outcome.schema.json

(tests/apply/test_apply_outcome.py fails when the published file is stale).
"""

from __future__ import annotations

import sys
from typing import Any

from reconciler.apply.outcome import ApplyOutcome
from reconciler.codec import indented_json, json_schema

COMMAND = "python -m reconciler.apply.outcomeschema > docs/apply-outcome.schema.json"
SCHEMA_ID = "https://reconcile.invalid/schemas/apply-outcome-v1.json"


def outcome_schema() -> dict[str, Any]:
    return json_schema(
        ApplyOutcome, SCHEMA_ID, "reconcile apply outcome",
        f"{(ApplyOutcome.__doc__ or '').strip()} Generated from the outcome model by "
        f"`{COMMAND}`. Readers must ignore keys they do not know: a minor format_version "
        "may add some.",
    )


def outcome_schema_text() -> str:
    return indented_json(outcome_schema())


if __name__ == "__main__":
    sys.stdout.write(outcome_schema_text())
