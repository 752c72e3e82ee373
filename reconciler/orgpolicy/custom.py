"""Org Policy v2 custom constraints as plain frozen data, and the rules their fields
obey, shared by the snapshot file, `policy pull`, the local server's custom-constraint
RPCs and the evaluator, so that each says the same thing about a bad constraint.

    CustomConstraint.from_dict(data) -> CustomConstraint    PolicyFormatError on a bad shape
    constraint.to_dict() -> dict                            the gcloud / REST JSON shape
                                                            (both by reconciler/codec.py)
    constraint_problems(data) -> [(path, message)]          every rule a field breaks
    denial_message(constraints) -> str                      the service's refusal text

The rules (Org Policy v2 `CustomConstraint`; Pub/Sub's "custom organization policies"
page): the name is `organizations/ORG/customConstraints/custom.ID`, the id `custom.`
followed by letters and digits, at most 70 characters; `methodTypes` CREATE and
UPDATE (UPDATE alone is refused, DELETE is not supported); a CEL `condition` of at
most 1000 characters; `actionType` ALLOW or DENY; `displayName` at most 200 and
`description` at most 2000 characters. The condition's CEL is checked by
`reconciler.orgpolicy.cel`, which this module does not import (validate loads the CEL
library only when a snapshot holds custom constraints).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.codec import Record, derive, from_data, to_data
from reconciler.names import is_resource_number
from reconciler.orgpolicy.model import CUSTOM_PREFIX, PolicyFormatError

MAX_ID = 70
MAX_CONDITION = 1000
MAX_DISPLAY_NAME = 200
MAX_DESCRIPTION = 2000
METHOD_TYPES = ("CREATE", "UPDATE")
ACTION_TYPES = ("ALLOW", "DENY")
TOPIC = "pubsub.googleapis.com/Topic"
SUBSCRIPTION = "pubsub.googleapis.com/Subscription"
SNAPSHOT = "pubsub.googleapis.com/Snapshot"
SCHEMA = "pubsub.googleapis.com/Schema"
PUBSUB_RESOURCE_TYPES = (TOPIC, SUBSCRIPTION, SNAPSHOT, SCHEMA)
FIELDS = (
    "name", "resourceTypes", "methodTypes", "condition", "actionType", "displayName",
    "description", "updateTime",
)

_NAME = re.compile(r"organizations/([^/]+)/customConstraints/([^/]+)")
_ID = re.compile(r"custom\.[A-Za-z0-9]+")


def id_problem(constraint_id: str) -> str | None:
    """Why `constraint_id` is not a custom constraint id, or None."""
    if not constraint_id.startswith(CUSTOM_PREFIX):
        return f"a custom constraint id starts with {CUSTOM_PREFIX!r} (got {constraint_id!r})"
    if len(constraint_id) > MAX_ID:
        return (
            f"custom constraint id {constraint_id!r} is {len(constraint_id)} characters; "
            f"the service allows at most {MAX_ID}"
        )
    if not _ID.fullmatch(constraint_id):
        return (
            f"custom constraint id {constraint_id!r}: after {CUSTOM_PREFIX!r} only letters "
            "and digits are allowed"
        )
    return None


def name_problem(name: str) -> str | None:
    """Why `name` is not organizations/ORG/customConstraints/custom.ID, or None."""
    match = _NAME.fullmatch(name)
    if match is None:
        return (
            f"custom constraint name {name!r} must look like "
            "organizations/ORG/customConstraints/custom.NAME"
        )
    org, constraint_id = match.groups()
    if not is_resource_number(org):
        return (
            f"in {name!r}: organizations are named by number, without leading zeros, e.g. "
            "organizations/123456"
        )
    return id_problem(constraint_id)


class CustomConstraint(Record, frozen=True, rename="camel"):
    """A custom constraint, written and read by reconciler/codec.py in the gcloud /
    REST JSON shape (camelCase keys, `displayName` and `description` left out when
    empty)."""

    name: str
    resource_types: tuple[str, ...]
    method_types: tuple[str, ...]
    condition: str
    action_type: str
    display_name: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        # Its lists are tuples (read-only already, and what its users compare with),
        # not the read-only lists Record would make of them.
        for name in ("resource_types", "method_types"):
            value = getattr(self, name)
            if type(value) is not tuple:
                derive(self, name, tuple(value))

    @property
    def constraint_id(self) -> str:
        """`custom.NAME`: what a policy names (projects/P/policies/custom.NAME)."""
        return self.name.rsplit("/", 1)[-1]

    @property
    def organization(self) -> str:
        """organizations/ORG"""
        return self.name.split("/customConstraints/", 1)[0]

    def applies_to(self, resource_type: str, method: str) -> bool:
        return resource_type in self.resource_types and method in self.method_types

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CustomConstraint:
        """Parse the JSON or YAML form (camelCase or snake_case keys; others, such as
        the service's `updateTime`, ignored); the first problem `constraint_problems`
        finds is raised with its path."""
        problems = constraint_problems(data)
        if problems:
            path, message = problems[0]
            raise PolicyFormatError(message, path)
        return from_data(cls, {
            camel: value for camel in _MEMBERS if (value := _get(data, camel)) is not None
        })

    def to_dict(self) -> dict[str, Any]:
        """The gcloud / REST JSON shape, a plain copy the caller may change (its lists
        as lists: msgspec leaves a tuple one)."""
        data: dict[str, Any] = to_data(self)
        data["resourceTypes"] = list(self.resource_types)
        data["methodTypes"] = list(self.method_types)
        return data


# The members as the document names them.
_MEMBERS = ("name", "resourceTypes", "methodTypes", "condition", "actionType",
            "displayName", "description")


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


def _get(data: Mapping[str, Any], camel: str) -> Any:
    return data.get(camel, data.get(_snake(camel)))


def _key(data: Mapping[str, Any], camel: str) -> str:
    """The key `data` spells the field with (for a diagnostic's path)."""
    return camel if camel in data else _snake(camel)


def _pubsub_type_problems(
    types: list[str], path: tuple[str | int, ...]
) -> list[tuple[tuple[str | int, ...], str]]:
    """A Pub/Sub resource type the service does not know (a case or a letter off, as
    `pubsub.googleapis.com/topic`): the service refuses such a constraint, and read as
    written it would bind no topic, a pass it never gives. Other services' types are
    theirs to check (a snapshot holds the organization's every constraint)."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    for i, value in enumerate(types):
        if value.split("/")[0].lower() == "pubsub.googleapis.com" and (
            value not in PUBSUB_RESOURCE_TYPES
        ):
            near = [t for t in PUBSUB_RESOURCE_TYPES if t.lower() == value.lower()]
            out.append(((*path, i), (
                f"unknown Pub/Sub resource type {value!r}"
                + (f" (did you mean {near[0]!r}?)" if near else "")
                + f"; the service knows {', '.join(PUBSUB_RESOURCE_TYPES)}"
            )))
    if len(set(types)) != len(types):
        out.append((path, "`resourceTypes` names a value twice"))
    return out


def constraint_problems(data: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every rule the constraint document breaks, each with the path it is at (unknown
    keys are the snapshot reader's to report: it has the suggestions)."""
    if not isinstance(data, Mapping):
        return [((), "a custom constraint must be a mapping")]
    out: list[tuple[tuple[str | int, ...], str]] = []

    def text(camel: str, *, required: bool, limit: int | None = None) -> str | None:
        value = _get(data, camel)
        path = (_key(data, camel),)
        if value is None or value == "":
            if required:
                where = path if value is not None else ()
                out.append((where, f"a custom constraint needs `{camel}`"))
            return None
        if not isinstance(value, str):
            out.append((path, f"`{camel}` must be text"))
            return None
        if limit is not None and len(value) > limit:
            out.append(
                (path, f"`{camel}` is {len(value)} characters; the service allows at most {limit}")
            )
        return value

    def choices(camel: str, allowed: Iterable[str], what: str) -> list[str]:
        value = _get(data, camel)
        path = (_key(data, camel),)
        if value is None or value == []:
            out.append((path if value is not None else (), f"a custom constraint needs `{camel}`"))
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            out.append((path, f"`{camel}` must be a list of {what}"))
            return []
        allowed = tuple(allowed)
        for i, item in enumerate(value):
            if item not in allowed:
                out.append(
                    ((*path, i), f"unknown {what[:-1]} {item!r} (known: {', '.join(allowed)})")
                )
        if len(set(value)) != len(value):
            out.append((path, f"`{camel}` names a value twice"))
        return list(value)

    name = text("name", required=True)
    if name is not None and (problem := name_problem(name)):
        out.append(((_key(data, "name"),), problem))
    resource_types = _get(data, "resourceTypes")
    if resource_types is None or resource_types == []:
        out.append(((), "a custom constraint needs `resourceTypes`"))
    elif not isinstance(resource_types, list) or not all(
        isinstance(v, str) and v.count("/") == 1 and "." in v.split("/")[0]
        for v in resource_types
    ):
        out.append(
            ((_key(data, "resourceTypes"),),
             "`resourceTypes` must be a list like [pubsub.googleapis.com/Topic]")
        )
    else:
        out += _pubsub_type_problems(resource_types, (_key(data, "resourceTypes"),))
    methods = choices("methodTypes", METHOD_TYPES, "method types")
    if methods and "CREATE" not in methods and "UPDATE" in methods:
        out.append(
            ((_key(data, "methodTypes"),),
             "UPDATE-only custom constraints are not supported by the service: use "
             "[CREATE] or [CREATE, UPDATE]")
        )
    text("condition", required=True, limit=MAX_CONDITION)
    action = _get(data, "actionType")
    if action is None:
        out.append(((), "a custom constraint needs `actionType` (ALLOW or DENY)"))
    elif action not in ACTION_TYPES:
        out.append(
            ((_key(data, "actionType"),), f"`actionType` must be ALLOW or DENY (got {action!r})")
        )
    text("displayName", required=False, limit=MAX_DISPLAY_NAME)
    text("description", required=False, limit=MAX_DESCRIPTION)
    return out


def names_pubsub(constraint: CustomConstraint) -> bool:
    """The constraint restricts some Pub/Sub resource type."""
    return any(t in PUBSUB_RESOURCE_TYPES for t in constraint.resource_types)


def denial_message(constraints: Iterable[CustomConstraint]) -> str:
    """The FAILED_PRECONDITION message the service gives for refused custom
    constraints: `Operation denied by custom org policy: ["customConstraints/ID":
    "DESCRIPTION", ...]`."""
    parts = ", ".join(
        f'"customConstraints/{c.constraint_id}": "{c.description}"' for c in constraints
    )
    return f"Operation denied by custom org policy: [{parts}]"
