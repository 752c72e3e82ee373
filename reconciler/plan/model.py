"""The plan: a plain, versioned, serialisable object.

Renderers read it, `--format json` prints it, the plan file stores it and apply
executes its `request`s. Each request (and each `fields` entry) is derived from its
change by plan/derive.py, when the plan is made and again when a file is read, so
what a reviewer sees is what apply sends.

Topic shapes (`before`, `after`, `request.topic`) are `reconciler.topic.TopicShape` as
JSON: the proto field names, the same names that appear in update masks.

Format 2.0 (incompatible with 1.x): `digest` ("sha256:HEX" over the canonical JSON of
everything else), `target` an object (where the plan was made and which org policy it
used), `change.computed`. A 1.x file is refused with a message to make the plan again:
it has no digest and no recorded target, so it cannot be checked.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from reconciler.diagnostics import Diagnostic
from reconciler.localstate import shown
from reconciler.plan.jsonform import canonical_bytes, indented_text

FORMAT_VERSION = "2.0"
DIGEST_PREFIX = "sha256:"

Action = Literal["create", "update", "delete", "no-op"]
ACTION_ORDER: tuple[Action, ...] = ("create", "update", "delete", "no-op")

# The three console categories (docs/storage-policy.md) of a topic out of step with the org policy.
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
    # Paths whose `after` the service computes from the org policy: a create leaves
    # them out of its request, an update names them in its mask without a value.
    computed: list[str] = field(default_factory=list)


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


TARGET_KINDS = ("gcp", "local", "emulator")
POLICY_SOURCES = ("api", "snapshot")


@dataclass
class PlanTarget:
    """Where the plan was made: the service (`kind`, `address`: the emulator's
    HOST:PORT or the local state dir) and the org policy's source (the live API, or a
    snapshot file with the sha256 of its bytes). `apply PLANFILE` goes there."""

    kind: str = ""  # one of TARGET_KINDS; "" = not recorded (plans made in-process)
    address: str = ""
    org_policy: str = "api"  # one of POLICY_SOURCES
    snapshot: str = ""
    snapshot_sha256: str = ""

    def describe(self) -> str:
        if self.kind == "gcp":
            return "Google Cloud"
        if self.kind == "local":
            return f"local ({shown(self.address)})"
        if self.kind == "emulator":
            return f"emulator {self.address}"
        return self.address or "unrecorded"

    def describe_policy(self) -> str:
        if self.org_policy == "snapshot":
            return f"snapshot {self.snapshot} ({DIGEST_PREFIX}{self.snapshot_sha256[:12]}…)"
        if self.kind == "local":
            return "local server"  # its own Org Policy service: Google is not called
        return "live Org Policy API"

    @classmethod
    def from_label(cls, label: str) -> PlanTarget:
        """From a backend's label ("gcp", "local (DIR)", "emulator ADDR")."""
        if label == "gcp":
            return cls("gcp")
        if label.startswith("local (") and label.endswith(")"):
            return cls("local", label[len("local (") : -1])
        if label.startswith("emulator "):
            return cls("emulator", label[len("emulator ") :])
        return cls("", label)


def _plain(value: Any) -> Any:
    """`dataclasses.asdict` of a value of the plan's own types: dataclasses become dicts
    (fields in declaration order), lists and dicts stay shared (the plan's JSON values
    are never modified through its document). asdict deep-copies every leaf, which
    was most of a 50,000-topic plan's digest; tests/plan/test_document.py holds the
    two to the same output."""
    names = getattr(type(value), "__dataclass_fields__", None)
    if names is None:
        return value
    return {f: getattr(value, f) for f in names}  # no field below Plan nests a dataclass


def _change(rc: ResourceChange) -> dict[str, Any]:
    """`_plain(rc)` written out: one of these per declared topic."""
    ch = rc.change
    request = rc.request
    return {
        "address": rc.address,
        "project": rc.project,
        "topic": rc.topic,
        "change": {
            "actions": ch.actions,
            "before": ch.before,
            "after": ch.after,
            "fields": [_plain(f) for f in ch.fields] if ch.fields else [],
            "computed": ch.computed,
        },
        "update_mask": rc.update_mask,
        "request": None if request is None else {
            "method": request.method,
            "topic": request.topic,
            "update_mask": request.update_mask,
        },
        "reasons": rc.reasons,
        "warnings": rc.warnings,
        "source": rc.source,
    }


def canonical(data: dict[str, Any]) -> bytes:
    """Canonical JSON of a plan document without its digest: sorted keys, no
    whitespace, UTF-8."""
    return canonical_bytes({k: v for k, v in data.items() if k != "digest"})


def digest_of(data: dict[str, Any]) -> str:
    """"sha256:HEX" of a plan document's canonical content (its `digest` excluded)."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(data)).hexdigest()


@dataclass
class Plan:
    resource_changes: list[ResourceChange] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    fingerprints: Fingerprints = field(default_factory=Fingerprints)
    target: PlanTarget = field(default_factory=PlanTarget)
    prune: bool = False
    created_at: str = ""
    format_version: str = FORMAT_VERSION
    # --project: the only projects planned, sorted ([] = every declared project; then
    # the key is left out of the document, so plans without a filter read as before).
    projects: list[str] = field(default_factory=list)

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

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.is_error]

    def content(self) -> dict[str, Any]:
        """The document without its digest (what the digest is computed over); it
        shares the plan's lists and dicts: read it, do not change it."""
        data: dict[str, Any] = {
            "resource_changes": [_change(rc) for rc in self.resource_changes],
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "drift": [_plain(d) for d in self.drift],
            "fingerprints": _plain(self.fingerprints),
            "target": _plain(self.target),
            "prune": self.prune,
            "created_at": self.created_at,
            "format_version": self.format_version,
            "projects": self.projects,
        }
        if not data["projects"]:
            del data["projects"]
        return {"format_version": data.pop("format_version"), **data}

    @property
    def digest(self) -> str:
        return digest_of(self.content())

    def to_json(self) -> dict[str, Any]:
        """The document, a copy the caller may change."""
        return copy.deepcopy(self._document())

    def _document(self, digest: str | None = None) -> dict[str, Any]:
        """The document, sharing the plan's lists and dicts (read only); `digest`:
        `self.digest` when the caller has it already (at 50k topics each computation
        serialises the whole plan)."""
        data = self.content()
        digest = digest or digest_of(data)
        return {"format_version": data.pop("format_version"), "digest": digest, **data}

    def dumps(self, digest: str | None = None) -> str:
        return indented_text(self._document(digest))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        """Inverse of to_json for a document plan/planschema.py accepted (a plan file is
        checked there first; this trusts the shape)."""
        version = str(data["format_version"])
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
                        computed=list(ch.get("computed", [])),
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
            target=PlanTarget(**(data.get("target") or {})),
            prune=bool(data.get("prune", False)),
            projects=list(data.get("projects", [])),
            created_at=str(data.get("created_at", "")),
            format_version=version,
        )
