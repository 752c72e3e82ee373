"""How a change read from a plan file contradicts itself.

A change's request and `fields` are derived from it by the model (plan/model.py:
`derive_request`, `derive_fields`), when the plan is made and again when a file is
read. A plan file also stores them, for its readers; a file whose stored ones differ
from the derived ones is refused, so `apply PLANFILE` sends exactly what `show`
renders and nothing else.

    problems(rc) -> list[str]                  what the change says against itself
    stored_problems(rc, entry) -> list[str]    how the file's entry for it (its JSON)
                                               stores another request or other fields
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.codec import to_data
from reconciler.names import split_topic_name
from reconciler.plan.model import Request, ResourceChange
from reconciler.topicfields import MASK_PATHS


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
        out.append(f"a path that is not one of {', '.join(MASK_PATHS)}")
    return out


def _request_problems(stored: Mapping[str, Any] | None, derived: Request | None) -> list[str]:
    want = None if derived is None else to_data(derived)
    if stored == want:
        return []
    if stored is None or want is None:
        what = "has no request" if stored is None else "has a request"
        return [f"the change {what}, but its action says otherwise"]
    out = []
    if stored["method"] != want["method"]:
        out.append(f"the request is {stored['method']}, the change needs {want['method']}")
    sent, body = stored["topic"], want["topic"]
    name = sent.get("name")
    if name != body["name"]:
        out.append(f"the request names topic {name!r}, the change is for {body['name']}")
    if stored.get("update_mask") != want["update_mask"]:  # (a stored one may lack it)
        out.append(
            f"the request's update mask {stored.get('update_mask')} is not the change's "
            f"{want['update_mask']}"
        )
    if stored.get("label_merge") != want["label_merge"]:
        out.append("the request's label_merge is not the change's label changes")
    if stored.get("marker_label") != want["marker_label"]:
        out.append(
            f"the request's marker_label {stored.get('marker_label')!r} is not "
            f"{want['marker_label']!r}"
        )
    for key in sorted(set(sent) | set(body), key=str):
        if key == "name":
            continue
        if key not in body:
            out.append(f"the request sets {key}, which is outside the change's mask")
        elif key not in sent:
            out.append(f"the request leaves out {key}, which the change sets")
        elif sent[key] != body[key]:
            out.append(f"the request's {key} value differs from the change's `after`")
    return out or ["the request differs from the change"]


def problems(rc: ResourceChange) -> list[str]:
    """Every way a change contradicts itself (what its action allows, its address)."""
    split = split_topic_name(rc.address)
    if split is None:
        return [f"address {rc.address!r} is not projects/PROJECT/topics/TOPIC"]
    if split != (rc.project, rc.topic):
        return [f"project/topic {rc.project!r}/{rc.topic!r} do not match the address"]
    return _shape_problems(rc)


def stored_problems(rc: ResourceChange, stored: Mapping[str, Any]) -> list[str]:
    """How `stored`, the change's entry in a file (as JSON, of the shape the model
    reads, where a member with a default may be missing), stores a `request` or
    `change.fields` other than the ones derived from it."""
    if problems(rc):
        return []  # said by `problems`: what it derives from is wrong already
    out = _request_problems(stored.get("request"), rc.request)
    if stored["change"].get("fields") != [to_data(f) for f in rc.change.fields]:
        out.append("its `fields` do not follow from `before`/`after` and the update mask")
    return out
