"""The plan document (what the digest covers and `--out` saves) is written from the
model's fields by plan/shape.py, sharing their read-only values: it must stay exactly
what `dataclasses.asdict` gives, key order included, or saved plans and their digests
would change meaning."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from plan_helpers import every_kind_plan

from reconciler.plan.model import Plan, digest_of


def _asdict_document(plan: Plan) -> dict[str, Any]:
    """What Plan.content() was before it was written out: asdict, then the fix-ups."""
    data = asdict(plan)
    data["diagnostics"] = [d.to_json() for d in plan.diagnostics]
    if not data["projects"]:
        del data["projects"]
    for rc, made in zip(data["resource_changes"], plan.resource_changes, strict=True):
        rc["reasons"] = [str(r) for r in made.reasons]  # written as their text
        # left out when empty (OMIT_EMPTY)
        for key in ("subscriptions", "left_behind", "left_behind_unknown", "prune_subscribed_by"):
            if not rc[key]:
                del rc[key]
    return {"format_version": data.pop("format_version"), **data}


def test_document_is_asdict_key_order_included() -> None:
    for projects in ([], ["p"]):
        plan = every_kind_plan(projects)
        ours, reference = plan.content(), _asdict_document(plan)
        assert json.dumps(ours) == json.dumps(reference)  # not sort_keys: order counts
        assert plan.digest == digest_of(reference)


def test_to_json_is_a_copy_the_caller_may_change() -> None:
    plan = every_kind_plan([])
    digest = plan.digest
    document = plan.to_json()
    document["resource_changes"][0]["change"]["after"]["labels"]["team"] = "changed"
    document["fingerprints"]["topics"].clear()
    assert plan.digest == digest
    assert plan.resource_changes[0].change.after is not None
    assert plan.resource_changes[0].change.after["labels"]["team"] == "a"
