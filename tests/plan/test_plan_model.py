"""The plan model is the format: a plan cannot change once made, its digest is computed
once, each change's request and fields (and the plan's digest) are derived from it, and
the reader of a plan file checks every member of every object the model writes
(reconciler/codec.py, plan/planfile.py)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import every_kind_plan

from reconciler.codec import from_json, replace
from reconciler.errors import PlanRefused
from reconciler.ownership import PLAN_LABEL
from reconciler.plan import model
from reconciler.plan.model import Change, LabelMerge, Plan, Request, ResourceChange, digest_of
from reconciler.plan.planfile import read_plan
from reconciler.plan.planschema import plan_schema
from reconciler.render.formats import render

FROZEN = (TypeError, AttributeError, dataclasses.FrozenInstanceError)


def test_a_plan_cannot_change_once_made() -> None:
    plan = every_kind_plan(["p"])
    digest = plan.digest
    rc = plan.resource_changes[1]
    changes: list[Any] = [
        lambda: setattr(plan, "prune", False),
        lambda: setattr(rc, "update_mask", []),
        lambda: setattr(rc.change, "after", None),
        lambda: plan.resource_changes.append(rc),
        lambda: plan.projects.clear(),
        lambda: rc.reasons.append("sneaky"),
        lambda: rc.update_mask.__setitem__(0, "message_storage_policy"),
        lambda: rc.change.after["labels"].update(team="b"),  # type: ignore[index]
        lambda: rc.request.label_merge.set.pop("team"),  # type: ignore[union-attr]
        lambda: rc.change.fields[0].added.extend(["x"]),
        lambda: plan.fingerprints.topics.setdefault("projects/p/topics/x", "absent"),
        lambda: plan.resource_changes[3].source.clear(),  # type: ignore[union-attr]
    ]
    for change in changes:
        with pytest.raises(FROZEN):
            change()
    assert plan.digest == digest == model.digest_of(plan.content())


def test_what_a_plan_is_made_from_is_copied_not_shared() -> None:
    labels = {"team": "a", "reconcile-managed": "true"}
    after = {"labels": labels, "message_storage_policy": None}
    rc = ResourceChange("projects/p/topics/t", "p", "t", Change(["create"], None, after))
    plan = Plan(resource_changes=[rc])
    digest = plan.digest
    labels["team"] = "changed"
    after["message_storage_policy"] = {"allowed_persistence_regions": ["x"]}
    assert rc.change.after == {"labels": {"team": "a", "reconcile-managed": "true"},
                               "message_storage_policy": None}
    assert model.digest_of(plan.content()) == digest
    thawed = plan.to_json()
    thawed["resource_changes"][0]["change"]["after"]["labels"]["team"] = "mine"
    assert rc.change.after["labels"]["team"] == "a"  # type: ignore[index]
    assert copy.deepcopy(plan) == plan


def test_the_digest_is_computed_once_for_every_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    computed: list[str] = []
    real = model.digest_of

    def counting(data: Any) -> str:
        computed.append("digest")
        return real(data)

    monkeypatch.setattr(model, "digest_of", counting)
    plan = every_kind_plan()
    shown = [render(plan, fmt) for fmt in ("text", "markdown", "json")] + [plan.dumps()]
    assert computed == ["digest"]
    assert all(plan.digest in text for text in shown)


def test_requests_fields_and_the_digest_are_derived_whatever_is_given() -> None:
    change = Change(
        ["update"],
        {"labels": {"a": "1"}, "message_storage_policy": None},
        {"labels": {"a": "2"}, "message_storage_policy": None},
    )
    forged = Request("UpdateTopic", {"name": "projects/p/topics/victim"}, ["labels"])
    rc = ResourceChange("projects/p/topics/t", "p", "t", change, ["labels"], request=forged)
    assert rc.request == Request(
        "UpdateTopic", {"name": "projects/p/topics/t"}, ["labels"], LabelMerge({"a": "2"}),
        PLAN_LABEL,
    )
    assert rc.request.update_mask == rc.update_mask == ["labels"]
    assert [(f.path, f.before, f.after) for f in rc.change.fields] == [
        ("labels", {"a": "1"}, {"a": "2"})
    ]
    assert change.fields == []  # the change given is not changed: the plan holds a copy
    noop = ResourceChange(
        "projects/p/topics/t", "p", "t",
        Change(["no-op"], change.before, change.before, fields=rc.change.fields),
        request=forged,
    )
    assert noop.request is None and noop.change.fields == []
    plan = Plan(resource_changes=[rc], digest="sha256:" + "0" * 64)
    assert plan.digest == model.digest_of(plan.content()) != "sha256:" + "0" * 64
    moved = replace(rc, update_mask=[], change=replace(
        change, actions=["no-op"], after=change.before))
    assert moved.request is None  # what it is derived from changed: derived again
    assert replace(plan, resource_changes=[moved]).digest == Plan(
        resource_changes=[moved]).digest != plan.digest


def _objects(schema: dict[str, Any], node: dict[str, Any], value: Any,
             where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every JSON object of a document with the schema of the model class it is read as
    (the published schema is generated from the model)."""
    if "$ref" in node:
        return _objects(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[1]], value, where)
    if value is None:
        return []
    for option in node.get("anyOf", ()):
        if option != {"type": "null"}:
            return _objects(schema, option, value, where)
    if "properties" in node:
        found = [(where, node)]
        for key, sub in node["properties"].items():
            if key in value:
                found += _objects(schema, sub, value[key], f"{where}.{key}".lstrip("."))
        return found
    if node.get("type") == "array":
        return [o for i, v in enumerate(value)
                for o in _objects(schema, node["items"], v, f"{where}[{i}]")]
    if isinstance(node.get("additionalProperties"), dict):  # a map of objects by key
        return [o for k, v in value.items()
                for o in _objects(schema, node["additionalProperties"], v, f"{where}.{k}")]
    return []


