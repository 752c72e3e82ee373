"""The plan document (what the digest covers and `--out` saves) is written from the
model's fields by reconciler/codec.py: it must stay exactly what `dataclasses.asdict`
gives, key order included, or saved plans and their digests would change meaning."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from plan_helpers import every_kind_plan

from reconciler.plan.model import Plan, digest_of


def _asdict_document(plan: Plan) -> dict[str, Any]:
    """What Plan.content() was before it was written out: asdict, then the fix-ups."""
    data = asdict(plan)
    del data["digest"]  # the content: what the digest is computed over
    data["diagnostics"] = [d.to_json() for d in plan.diagnostics]
    if not data["projects"]:
        del data["projects"]
    for rc in data["resource_changes"]:  # left out when empty (exclude_if=is_empty)
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
        document = json.loads(plan.dumps())
        assert list(document) == ["format_version", "digest", *list(reference)[1:]]
        assert document == plan.to_json() == {**reference, "digest": plan.digest}


def test_to_json_is_a_copy_the_caller_may_change() -> None:
    plan = every_kind_plan([])
    digest = plan.digest
    document = plan.to_json()
    document["resource_changes"][0]["change"]["after"]["labels"]["team"] = "changed"
    document["fingerprints"]["topics"].clear()
    assert plan.digest == digest
    assert plan.resource_changes[0].change.after is not None
    assert plan.resource_changes[0].change.after["labels"]["team"] == "a"
