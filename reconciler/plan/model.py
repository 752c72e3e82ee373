"""The plan: a plain, versioned, read-only object, and the one description of the plan
file.

Renderers read it, `--format json` prints it, the plan file stores it and apply
executes its `request`s. These dataclasses are the format: reconciler/codec.py reads
their annotations, and the document, the strict reading of a file and
docs/plan.schema.json (plan/planschema.py) all follow from them.

A plan cannot change once made: the dataclasses are frozen and every list and object
they hold is read-only (reconciler/frozen.py), so `Plan.digest` is computed once, when first
asked for, and stays true. Each change's `request` and `fields` are derived from it
whenever a change is made or read, replacing whatever was given: what a reviewer sees
is what apply sends (a file whose stored ones differ is refused: plan/planfile.py). The
update mask is stored once, on the resource change; the request carries it because the
request is exactly what is sent.

Topic shapes (`before`, `after`, `request.topic`) are `reconciler.topic.TopicShape` as
JSON: the proto field names, the same names that appear in update masks.

Format 3.0: `owner`, the spec tree's owner identity; its creates and adoptions record
it on the topics, its prune deletes only topics that carry it, and apply refuses to
take over another owner's topic unless told to (docs/ownership.md). The older majors
are refused with a message to plan again (plan/planfile.py says why for each).
"""

from __future__ import annotations

import hashlib
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict  # pydantic reads its keys on Python 3.11 too

from reconciler.codec import (
    As,
    Exactly,
    Items,
    Kept,
    Matching,
    OneOf,
    Record,
    Table,
    Whole,
    is_empty,
    to_data,
)
from reconciler.diagnostics import Diagnostic
from reconciler.frozen import EMPTY, FrozenDict, FrozenList, freeze
from reconciler.localstate import shown
from reconciler.ownership import DEFAULT_OWNER
from reconciler.plan.jsonform import canonical_bytes, indented_text
from reconciler.topic import (
    LABELS,
    MASK_PATHS,
    STORAGE_POLICY,
    StoragePolicy,
    norm_policy,
    policy_json,
    region_set,
)

FORMAT_VERSION = "3.0"
DIGEST_PREFIX = "sha256:"
DIGEST = Matching(r"sha256:[0-9a-f]{64}", "sha256:HEX (64 lowercase hex digits)")
TOPIC_NAME = Matching(r"projects/[^/]+/topics/[^/]+", "projects/PROJECT/topics/TOPIC")
MAJOR = FORMAT_VERSION.split(".")[0]
VERSION = Matching(MAJOR + r"\.[0-9]+", f"MAJOR.MINOR, major {MAJOR}")

Action = Literal["create", "update", "delete", "no-op"]
ACTION_ORDER: tuple[Action, ...] = typing.get_args(Action)
ONE_ACTION: dict[Action, Sequence[Action]] = {a: FrozenList([a]) for a in ACTION_ORDER}
Method = Literal["CreateTopic", "UpdateTopic", "DeleteTopic"]
MaskPath = Literal["labels", "message_storage_policy"]  # reconciler.topic.MASK_PATHS

# The three console categories (docs/storage-policy.md) of a topic out of step with the org policy.
DriftCategory = Literal[
    "allows-disallowed-locations", "misses-allowed-locations", "allowed-and-disallowed-stale"
]
DRIFT_ALLOWS_DISALLOWED, DRIFT_MISSES_ALLOWED, DRIFT_BOTH = typing.get_args(DriftCategory)

TARGET_KINDS = ("gcp", "local", "emulator")
POLICY_SOURCES = ("api", "snapshot")

Strings = Items[str]

# Every class of the plan: exactly its members when read (the nested classes inherit it).
READ_EXACTLY = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


# -- JSON objects held as read-only dicts --------------------------------------------


class PolicyState(TypedDict):
    """A message storage policy as the plan shows it."""

    allowed_persistence_regions: Strings
    enforce_in_transit: bool


