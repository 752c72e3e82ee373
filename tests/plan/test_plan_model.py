"""The plan model is the format (issue 20): a plan cannot change once made, its digest is
computed once, each change's request and fields are derived from it, and the reader's
shape check follows every field of the model."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from plan_helpers import every_kind_plan

from reconciler.ownership import PLAN_LABEL
from reconciler.plan import model
from reconciler.plan.model import Change, LabelMerge, Plan, Request, ResourceChange
from reconciler.plan.planschema import PlanShapeError, check_plan, plan_file_node
from reconciler.plan.shape import ListOf, MapOf, Node, Nullable, Object
from reconciler.render.formats import render


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
        with pytest.raises((TypeError, dataclasses.FrozenInstanceError)):
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
    plan = every_kind_plan()
    computed: list[str] = []
    real = model.digest_of

    def counting(data: Any) -> str:
        computed.append("digest")
        return real(data)

    monkeypatch.setattr(model, "digest_of", counting)
    shown = [render(plan, fmt) for fmt in ("text", "markdown", "json")] + [plan.dumps()]
    assert computed == ["digest"]
    assert all(plan.digest in text for text in shown)


def test_requests_and_fields_are_derived_never_given() -> None:
    change = Change(
        ["update"],
        {"labels": {"a": "1"}, "message_storage_policy": None},
        {"labels": {"a": "2"}, "message_storage_policy": None},
    )
    with pytest.raises(TypeError):
        ResourceChange(  # type: ignore[call-arg]
            "projects/p/topics/t", "p", "t", change, ["labels"],
            request=Request("UpdateTopic", {"name": "projects/p/topics/victim"}),
        )
    with pytest.raises(TypeError):
        Change(["update"], None, None, fields=[])  # type: ignore[call-arg]
    rc = ResourceChange("projects/p/topics/t", "p", "t", change, ["labels"])
    assert rc.request == Request(
        "UpdateTopic", {"name": "projects/p/topics/t"}, ["labels"], LabelMerge({"a": "2"}),
        PLAN_LABEL,
    )
    assert rc.request.update_mask == rc.update_mask == ["labels"]
    assert [(f.path, f.before, f.after) for f in rc.change.fields] == [
        ("labels", {"a": "1"}, {"a": "2"})
    ]
    assert change.fields == []  # the change given is not changed: the plan holds a copy


def _objects(node: Node, value: Any, where: str) -> list[tuple[str, Object, dict[str, Any]]]:
    """Every JSON object of a document with the model node it is checked against."""
    if isinstance(node, Nullable):
        return [] if value is None else _objects(node.inner, value, where)
    if isinstance(node, ListOf):
        return [o for i, v in enumerate(value) for o in _objects(node.item, v, f"{where}[{i}]")]
    if isinstance(node, MapOf):
        return [o for k, v in value.items() for o in _objects(node.value, v, f"{where}.{k}")]
    if isinstance(node, Object):
        found = [(where, node, value)]
        for m in node.members:
            if m.name in value:
                found += _objects(m.node, value[m.name], f"{where}.{m.name}".lstrip("."))
        return found
    return []


def _at(document: dict[str, Any], where: str) -> dict[str, Any]:
    import re

    target: Any = document
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", where):
        target = target[int(index)] if index else target[key]
    assert isinstance(target, dict)
    return target


def test_the_reader_checks_every_member_of_the_model() -> None:
    """Each object's members come from the model: leaving one out (unless the model
    says it may be) or adding one is refused, naming the field."""
    document = every_kind_plan(["p"]).to_json()
    check_plan(document)
    objects = _objects(plan_file_node(), document, "")
    assert {node.name for _, node, _ in objects} >= {
        "plan", "resource_change", "change", "field_change", "request", "diagnostic", "drift",
        "fingerprints", "plan_target", "topic_state", "policy_state", "source",
    }
    for where, node, _ in objects:
        for member in node.members:
            broken = copy.deepcopy(document)
            if member.omit_empty and member.name not in _at(broken, where):
                continue  # left out of this object, as the model allows
            del _at(broken, where)[member.name]
            path = f"{where}.{member.name}".lstrip(".")
            if member.omit_empty:
                check_plan(broken)
                continue
            with pytest.raises(PlanShapeError) as missing:
                check_plan(broken)
            assert (missing.value.where, missing.value.what) == (path, "missing")
        extended = copy.deepcopy(document)
        _at(extended, where)["surprise"] = 1
        with pytest.raises(PlanShapeError) as unknown:
            check_plan(extended)
        assert unknown.value.where == f"{where}.surprise".lstrip(".")
        assert unknown.value.what == "unknown field"
