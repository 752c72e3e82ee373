"""docs/plan.schema.json, the published JSON Schema of the plan file and of `plan
--format json`, generated from the plan model (plan/model.py) by reconciler/codec.py
(msgspec), the same model the reader of a plan file reads every field into:

    python -m reconciler.plan.planschema > docs/plan.schema.json
"""

from __future__ import annotations

import sys
from typing import Any

from reconciler.codec import indented_json, json_schema
from reconciler.plan.model import MAJOR, Plan

COMMAND = "python -m reconciler.plan.planschema > docs/plan.schema.json"
SCHEMA_ID = f"https://reconcile.invalid/schemas/plan-v{MAJOR}.json"


def plan_schema() -> dict[str, Any]:
    return json_schema(
        Plan, SCHEMA_ID,
        f"reconcile plan (format_version {MAJOR}.x): `reconcile plan --format json` and the "
        "--out PLANFILE",
        f"Generated from the plan model by `{COMMAND}`. Readers must ignore keys they do "
        "not know: a minor format_version may add some.",
        written_always=lambda name: name == "digest",  # a plan is written with its digest
    )


def plan_schema_text() -> str:
    return indented_json(plan_schema())


if __name__ == "__main__":
    sys.stdout.write(plan_schema_text())
