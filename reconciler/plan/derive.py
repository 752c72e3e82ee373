"""How a change read from a plan file contradicts itself.

A change's request and `fields` are derived from it by the model (plan/model.py:
`derive_request`, `derive_fields`), when the plan is made and again when a file is
read. A plan file also stores them, for its readers; reading compares the stored ones
with the derived ones and refuses the plan when they differ, so `apply PLANFILE` sends
exactly what `show` renders and nothing else.

    problems(rc, stored) -> list[str]    [] = consistent
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.names import split_topic_name
from reconciler.plan.model import FieldChange, Request, ResourceChange
from reconciler.plan.shape import decoder
from reconciler.topic import MASK_PATHS


def _shape_problems(rc: ResourceChange) -> list[str]:
    before, after = rc.change.before, rc.change.after
    action = rc.action
    if action == "create" and before is not None:
        return ["a create has a `before`"]
    if action == "delete" and after is not None:
        return ["a delete has an `after`"]
    if action != "create" and before is None:
        return [f"an {action} has no `before`"]
    if action != "delete" and after is None:
        return [f"a {action} has no `after`"]
    out = []
    if action in ("update", "no-op") and before is not None and after is not None:
        mask = rc.update_mask if action == "update" else []
        if action == "update" and not mask:
            out.append("an update with an empty update mask")
        for path in MASK_PATHS:
            if path not in mask and before.get(path) != after.get(path):
                out.append(f"`after` changes {path}, which is outside the update mask")
    elif rc.update_mask:
        out.append(f"a {action} has an update mask")
    if any(p not in MASK_PATHS for p in [*rc.update_mask, *rc.change.computed]):
        out.append("a path that is not labels or message_storage_policy")
    return out


def _request_problems(stored: Request | None, derived: Request | None) -> list[str]:
    if stored == derived:
        return []
    if stored is None or derived is None:
        what = "has no request" if stored is None else "has a request"
        return [f"the change {what}, but its action says otherwise"]
    out = []
    if stored.method != derived.method:
        out.append(f"the request is {stored.method}, the change needs {derived.method}")
    name = stored.topic.get("name")
    if name != derived.topic["name"]:
        out.append(f"the request names topic {name!r}, the change is for {derived.topic['name']}")
    if stored.update_mask != derived.update_mask:
        out.append(
            f"the request's update mask {list(stored.update_mask)} is not the change's "
            f"{list(derived.update_mask)}"
        )
    if stored.label_merge != derived.label_merge:
        out.append("the request's label_merge is not the change's label changes")
    if stored.marker_label != derived.marker_label:
        out.append(
            f"the request's marker_label {stored.marker_label!r} is not "
            f"{derived.marker_label!r}"
        )
    for key in sorted(set(stored.topic) | set(derived.topic), key=str):
        if key == "name":
            continue
        if key not in derived.topic:
            out.append(f"the request sets {key}, which is outside the change's mask")
        elif key not in stored.topic:
            out.append(f"the request leaves out {key}, which the change sets")
        elif stored.topic[key] != derived.topic[key]:
            out.append(f"the request's {key} value differs from the change's `after`")
    return out or ["the request differs from the change"]


def problems(rc: ResourceChange, stored: Mapping[str, Any]) -> list[str]:
    """Every way a change read from a file contradicts itself; `stored`: its entry in
    the file, whose `request` and `change.fields` must be the derived ones."""
    split = split_topic_name(rc.address)
    if split is None:
        return [f"address {rc.address!r} is not projects/PROJECT/topics/TOPIC"]
    if split != (rc.project, rc.topic):
        return [f"project/topic {rc.project!r}/{rc.topic!r} do not match the address"]
    out = _shape_problems(rc)
    if out:
        return out
    request = stored["request"]
    out += _request_problems(
        None if request is None else decoder(Request)(request), rc.request
    )
    fields = [decoder(FieldChange)(f) for f in stored["change"]["fields"]]
    if fields != rc.change.fields:
        out.append("its `fields` do not follow from `before`/`after` and the update mask")
    return out