def _at(document: dict[str, Any], where: str) -> dict[str, Any]:
    target: Any = document
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", where):
        target = target[int(index)] if index else target[key]
    assert isinstance(target, dict)
    return target


def _read(document: dict[str, Any], path: Path) -> Plan:
    """The plan file holding `document`, with its digest made right (as anyone can)."""
    path.write_text(json.dumps({**document, "digest": digest_of(document)}))
    return read_plan(path)


def test_the_reader_checks_every_member_of_the_model(tmp_path: Path) -> None:
    """Each object's members come from the model: leaving one out (unless the model
    leaves it out when empty) or adding one is refused, naming the field."""
    path = tmp_path / "plan.json"
    document = every_kind_plan(["p"]).to_json()
    assert _read(document, path).digest == document["digest"]
    schema = plan_schema()
    objects = _objects(schema, schema, document, "")
    assert {tuple(sorted(node["properties"])) for _, node in objects} >= {
        tuple(sorted(node["properties"])) for node in schema["$defs"].values()
        if "properties" in node
    }  # an object of every class of the model
    for where, node in objects:
        for member in node["properties"]:
            broken = copy.deepcopy(document)
            if member not in _at(broken, where):
                assert member not in node["required"]
                continue  # left out of this object, as the model allows
            del _at(broken, where)[member]
            field = f"{where}.{member}".lstrip(".")
            if member not in node["required"]:
                if ".change.before." in field or ".change.after." in field:
                    # A topic field that is there only when set (a retention, a key):
                    # leaving it out changes the topic, which its derived fields show.
                    with pytest.raises(PlanRefused, match="do not follow from"):
                        _read(broken, path)
                else:
                    _read(broken, path)
                continue
            if field == "digest":
                continue  # the digest itself is made right by _read
            with pytest.raises(PlanRefused) as missing:
                _read(broken, path)
            said = {
                "not a reconcile plan file (no format_version)" if field == "format_version"
                else f"field {field}: missing"
            }
            if ".request." in field or ".fields[" in field:  # inside what the model derives
                said.add("the plan's requests are not the changes it shows")  # (defaulted)
            assert any(s in str(missing.value) for s in said), field
        extended = copy.deepcopy(document)
        _at(extended, where)["surprise"] = 1
        with pytest.raises(PlanRefused) as unknown:
            _read(extended, path)
        # A map's key is written [...] by the reader (custom_constraints.p: [...]).
        shown = re.sub(r"^custom_constraints\.[^.]+", "custom_constraints[...]", where)
        assert f"field {shown}.surprise: unknown field".replace("field .", "field ") in str(
            unknown.value), where


def test_what_is_read_is_read_only_too() -> None:
    plan = from_json(Plan, every_kind_plan(["p"]).dumps())
    rc = plan.resource_changes[1]
    for change in (
        lambda: plan.resource_changes.append(rc),
        lambda: rc.change.before["labels"].clear(),  # type: ignore[index]
        lambda: rc.change.fields[0].after.update(x="y"),
        lambda: rc.left_behind[0].__setattr__("messages", 0),
        lambda: plan.fingerprints.topics.clear(),
        lambda: plan.diagnostics[0].__setattr__("line", 0),
    ):
        with pytest.raises(FROZEN):
            change()
