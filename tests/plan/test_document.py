"""The plan document (what the digest covers and `--out` saves) is written from the
model's fields by reconciler/codec.py: it must stay exactly the members of each record
in their declared order (the members left out when empty left out), or saved plans and
their digests would change meaning."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import msgspec
from plan_helpers import every_kind_plan

from reconciler.plan.model import Plan, digest_of


def _members(value: Any) -> Any:
    """A record's members by hand, in declared order (the reference the codec's
    document is held to)."""
    if isinstance(value, msgspec.Struct):
        return {name: _members(getattr(value, name)) for name in value.__struct_fields__}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _members(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _members(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_members(v) for v in value]
    return value.value if hasattr(value, "value") else value


def _asdict_document(plan: Plan) -> dict[str, Any]:
    """Every member, then the fix-ups: the digest is not content; members left out
    when empty."""
    data = _members(plan)
    del data["digest"]
    if not data["projects"]:
        del data["projects"]
    if not data["accepted"]:
        del data["accepted"]
    for key in ("organizations", "org_policy_parts"):
        if data["fingerprints"][key] is None:
            del data["fingerprints"][key]
    for rc, made in zip(data["resource_changes"], plan.resource_changes, strict=True):
        rc["reasons"] = [str(r) for r in made.reasons]  # written as their text
        for key in ("notes", "subscriptions", "left_behind", "left_behind_unknown",
                    "prune_subscribed_by", "unmanaged"):
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
