"""The plan document (what the digest covers and `--out` saves) is written out field by
field in plan/model.py for speed: it must stay exactly what `dataclasses.asdict` gives,
key order included, or saved plans and their digests would change meaning."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.plan.model import (
    Change,
    Drift,
    FieldChange,
    Fingerprints,
    Plan,
    PlanTarget,
    Request,
    ResourceChange,
    digest_of,
)


def _every_kind(projects: list[str]) -> Plan:
    labels = {"team": "a", "reconcile-managed": "true"}
    policy = {"allowed_persistence_regions": ["us-east1"], "enforce_in_transit": True}
    create = ResourceChange(
        "projects/p/topics/new", "p", "new",
        Change(["create"], None, {"labels": labels, "message_storage_policy": policy},
               [FieldChange("labels", None, labels, added=["team"])],
               computed=["message_storage_policy"]),
        request=Request("CreateTopic", {"name": "projects/p/topics/new", "labels": labels}),
        source={"file": "specs/p.yaml", "line": 3},
    )
    update = ResourceChange(
        "projects/p/topics/old", "p", "old",
        Change(["update"], {"labels": {}, "message_storage_policy": None},
               {"labels": labels, "message_storage_policy": None},
               [FieldChange("labels", {}, labels, added=["reconcile-managed", "team"],
                            note="adopted")]),
        update_mask=["labels"],
        request=Request("UpdateTopic", {"name": "projects/p/topics/old", "labels": labels},
                        ["labels"]),
        reasons=["adopt"], warnings=["careful"],
    )
    delete = ResourceChange(
        "projects/p/topics/gone", "p", "gone",
        Change(["delete"], {"labels": labels, "message_storage_policy": None}, None),
        request=Request("DeleteTopic", {"name": "projects/p/topics/gone"}),
    )
    noop = ResourceChange(
        "projects/p/topics/same", "p", "same",
        Change(["no-op"], {"labels": labels, "message_storage_policy": policy},
               {"labels": labels, "message_storage_policy": policy}),
        source={"file": "specs/p.yaml", "line": 9},
    )
    return Plan(
        resource_changes=[create, update, delete, noop],
        diagnostics=[Diagnostic("specs/p.yaml", 3, 1, Severity.WARNING, "w-code", "a warning")],
        drift=[Drift("projects/p/topics/same", "misses-allowed-locations", "m", "f",
                     missing=["us-west1"])],
        fingerprints=Fingerprints({"projects/p/topics/new": "absent"}, {"p": "ab" * 32}),
        target=PlanTarget("emulator", "127.0.0.1:1"),
        prune=True,
        created_at="2026-11-30T16:00:00+00:00",
        projects=projects,
    )


def _asdict_document(plan: Plan) -> dict[str, Any]:
    """What Plan.content() was before it was written out: asdict, then the fix-ups."""
    data = asdict(plan)
    data["diagnostics"] = [d.to_json() for d in plan.diagnostics]
    if not data["projects"]:
        del data["projects"]
    return {"format_version": data.pop("format_version"), **data}


def test_document_is_asdict_key_order_included() -> None:
    for projects in ([], ["p"]):
        plan = _every_kind(projects)
        ours, reference = plan.content(), _asdict_document(plan)
        assert json.dumps(ours) == json.dumps(reference)  # not sort_keys: order counts
        assert plan.digest == digest_of(reference)


def test_to_json_is_a_copy_the_caller_may_change() -> None:
    plan = _every_kind([])
    digest = plan.digest
    document = plan.to_json()
    document["resource_changes"][0]["change"]["after"]["labels"]["team"] = "changed"
    document["fingerprints"]["topics"].clear()
    assert plan.digest == digest
    assert plan.resource_changes[0].change.after is not None
    assert plan.resource_changes[0].change.after["labels"]["team"] == "a"
