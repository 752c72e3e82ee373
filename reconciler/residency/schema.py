"""docs/residency.schema.json, generated from the residency model (residency/model.py)
by reconciler/codec.py (msgspec), as the plan's schema is from the plan model:

    python -m reconciler.residency.schema > docs/residency.schema.json
"""

from __future__ import annotations

import sys
from typing import Any

from reconciler.codec import indented_json, json_schema
from reconciler.residency.model import ResidencyReport

COMMAND = "python -m reconciler.residency.schema > docs/residency.schema.json"
SCHEMA_ID = "https://reconcile.invalid/schemas/residency-v1.json"


def residency_schema() -> dict[str, Any]:
    return json_schema(
        ResidencyReport, SCHEMA_ID,
        "reconcile residency (format_version 1.x): `reconcile residency --format json`",
        f"Generated from the residency report model by `{COMMAND}`. Readers must ignore "
        "keys they do not know: a minor format_version may add some.",
    )


if __name__ == "__main__":
    sys.stdout.write(indented_json(residency_schema()))
