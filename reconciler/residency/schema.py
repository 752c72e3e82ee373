"""docs/residency.schema.json, generated from the residency model (residency/model.py)
as the plan's schema is from the plan model:

    python -m reconciler.residency.schema > docs/residency.schema.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from reconciler.plan.planschema import model_schema
from reconciler.plan.shape import object_node
from reconciler.residency.model import ResidencyReport

COMMAND = "python -m reconciler.residency.schema > docs/residency.schema.json"
SCHEMA_ID = "https://reconcile.invalid/schemas/residency-v1.json"


def residency_schema() -> dict[str, Any]:
    return model_schema(
        object_node(ResidencyReport), SCHEMA_ID,
        "reconcile residency (format_version 1.x): `reconcile residency --format json`",
        COMMAND, "residency report",
    )


if __name__ == "__main__":
    sys.stdout.write(json.dumps(residency_schema(), indent=2, ensure_ascii=False) + "\n")