class TopicState(TypedDict):
    """A topic as the plan compares it, with proto field names (the names of update
    masks); null when the topic does not exist."""

    labels: Table[str]
    message_storage_policy: PolicyState | None


class Source(TypedDict):
    """Where the topic is declared."""

    file: str
    line: int


TopicJSON = Annotated[Mapping[str, Any] | None, As(TopicState | None)]


def topic_state(labels: Mapping[str, str], policy: StoragePolicy | None) -> FrozenDict[str, Any]:
    """A `before`/`after` (`reconciler.topic.shape_json`) made read-only: the policy's
    JSON once per distinct policy (most topics share a few), the labels copied once."""
    return FrozenDict({LABELS: FrozenDict(labels), STORAGE_POLICY: _policy_state(policy)})


@lru_cache(maxsize=1024)
def _policy_state(policy: StoragePolicy | None) -> Any:
    return freeze(policy_json(norm_policy(policy)))


# -- the model ----------------------------------------------------------------------


@dataclass(frozen=True)
class Request(Record):
    """Exactly what apply sends: a CreateTopic/UpdateTopic/DeleteTopic body."""

    method: Method
    topic: Annotated[
        Table[Any], Field(description="The topic as sent: its name and the masked fields.")
    ]
    update_mask: Annotated[
        Strings, Field(description="The update's mask (UpdateTopic only).")
    ] = EMPTY


@dataclass(frozen=True)
class FieldChange(Record):
    """One top-level path that changes, with enough detail for a reviewer."""

    path: MaskPath
    before: Any
    after: Any
    added: Annotated[Strings, Field(description="Set members added (regions, label keys).")] = EMPTY
    removed: Annotated[Strings, Field(description="Set members removed.")] = EMPTY
    note: Annotated[str | None, Field(description="e.g. recomputed from the org policy.")] = None


@dataclass(frozen=True)
class Change(Record):
    """The topic before and after, and what the service computes."""

    actions: Annotated[
        Items[Action], Exactly(1, "exactly one action"),
        Field(description="A list with one action (the form Terraform's plans use)."),
    ]
    before: Annotated[TopicJSON, Field(description="The live topic; null when it does not exist.")]
    after: Annotated[TopicJSON, Field(description="The topic after the change; null for a delete.")]
    fields: Annotated[
        Items[FieldChange],
        Field(description="Per top-level path the change sets: before/after, set members "
              "added/removed, a note. Derived from the change by its resource change."),
    ] = EMPTY
    computed: Annotated[
        Items[MaskPath],
        Field(description="Paths whose `after` the service computes from the org policy: a "
              "create leaves them out of its request, an update names them in its mask "
              "without a value."),
    ] = EMPTY


SubscriptionKind = Literal["pull", "push", "bigquery", "cloud_storage"]


@dataclass(frozen=True)
class SubscriptionRef(Record):
    """A subscription attached to the topic, as the plan names it."""

    name: Annotated[str, Field(description="projects/P/subscriptions/S")]
    kind: SubscriptionKind
    state: Annotated[
        str, Field(description="The export config's state (bigquery, cloud_storage), else "
                   "the subscription's: ACTIVE, IN_TRANSIT_LOCATION_RESTRICTION, "
                   "RESOURCE_ERROR.")
    ]
    backlog: Annotated[
        int | None, Field(description="Unacknowledged messages (read for a delete); null when "
                          "not read or unknown.")
    ] = None


@dataclass(frozen=True)
class LeftBehind(Record):
    """Messages stored in a region the change removes: a policy change applies only to
    messages published after it, stored ones are not moved (by the by-region gauges)."""

    region: str
    messages: int
    bytes: int | None = None
    oldest_age_seconds: Annotated[
        int | None, Field(description="Age of the oldest, seconds.")
    ] = None


