"""The plan: a plain, versioned, serialisable object.

Renderers read it, `--format json` prints it, the plan file stores it and apply
executes its `request`s. Nothing else decides what will change.

Topic shapes (`before`, `after`, `request.topic`) are `reconciler.topic.TopicShape` as
JSON: the proto field names, the same names that appear in update masks.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from reconciler.diagnostics import Diagnostic

FORMAT_VERSION = "1.0"

Action = Literal["create", "update", "delete", "no-op"]
ACTION_ORDER: tuple[Action, ...] = ("create", "update", "delete", "no-op")

# The three console categories (DOMAIN.md) of a topic out of step with the org policy.
DRIFT_ALLOWS_DISALLOWED = "allows-disallowed-locations"
DRIFT_MISSES_ALLOWED = "misses-allowed-locations"
DRIFT_BOTH = "allowed-and-disallowed-stale"


@dataclass
class Request:
    """Exactly what apply sends: a CreateTopic/UpdateTopic/DeleteTopic body."""

    method: Literal["CreateTopic", "UpdateTopic", "DeleteTopic"]
    topic: dict[str, Any]
    update_mask: list[str] = field(default_factory=list)


@dataclass
class FieldChange:
    """One top-level path that changes, with enough detail for a reviewer."""

    path: str
    before: Any
    after: Any
    added: list[str] = field(default_factory=list)  # set members (regions, label keys)
    removed: list[str] = field(default_factory=list)
    note: str | None = None  # e.g. "recomputed from the org policy"


@dataclass
class Change:
    actions: list[Action]
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    fields: list[FieldChange] = field(default_factory=list)


@dataclass
class ResourceChange:
    address: str  # projects/P/topics/T
    project: str
    topic: str
    change: Change
    update_mask: list[str] = field(default_factory=list)
    request: Request | None = None
    reasons: list[str] = field(default_factory=list)  # drift categories, adoption...
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] | None = None  # {"file": ..., "line": ...}

    @property
    def action(self) -> Action:
        return self.change.actions[0]


@dataclass
class Drift:
    """A live topic out of step with the org policy; reported, never applied."""

    address: str
    category: str
    message: str
    fix: str
    disallowed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass
class Fingerprints:
    """What the plan was made against: sha256 of every observed topic (or "absent") and
    of each project's effective org policy inputs."""

    topics: dict[str, str] = field(default_factory=dict)
    org_policy: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    resource_changes: list[ResourceChange] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    fingerprints: Fingerprints = field(default_factory=Fingerprints)
    target: str = ""
    prune: bool = False
    created_at: str = ""
    format_version: str = FORMAT_VERSION

    def counts(self) -> dict[Action, int]:
        out: dict[Action, int] = dict.fromkeys(ACTION_ORDER, 0)
        for rc in self.resource_changes:
            out[rc.action] += 1
        return out

    @property
    def has_changes(self) -> bool:
        return any(rc.action != "no-op" for rc in self.resource_changes)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def has_errors(self) -> bool:
        """An error (the specs break the live org policy) forbids applying the plan."""
        return any(d.is_error for d in self.diagnostics)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["diagnostics"] = [d.to_json() for d in self.diagnostics]
        return {"format_version": data.pop("format_version"), **data}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        """Inverse of to_json; raises KeyError/TypeError/ValueError on a malformed file."""
        version = str(data["format_version"])
        if version.split(".")[0] != FORMAT_VERSION.split(".")[0]:
            raise ValueError(
                f"plan format_version {version} is not supported (this reconcile writes "
                f"{FORMAT_VERSION}); make the plan again with this version"
            )
        changes = []
        for rc in data["resource_changes"]:
            ch = rc["change"]
            req = rc.get("request")
            changes.append(
                ResourceChange(
                    address=rc["address"],
                    project=rc["project"],
                    topic=rc["topic"],
                    change=Change(
                        actions=list(ch["actions"]),
                        before=ch["before"],
                        after=ch["after"],
                        fields=[FieldChange(**f) for f in ch.get("fields", [])],
                    ),
                    update_mask=list(rc.get("update_mask", [])),
                    request=Request(**req) if req else None,
                    reasons=list(rc.get("reasons", [])),
                    warnings=list(rc.get("warnings", [])),
                    source=rc.get("source"),
                )
            )
        fp = data.get("fingerprints") or {}
        return cls(
            resource_changes=changes,
            diagnostics=[Diagnostic.from_json(d) for d in data.get("diagnostics", [])],
            drift=[Drift(**d) for d in data.get("drift", [])],
            fingerprints=Fingerprints(
                topics=dict(fp.get("topics", {})), org_policy=dict(fp.get("org_policy", {}))
            ),
            target=str(data.get("target", "")),
            prune=bool(data.get("prune", False)),
            created_at=str(data.get("created_at", "")),
            format_version=version,
        )
