"""The shape of a plan file (format 2.x), checked before anything reads it.

A damaged or hand-edited file gets one message naming the first bad field (a path
such as `resource_changes[2].change.actions`) and what was expected, never a Python
error from deep inside the reader. Objects have exactly the keys listed: a missing or
an unknown key is an error too.

    check_plan(data) -> None   raises PlanShapeError(field, what)
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.plan.model import ACTION_ORDER, POLICY_SOURCES, TARGET_KINDS

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

# A spec is a Python type, a tuple (kind, ...) or a dict (an object with exactly these
# keys). Kinds: ("list", spec), ("map", spec) string keys, ("opt", spec) or null,
# ("enum", values), ("any",).
Spec = Any
STR_LIST: Spec = ("list", str)
POLICY: Spec = ("opt", {"allowed_persistence_regions": STR_LIST, "enforce_in_transit": bool})
SHAPE: Spec = ("opt", {"labels": ("map", str), "message_storage_policy": POLICY})
PATHS: Spec = ("list", ("enum", ("labels", "message_storage_policy")))
FIELD: Spec = {
    "path": ("enum", ("labels", "message_storage_policy")),
    "before": ("any",),
    "after": ("any",),
    "added": STR_LIST,
    "removed": STR_LIST,
    "note": ("opt", str),
}
CHANGE: Spec = {
    "actions": ("list", ("enum", ACTION_ORDER)),
    "before": SHAPE,
    "after": SHAPE,
    "fields": ("list", FIELD),
    "computed": PATHS,
}
REQUEST: Spec = (
    "opt",
    {
        "method": ("enum", ("CreateTopic", "UpdateTopic", "DeleteTopic")),
        "topic": ("map", ("any",)),
        "update_mask": STR_LIST,
    },
)
RESOURCE_CHANGE: Spec = {
    "address": str,
    "project": str,
    "topic": str,
    "change": CHANGE,
    "update_mask": PATHS,
    "request": REQUEST,
    "reasons": STR_LIST,
    "warnings": STR_LIST,
    "source": ("opt", {"file": str, "line": int}),
}
DIAGNOSTIC: Spec = {
    "file": str,
    "line": int,
    "col": int,
    "severity": ("enum", ("error", "warning")),
    "code": str,
    "message": str,
    "hint": ("opt", str),
}
DRIFT: Spec = {
    "address": str,
    "category": str,
    "message": str,
    "fix": str,
    "disallowed": STR_LIST,
    "missing": STR_LIST,
}
TARGET: Spec = {
    "kind": ("enum", TARGET_KINDS),
    "address": str,
    "org_policy": ("enum", POLICY_SOURCES),
    "snapshot": str,
    "snapshot_sha256": str,
}
PLAN: Spec = {
    "format_version": str,
    "digest": str,
    "resource_changes": ("list", RESOURCE_CHANGE),
    "diagnostics": ("list", DIAGNOSTIC),
    "drift": ("list", DRIFT),
    "fingerprints": {"topics": ("map", str), "org_policy": ("map", str)},
    "target": TARGET,
    "prune": bool,
    "created_at": str,
    "projects": STR_LIST,
}
# Keys a plan may leave out: `projects` is written only by `plan --project`.
OPTIONAL = frozenset({"projects"})

NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object"}


class PlanShapeError(ValueError):
    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


def _found(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _check(value: Any, spec: Spec, where: str) -> None:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise PlanShapeError(where, f"expected an object, found {_found(value)}")
        for key in spec:
            if key not in value and key not in OPTIONAL:
                raise PlanShapeError(f"{where}.{key}".lstrip("."), "missing")
        for key in value:
            if key not in spec:
                raise PlanShapeError(f"{where}.{key}".lstrip("."), "unknown field")
        for key, sub in spec.items():
            if key in value:
                _check(value[key], sub, f"{where}.{key}".lstrip("."))
        return
    if isinstance(spec, type):
        ok = isinstance(value, spec) and (spec is bool or not isinstance(value, bool))
        if not ok:
            raise PlanShapeError(where, f"expected {NAMES[spec]}, found {_found(value)}")
        return
    kind = spec[0]
    if kind == "any":
        return
    if kind == "opt":
        if value is not None:
            _check(value, spec[1], where)
        return
    if kind == "enum":
        if value not in spec[1]:
            allowed = ", ".join(spec[1])
            raise PlanShapeError(where, f"expected one of {allowed}, found {value!r:.60}")
        return
    if kind == "list":
        if not isinstance(value, list):
            raise PlanShapeError(where, f"expected a list, found {_found(value)}")
        for i, item in enumerate(value):
            _check(item, spec[1], f"{where}[{i}]")
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise PlanShapeError(where, f"expected an object, found {_found(value)}")
        for key, item in value.items():
            _check(item, spec[1], f"{where}.{key}")
        return
    raise AssertionError(f"unknown spec {spec!r}")  # a bug in the tables above


def check_plan(data: Any) -> None:
    """Raise PlanShapeError at the first field that is not what format 2.x writes."""
    _check(data, PLAN, "")
    if not DIGEST.fullmatch(data["digest"]):
        raise PlanShapeError("digest", "expected sha256:HEX (64 lowercase hex digits)")
    for i, rc in enumerate(data["resource_changes"]):
        if len(rc["change"]["actions"]) != 1:
            raise PlanShapeError(
                f"resource_changes[{i}].change.actions", "expected exactly one action"
            )