@dataclass(frozen=True)
class ResourceChange(Record):
    """One declared topic (or one topic to delete with prune). Its `request` and its
    change's `fields` are derived from it whenever it is made or read: what is given
    for them is replaced."""

    address: Annotated[str, TOPIC_NAME]
    project: str
    topic: str
    change: Change
    update_mask: Annotated[
        Items[MaskPath],
        Field(description="Top-level proto paths an update sends: labels, "
              "message_storage_policy (empty for create, delete and no-op)."),
    ] = EMPTY
    request: Annotated[
        Request | None,
        Field(description="Exactly what apply sends, derived from the address, the change and "
              "the update mask (null for a no-op)."),
    ] = None
    reasons: Annotated[Strings, Field(description="Why: drift category, adoption.")] = EMPTY
    warnings: Annotated[Strings, Field(description="What a reviewer should know.")] = EMPTY
    source: Annotated[Mapping[str, Any] | None, As(Source | None)] = None
    subscriptions: Annotated[
        Items[SubscriptionRef],
        Field(exclude_if=is_empty,
              description="The topic's subscriptions, for a change that affects them "
              "(in-transit enforcement, regions removed, a delete) or a paused export; "
              "absent when none."),
    ] = EMPTY
    left_behind: Annotated[
        Items[LeftBehind],
        Field(exclude_if=is_empty,
              description="For a change that removes regions: what is stored in each removed "
              "region (absent when nothing is, or when unknown: see left_behind_unknown)."),
    ] = EMPTY
    left_behind_unknown: Annotated[
        str | None,
        Field(exclude_if=is_empty,
              description="Why what is stored in the removed regions is unknown (metrics "
              "unavailable)."),
    ] = None
    prune_subscribed_by: Annotated[
        str | None,
        Field(exclude_if=is_empty,
              description="For a delete: what allows it to detach the topic's subscriptions "
              "(the --prune-subscribed flag, or the Owner document's pruneSubscribed entry "
              "that names it). Absent: apply re-lists the topic's subscriptions right "
              "before DeleteTopic and refuses the delete if it has any this plan does not "
              "show."),
    ] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.change.actions[0] == "no-op":  # most of a large plan: nothing to derive
            if self.request is not None:
                object.__setattr__(self, "request", None)
            if self.change.fields:
                object.__setattr__(self, "change", replace(self.change, fields=EMPTY))
            return
        fields = derive_fields(self)
        if fields != self.change.fields:
            object.__setattr__(self, "change", replace(self.change, fields=fields))
        object.__setattr__(self, "request", derive_request(self))

    @property
    def action(self) -> Action:
        return self.change.actions[0]


@dataclass(frozen=True)
class Drift(Record):
    """A live topic out of step with the org policy whose storage policy is unmanaged:
    reported, never applied."""

    address: Annotated[str, TOPIC_NAME]
    category: DriftCategory
    message: str
    fix: str
    disallowed: Strings = EMPTY
    missing: Strings = EMPTY


@dataclass(frozen=True)
class Fingerprints(Record):
    """What the plan was made against: sha256 of every observed topic (or "absent") and
    of each project's effective org policy inputs; apply PLANFILE re-reads and compares
    them."""

    topics: Table[str] = field(default_factory=FrozenDict)
    org_policy: Table[str] = field(default_factory=FrozenDict)


@dataclass(frozen=True)
class PlanTarget(Record):
    """Where the plan was made: the service (`kind`, `address`: the emulator's
    HOST:PORT or the local state dir) and the org policy's source (the live API, or a
    snapshot file with the sha256 of its bytes). `apply PLANFILE` goes there and refuses
    another target or org-policy source."""

    # "" = not recorded (plans made in-process); a plan file always records one.
    kind: Annotated[str, OneOf(TARGET_KINDS)] = ""
    address: Annotated[
        str, Field(description="The local state dir or the emulator HOST:PORT.")
    ] = ""
    org_policy: Annotated[str, OneOf(POLICY_SOURCES)] = "api"
    snapshot: Annotated[
        str, Field(description="The --org-policy snapshot, when org_policy is snapshot.")
    ] = ""
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


