"""One source of truth for a change: its request and its `fields` follow from it.

A change is its address, action, `before`/`after` shapes, update mask and the paths
the service computes. The differ builds a change and calls these functions to fill in
`request` and `fields`; reading a plan file calls them again and refuses the plan when
the stored ones differ (`problems`), so `apply PLANFILE` sends exactly what `show`
renders and nothing else.

    derive_request(rc) -> Request | None      the CreateTopic/UpdateTopic/DeleteTopic body
    derive_fields(rc) -> list[FieldChange]    what the renderers show per path
    problems(rc) -> list[str]                 how a stored change contradicts itself
"""

from __future__ import annotations

from typing import Any

from reconciler.names import split_topic_name
from reconciler.plan.model import FieldChange, Request, ResourceChange
from reconciler.topic import LABELS, MASK_PATHS, StoragePolicy, region_set

NOTE_CREATE = "computed by the service from the effective org policy"
NOTE_UPDATE = "recomputed from the effective org policy"


def shown_paths(rc: ResourceChange) -> list[str]:
    """The paths a change sets: an update's mask; a create's labels, and its storage
    policy when there is one after it."""
    if rc.action == "update":
        return [p for p in MASK_PATHS if p in rc.update_mask]
    if rc.action == "create":
        after = rc.change.after or {}
        return [p for p in MASK_PATHS if p == LABELS or after.get(p) is not None]
    return []


def derive_request(rc: ResourceChange) -> Request | None:
    """The request that makes `before` into `after`: every shown path carries its
    `after` value, except the computed ones (left out, or masked without a value)."""
    if rc.action == "no-op":
        return None
    if rc.action == "delete":
        return Request("DeleteTopic", {"name": rc.address})
    after = rc.change.after or {}
    body: dict[str, Any] = {"name": rc.address}
    for path in shown_paths(rc):
        if path not in rc.change.computed and after.get(path) is not None:
            body[path] = after[path]
    if rc.action == "create":
        return Request("CreateTopic", body)
    return Request("UpdateTopic", body, shown_paths(rc))


def _sets(before: Any, after: Any, path: str) -> tuple[list[str], list[str]]:
    """Members added and removed: label keys, or regions (none when a side allows
    every region)."""
    if path == LABELS:
        b, a = set(before or {}), set(after or {})
        return sorted(a - b), sorted(b - a)
    rb = region_set(StoragePolicy.from_json(before))
    ra = region_set(StoragePolicy.from_json(after))
    if rb is None or ra is None:
        return [], []
    return sorted(ra - rb), sorted(rb - ra)


def derive_fields(rc: ResourceChange) -> list[FieldChange]:
    """Per shown path: before -> after straight from the change, the set members it
    adds and removes, and a note when the service computes the value."""
    before = rc.change.before or {}
    after = rc.change.after or {}
    out = []
    for path in shown_paths(rc):
        b, a = before.get(path), after.get(path)
        if path == LABELS and rc.action == "create":
            b = {}
        added, removed = _sets(b, a, path)
        note = None
        if path in rc.change.computed:
            note = NOTE_CREATE if rc.action == "create" else NOTE_UPDATE
        out.append(FieldChange(path, b, a, added=added, removed=removed, note=note))
    return out


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
            f"the request's update mask {stored.update_mask} is not the change's "
            f"{derived.update_mask}"
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


def problems(rc: ResourceChange) -> list[str]:
    """Every way a stored change contradicts itself ([] = consistent)."""
    split = split_topic_name(rc.address)
    if split is None:
        return [f"address {rc.address!r} is not projects/PROJECT/topics/TOPIC"]
    if split != (rc.project, rc.topic):
        return [f"project/topic {rc.project!r}/{rc.topic!r} do not match the address"]
    out = _shape_problems(rc)
    if out:
        return out
    out += _request_problems(rc.request, derive_request(rc))
    if rc.change.fields != derive_fields(rc):
        out.append("its `fields` do not follow from `before`/`after` and the update mask")
    return out
