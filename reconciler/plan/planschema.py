"""The plan file's shape check and its published JSON Schema, both derived from the
plan model (plan/model.py, read by plan/shape.py): one description of the format.

A damaged or hand-edited file gets one message naming the first bad field (a path
such as `resource_changes[2].change.actions`) and what was expected, never a Python
error from deep inside the reader. Objects have exactly the model's keys: a missing or
an unknown key is an error too. The published schema (docs/plan.schema.json) states
the same types and constraints, but leaves objects open: readers of the JSON ignore
keys they do not know, so that a minor version can add some.

    check_plan(data) -> None   raises PlanShapeError(field, what)
    python -m reconciler.plan.planschema > docs/plan.schema.json
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from reconciler.plan.model import DIGEST, Plan
from reconciler.plan.shape import (
    AnyValue,
    Enum,
    ListOf,
    MapOf,
    Member,
    Node,
    Nullable,
    Object,
    Scalar,
    object_node,
)

COMMAND = "python -m reconciler.plan.planschema > docs/plan.schema.json"
SCHEMA_ID = "https://reconcile.invalid/schemas/plan-v2.json"

# The file's top level: the plan's content, and its digest after the version.
DIGEST_MEMBER = Member(
    "digest", Scalar(str, DIGEST),
    "sha256 of the plan's content: what `apply PLANFILE --expect-digest` compares.",
)


def plan_file_node() -> Object:
    plan = object_node(Plan)
    first, *rest = plan.members
    return Object(plan.cls, plan.name, plan.doc, (first, DIGEST_MEMBER, *rest))


# -- the reader's check --------------------------------------------------------------

NAMES = {str: "a string", int: "an integer", bool: "true or false"}


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


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


Check = Callable[[Any, str], None]


def checker(node: Node) -> Check:
    """The check of one node: raise PlanShapeError at the first value that is not what
    the model writes."""
    if isinstance(node, Object):
        return _object(node)
    if isinstance(node, Scalar):
        return _scalar(node)
    if isinstance(node, Enum):
        allowed = ", ".join(map(str, node.values))
        values = node.values

        def enum(value: Any, where: str) -> None:
            if type(value) is not str or value not in values:
                raise PlanShapeError(where, f"expected one of {allowed}, found {value!r:.60}")

        return enum
    if isinstance(node, Nullable):
        inner = checker(node.inner)

        def nullable(value: Any, where: str) -> None:
            if value is not None:
                inner(value, where)

        return nullable
    if isinstance(node, ListOf):
        return _list(node)
    if isinstance(node, MapOf):
        item = checker(node.value)

        def mapping(value: Any, where: str) -> None:
            if not isinstance(value, dict):
                raise PlanShapeError(where, f"expected an object, found {_found(value)}")
            for key, sub in value.items():
                item(sub, f"{where}.{key}")

        return mapping
    assert isinstance(node, AnyValue), node
    return lambda value, where: None


def _scalar(node: Scalar) -> Check:
    kind, pattern = node.type, node.pattern
    regex = re.compile(pattern.regex) if pattern is not None else None

    def scalar(value: Any, where: str) -> None:
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise PlanShapeError(where, f"expected {NAMES[kind]}, found {_found(value)}")
        if regex is not None and isinstance(value, str) and not regex.fullmatch(value):
            assert pattern is not None
            raise PlanShapeError(where, f"expected {pattern.expected}")

    return scalar


def _list(node: ListOf) -> Check:
    item, exactly = checker(node.item), node.exactly

    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise PlanShapeError(where, f"expected a list, found {_found(value)}")
        if exactly is not None and len(value) != exactly.count:
            raise PlanShapeError(where, f"expected {exactly.expected}")
        for i, sub in enumerate(value):
            item(sub, f"{where}[{i}]")

    return check


_CHECKS: dict[int, Check] = {}


def _object(node: Object) -> Check:
    found = _CHECKS.get(id(node))
    if found is not None:
        return found
    members = [(m.name, m.omit_empty) for m in node.members]
    known = {m.name for m in node.members}
    subs: list[tuple[str, Check]] = []

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise PlanShapeError(where, f"expected an object, found {_found(value)}")
        for key, optional in members:
            if key not in value and not optional:
                raise PlanShapeError(_at(where, key), "missing")
        for key in value:
            if key not in known:
                raise PlanShapeError(_at(where, key), "unknown field")
        for key, sub in subs:
            if key in value:
                sub(value[key], _at(where, key))

    _CHECKS[id(node)] = check
    subs.extend((m.name, checker(m.node)) for m in node.members)
    return check


_PLAN_CHECK: list[Check] = []


def check_plan(data: Any) -> None:
    """Raise PlanShapeError at the first field that is not what format 2.x writes."""
    if not _PLAN_CHECK:
        _PLAN_CHECK.append(checker(plan_file_node()))
    _PLAN_CHECK[0](data, "")


# -- the published JSON Schema -------------------------------------------------------


class _Schema:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def of(self, node: Node) -> dict[str, Any]:
        if isinstance(node, Scalar):
            out: dict[str, Any] = {"type": _JSON_TYPES[node.type]}
            if node.pattern is not None:
                out["pattern"] = f"^{node.pattern.regex}$"
            return out
        if isinstance(node, Enum):
            return {"enum": list(node.values)}
        if isinstance(node, Nullable):
            inner = self.of(node.inner)
            if "enum" in inner:
                return {**inner, "enum": [*inner["enum"], None]}
            if "type" in inner:
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        if isinstance(node, ListOf):
            out = {"type": "array", "items": self.of(node.item)}
            if node.exactly is not None:
                out["minItems"] = out["maxItems"] = node.exactly.count
            return out
        if isinstance(node, MapOf):
            if isinstance(node.value, AnyValue):
                return {"type": "object"}
            return {"type": "object", "additionalProperties": self.of(node.value)}
        if isinstance(node, Object):
            if node.name not in self.defs:
                self.defs[node.name] = {}  # taken before the members, against recursion
                self.defs[node.name] = self.object(node)
            return {"$ref": f"#/$defs/{node.name}"}
        return {}

    def object(self, node: Object) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if node.doc:
            out["description"] = node.doc
        out["type"] = "object"
        out["required"] = [m.name for m in node.members if not m.omit_empty]
        properties = {}
        for m in node.members:
            prop = self.of(m.node)
            properties[m.name] = {"description": m.doc, **prop} if m.doc else prop
        out["properties"] = properties
        return out


_JSON_TYPES = {str: "string", int: "integer", bool: "boolean"}


def plan_schema() -> dict[str, Any]:
    """docs/plan.schema.json: the model's types and constraints, objects left open."""
    builder = _Schema()
    body = builder.object(plan_file_node())
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "reconcile plan (format_version 2.x): `reconcile plan --format json` and "
        "the --out PLANFILE",
        "description": "Generated from the plan model by `" + COMMAND + "`. Readers must "
        "ignore keys they do not know: a minor format_version may add some.",
        **{k: v for k, v in body.items() if k != "description"},
        "$defs": dict(sorted(builder.defs.items())),
    }


def plan_schema_text() -> str:
    return json.dumps(plan_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(plan_schema_text())