def canonical(data: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a plan document without its digest: sorted keys, no
    whitespace, UTF-8."""
    return canonical_bytes({k: v for k, v in data.items() if k != "digest"})


def digest_of(data: Mapping[str, Any]) -> str:
    """"sha256:HEX" of a plan document's canonical content (its `digest` excluded)."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(data)).hexdigest()


@dataclass(frozen=True)
class Plan(Record):
    """A reconcile plan (format_version 3.x): what `reconcile plan --format json`
    prints and `--out PLANFILE` saves. Its digest is computed over the rest."""

    __pydantic_config__ = READ_EXACTLY

    format_version: Annotated[
        str, VERSION, Field(description="MAJOR.MINOR; a reader refuses another major version.")
    ] = FORMAT_VERSION
    digest: Annotated[
        str, DIGEST, Kept("digest"),
        Field(description="sha256 of the plan's content, everything but the digest, as "
              "canonical JSON: what `apply PLANFILE --expect-digest` compares. Derived when "
              "the plan is made or read."),
    ] = ""
    resource_changes: Annotated[
        Items[ResourceChange],
        Field(description="One entry per declared topic (and per topic to delete with prune)."),
    ] = EMPTY
    diagnostics: Annotated[
        Items[Annotated[Diagnostic, Whole()]],
        Field(description="Validation and live org-policy findings; a plan with an error "
              "cannot be applied."),
    ] = EMPTY
    drift: Annotated[
        Items[Drift],
        Field(description="Live topics out of step with the org policy whose storage policy "
              "is unmanaged: warnings, never changes."),
    ] = EMPTY
    fingerprints: Fingerprints = field(default_factory=Fingerprints)
    target: PlanTarget = field(default_factory=PlanTarget)
    owner: Annotated[
        str,
        Field(description="The spec tree's owner identity (its Owner document, or `default`): "
              "recorded on the topics the plan creates or adopts (label reconcile-owner); a "
              "prune deletes only topics that carry it."),
    ] = DEFAULT_OWNER
    prune: Annotated[
        bool, Field(description="Whether deletes of this owner's undeclared topics were planned.")
    ] = False
    created_at: Annotated[str, Field(description="When the plan was made (ISO 8601, UTC).")] = ""
    projects: Annotated[
        Strings,
        Field(exclude_if=is_empty,
              description="Only with plan --project: the projects planned (sorted); absent "
              "when every declared project was planned."),
    ] = EMPTY

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

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "digest", digest_of(self._content))

    @cached_property
    def _content(self) -> dict[str, Any]:
        """The document without its digest, made once: the digest and the saved
        document are written from it (it is never handed out)."""
        return self.content()

    def content(self) -> dict[str, Any]:
        """The document without its digest (what the digest is computed over), a plain
        copy the caller may change."""
        data: dict[str, Any] = to_data(self)
        del data["digest"]
        return data

    def to_json(self) -> dict[str, Any]:
        """The plan file's document, a plain copy the caller may change."""
        data: dict[str, Any] = to_data(self)
        return data

    def dumps(self) -> str:
        """The plan file's text (also `--format json`): the document, indented."""
        version, *rest = self._content.items()
        return indented_text({version[0]: version[1], "digest": self.digest, **dict(rest)})


# -- what a change's request and fields are ---------------------------------------------

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
    paths = shown_paths(rc)
    for path in paths:
        if path not in rc.change.computed and after.get(path) is not None:
            body[path] = after[path]
    if rc.action == "create":
        return Request("CreateTopic", body)
    return Request("UpdateTopic", body, paths)


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
    paths = shown_paths(rc)
    if not paths:
        return []
    before = rc.change.before or {}
    after = rc.change.after or {}
    out = []
    for path in paths:
        b, a = before.get(path), after.get(path)
        if path == LABELS and rc.action == "create":
            b = {}
        added, removed = _sets(b, a, path)
        note = None
        if path in rc.change.computed:
            note = NOTE_CREATE if rc.action == "create" else NOTE_UPDATE
        out.append(FieldChange(path, b, a, added, removed, note))  # type: ignore[arg-type]
    return out
