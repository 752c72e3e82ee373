"""The plan: a plain, versioned, read-only object, and the one description of the plan
file.

Renderers read it, `--format json` prints it, the plan file stores it and apply
executes its `request`s. These records are the format: reconciler/codec.py (msgspec)
writes them, reads a file strictly into them, and generates docs/plan.schema.json
from them (plan/planschema.py).

A plan cannot change once made: the records are frozen and every list and object they
hold is read-only, so `Plan.digest`, computed when the plan is made, stays true. Each
change's `request` and `fields` are derived from it whenever a change is made or read,
replacing whatever was given (a file whose stored ones differ is refused:
plan/planfile.py). The request states all apply sends: the body, the update mask
(which names `labels` for the plan's marker too), how an update's labels are made
(merged onto the topic's labels read right before the call) and the marker label;
`show` renders it, so what a reviewer sees is what apply sends.

Topic shapes (`before`, `after`, `request.topic`) are `reconciler.topic.TopicShape` as
JSON: the proto field names, the same names that appear in update masks (their
read-only form and published shape: plan/topicstate.py).

The major version changes when a reader of the previous one would misread a file;
plan/planfile.py refuses a file of another major before reading it, with a message to
plan again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from msgspec import Meta

from reconciler.acceptance import AcceptedDiagnostic
from reconciler.codec import (
    Record,
    always,
    canonical_json,
    derive,
    doc,
    indented_json,
    replace,
    to_data,
)
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.frozen import EMPTY, FrozenDict, FrozenList
from reconciler.localstate import shown
from reconciler.ownership import DEFAULT_OWNER, PLAN_LABEL
from reconciler.plan.reasons import Reason
from reconciler.plan.topicstate import SourceJSON, TopicJSON
from reconciler.topic import StoragePolicy, region_set
from reconciler.topicfields import LABELS, MASK_PATHS, STORAGE_POLICY, TAGS

FORMAT_VERSION = "4.8"
DIGEST_PREFIX = "sha256:"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
MAJOR = FORMAT_VERSION.split(".")[0]
Digest = Annotated[str, Meta(pattern=DIGEST_PATTERN)]
TopicName = Annotated[str, Meta(pattern=r"^projects/[^/]+/topics/[^/]+$")]
Version = Annotated[str, Meta(pattern=rf"^{MAJOR}\.[0-9]+$")]

Action = Literal["create", "update", "delete", "no-op"]
ACTION_ORDER: tuple[Action, ...] = typing.get_args(Action)
ONE_ACTION: dict[Action, Sequence[Action]] = {a: FrozenList([a]) for a in ACTION_ORDER}
Method = Literal["CreateTopic", "UpdateTopic", "DeleteTopic"]
MaskPath = Literal[  # reconciler.topicfields.MASK_PATHS, written out for mypy (a test
    "labels", "message_storage_policy", "message_retention_duration", "kms_key_name",
    "schema_settings", "message_transforms",  # holds the two equal:
    "ingestion_data_source_settings",  # tests/test_topicfields.py)
]

# The three console categories (docs/storage-policy.md) of a topic out of step with the org policy.
DriftCategory = Literal[
    "allows-disallowed-locations", "misses-allowed-locations", "allowed-and-disallowed-stale"
]
DRIFT_ALLOWS_DISALLOWED, DRIFT_MISSES_ALLOWED, DRIFT_BOTH = typing.get_args(DriftCategory)

TARGET_KINDS = ("gcp", "local", "emulator")
POLICY_SOURCES = ("api", "snapshot")

Strings = Sequence[str]


# -- the model ----------------------------------------------------------------------


class LabelMerge(Record, frozen=True):
    """How an UpdateTopic's labels are made: the topic's labels read right before the
    call, with these set and removed; labels others set meanwhile are kept. A label the
    plan changes, a `reconcile-` label or the storage policy the plan sets that moved
    since the plan makes the topic stale: it is not updated (apply/freshness.py)."""

    set: Annotated[Mapping[str, str], doc("Labels set to these values.")]
    remove: Annotated[Strings, doc("Label keys removed.")] = always(EMPTY)

    def onto(self, labels: Mapping[str, str]) -> dict[str, str]:
        """`labels` (the topic's, as read) with these set and removed, by key."""
        merged = {k: v for k, v in labels.items() if k not in self.remove}
        merged.update(self.set)
        return dict(sorted(merged.items()))


class Request(Record, frozen=True):
    """Exactly what apply sends: a CreateTopic/UpdateTopic/DeleteTopic body, its update
    mask, how an update's labels are made, and the plan's marker."""

    method: Method
    topic: Annotated[
        Mapping[str, Any],
        doc("The topic as sent: its name and the fields it sets, an update's labels apart "
            "(see label_merge)."),
    ]
    update_mask: Annotated[
        Strings,
        doc("The update's mask (UpdateTopic only): the paths the change sets, and labels, "
            "for the plan's marker."),
    ] = always(EMPTY)
    label_merge: Annotated[
        LabelMerge | None, doc("UpdateTopic: how the labels sent are made.")
    ] = always(None)
    marker_label: Annotated[
        str | None,
        doc("The label set, in the same call, to the plan's marker (the first 16 hex digits "
            "of its digest), by which a replayed plan is told applied or superseded; null "
            "for a delete."),
    ] = always(None)


class FieldChange(Record, frozen=True):
    """One top-level path that changes, with enough detail for a reviewer."""

    path: MaskPath
    before: Any
    after: Any
    added: Annotated[Strings, doc("Set members added (regions, label keys).")] = always(EMPTY)
    removed: Annotated[Strings, doc("Set members removed.")] = always(EMPTY)
    note: Annotated[str | None, doc("e.g. recomputed from the org policy.")] = always(None)


class Change(Record, frozen=True):
    """The topic before and after, and what the service computes."""

    actions: Annotated[
        Sequence[Action], Meta(min_length=1, max_length=1),
        doc("A list with one action (the form Terraform's plans use)."),
    ]
    before: Annotated[TopicJSON, doc("The live topic; null when it does not exist.")]
    after: Annotated[TopicJSON, doc("The topic after the change; null for a delete.")]
    fields: Annotated[
        Sequence[FieldChange],
        doc("Per top-level path the change sets: before/after, set members added/removed, "
            "a note. Derived from the change by its resource change."),
    ] = always(EMPTY)
    computed: Annotated[
        Sequence[MaskPath],
        doc("Paths whose `after` the service computes from the org policy: a create leaves "
            "them out of its request, an update names them in its mask without a value."),
    ] = always(EMPTY)


SubscriptionKind = Literal["pull", "push", "bigquery", "cloud_storage"]


class SubscriptionRef(Record, frozen=True):
    """A subscription attached to the topic, as the plan names it."""

    name: Annotated[str, doc("projects/P/subscriptions/S")]
    kind: SubscriptionKind
    state: Annotated[
        str, doc("The export config's state (bigquery, cloud_storage), else the "
                 "subscription's: ACTIVE, IN_TRANSIT_LOCATION_RESTRICTION, RESOURCE_ERROR.")
    ]
    backlog: Annotated[
        int | None, doc("Unacknowledged messages (read for a delete); null when not read "
                        "or unknown.")
    ] = always(None)


class BacklogRef(Record, frozen=True):
    """One subscription's unacknowledged copies in a region, by its own gauges."""

    subscription: Annotated[str, doc("The subscription's ID.")]
    messages: int
    bytes: int | None = always(None)
    oldest_age_seconds: int | None = always(None)


class LeftBehind(Record, frozen=True):
    """Messages stored in a region the change removes: a policy change applies only to
    messages published after it, stored ones are not moved (by the by-region gauges).
    `messages` is the topic gauge: unacknowledged copies summed over its
    subscriptions' backlogs, not distinct messages."""

    region: str
    messages: Annotated[
        int, doc("Unacknowledged copies summed over the topic's subscription backlogs "
                 "(the topic gauge), not distinct messages.")]
    bytes: int | None = always(None)
    oldest_age_seconds: Annotated[
        int | None, doc("Age of the oldest, seconds.")
    ] = always(None)
    backlogs: Annotated[
        Sequence[BacklogRef] | None,
        doc("Which subscriptions hold those copies (null: unknown)."),
    ] = always(None)
    distinct_messages_min: Annotated[
        int | None, doc("The fewest distinct messages the backlogs can hold (null: unknown).")
    ] = always(None)
    distinct_messages_max: Annotated[
        int | None, doc("The most (their sum); equal to the minimum when exact.")
    ] = always(None)
    clears: Annotated[
        str | None, doc("What clears the region, as one line (the residency report's words).")
    ] = always(None)


class ResourceChange(Record, frozen=True):
    """One declared topic (or one topic to delete with prune). Its `request` and its
    change's `fields` are derived from it whenever it is made or read: what is given
    for them is replaced."""

    address: TopicName
    project: str
    topic: str
    change: Change
    update_mask: Annotated[
        Sequence[MaskPath],
        doc(f"Top-level proto paths an update sends (any of {', '.join(MASK_PATHS)}; "
            "empty for create, delete and no-op)."),
    ] = always(EMPTY)
    request: Annotated[
        Request | None,
        doc("Exactly what apply sends, derived from the address, the change and the update "
            "mask (null for a no-op)."),
    ] = always(None)
    reasons: Annotated[
        Sequence[Reason],
        doc("Why: an adoption (`adopt`, `adopt-from:OWNER`), the recomputed storage policy's "
            "drift, a prune (plan/reasons.py lists every form)."),
    ] = always(EMPTY)
    warnings: Annotated[Strings, doc("What a reviewer should know.")] = always(EMPTY)
    notes: Annotated[
        Strings,
        doc("What a reviewer may like to know, with nothing to act on (a deleted topic has "
            "no subscriptions; nothing is stored in the removed regions); absent when none."),
    ] = EMPTY
    source: SourceJSON = always(None)
    subscriptions: Annotated[
        Sequence[SubscriptionRef],
        doc("The topic's subscriptions, for a change that affects them (in-transit "
            "enforcement, regions removed, a delete) or a paused export; absent when none."),
    ] = EMPTY
    left_behind: Annotated[
        Sequence[LeftBehind],
        doc("For a change that removes regions: what is stored in each removed region "
            "(absent when nothing is, or when unknown: see left_behind_unknown)."),
    ] = EMPTY
    left_behind_unknown: Annotated[
        str | None,
        doc("Why what is stored in the removed regions is unknown (metrics unavailable)."),
    ] = None
    prune_subscribed_by: Annotated[
        str | None,
        doc("For a delete: what allows it to detach the topic's subscriptions (the "
            "--prune-subscribed flag, or the Owner document's pruneSubscribed entry that "
            "names it). Absent: apply re-lists the topic's subscriptions right before "
            "DeleteTopic and refuses the delete if it has any this plan does not show."),
    ] = None
    unmanaged: Annotated[
        Strings,
        doc("What the live topic has that reconcile does not manage and never changes, "
            "described: its ingestion data source, its message transforms; absent when "
            "none."),
    ] = EMPTY

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.change.actions[0] == "no-op":  # most of a large plan: nothing to derive
            if self.request is not None:
                derive(self, "request", None)
            if self.change.fields:
                derive(self, "change", replace(self.change, fields=EMPTY))
            return
        fields = derive_fields(self)
        if fields != self.change.fields:
            derive(self, "change", replace(self.change, fields=fields))
        derive(self, "request", derive_request(self))

    @property
    def action(self) -> Action:
        return self.change.actions[0]


class Drift(Record, frozen=True):
    """A live topic out of step with the org policy whose storage policy is unmanaged:
    reported, never applied."""

    address: TopicName
    category: DriftCategory
    message: str
    fix: str
    disallowed: Strings = always(EMPTY)
    missing: Strings = always(EMPTY)

    def finding(self, file: str, line: int) -> Diagnostic:
        """The drift as a finding at the line that declares its topic, code
        `drift-CATEGORY` (the CI reporters; an acceptance may cover it)."""
        return Diagnostic(
            file, line, 0, Severity.WARNING, f"drift-{self.category}",
            f"{self.address}: {self.message}", f"fix: {self.fix}", topic=self.address,
        )


class ProjectConstraints(Record, frozen=True):
    """The custom constraints on topics in effect for one project, as the plan treated
    them: judged (each call the plan makes was judged against them), or not, with
    why."""

    judged: Annotated[
        Strings,
        doc("`custom.NAME (enforced)` or `custom.NAME (dry-run)`, by name."),
    ] = EMPTY
    not_judged: Annotated[
        Strings,
        doc("`custom.NAME (MODE): why`, or `all: why` when the project's custom "
            "constraints are not known at all (its organization is unknown, a read "
            "failed); the plan's diagnostics say what this means for its calls."),
    ] = EMPTY


class Fingerprints(Record, frozen=True):
    """What the plan was made against: sha256 of every observed topic (or "absent") and
    of each project's effective org policy inputs (its custom constraints on topics
    and its place in the resource hierarchy included); apply PLANFILE re-reads and
    compares them."""

    topics: Mapping[str, str] = always(FrozenDict())
    org_policy: Mapping[str, str] = always(FrozenDict())
    organizations: Annotated[
        Mapping[str, str] | None,
        doc("Each project's organization (organizations/ORG: the top of its ancestry as "
            "Resource Manager, or an --org-policy snapshot, states it) whose custom "
            "constraints the plan read. A record: apply PLANFILE reads the ancestry "
            "again, and the project's org_policy fingerprint covers it. Absent when no "
            "project's organization was known."),
    ] = None
    org_policy_parts: Annotated[
        Mapping[str, Mapping[str, str]] | None,
        doc("Each project's org policy inputs fingerprinted one by one (the location, "
            "in-transit and two CMEK constraints by name, `custom`: the custom "
            "constraints on topics and their enforcement, `parents`: where the project "
            "sits; `absent`: none), so that apply PLANFILE names the one that changed. "
            "Absent in a plan made before they were recorded."),
    ] = None


class PlanTarget(Record, frozen=True):
    """Where the plan was made: the service (`kind`, `address`: the emulator's
    HOST:PORT or the local state dir) and the org policy's source (the live API, or a
    snapshot file with the sha256 of its bytes). `apply PLANFILE` goes there and refuses
    another target or org-policy source."""

    # "" = not recorded (plans made in-process); a plan file always records one.
    kind: Annotated[str, Meta(pattern=f"^({'|'.join(TARGET_KINDS)})$")] = always("")
    address: Annotated[
        str, doc("The local state dir or the emulator HOST:PORT.")
    ] = always("")
    org_policy: Annotated[
        str, Meta(pattern=f"^({'|'.join(POLICY_SOURCES)})$")
    ] = always("api")
    snapshot: Annotated[
        str, doc("The --org-policy snapshot, when org_policy is snapshot.")
    ] = always("")
    snapshot_sha256: str = always("")

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


def canonical(data: Any) -> bytes:
    """Canonical JSON of a plan document (a Plan, or its JSON) without its digest:
    sorted keys, no whitespace, UTF-8."""
    if isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k != "digest"}
    return canonical_json(data)


def digest_of(data: Any) -> str:
    """"sha256:HEX" of a plan document's canonical content (its `digest` excluded)."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(data)).hexdigest()


class Plan(Record, frozen=True, dict=True):
    """A reconcile plan (format_version 4.x, `FORMAT_VERSION`): what `reconcile plan --format json`
    prints and `--out PLANFILE` saves. Its digest is computed over the rest."""

    format_version: Annotated[
        Version, doc("MAJOR.MINOR; a reader refuses another major version.")
    ] = always(FORMAT_VERSION)
    digest: Annotated[
        Digest,
        doc("sha256 of the plan's content, everything but the digest, as canonical JSON: "
            "what `apply PLANFILE --expect-digest` compares. Derived whenever the plan is "
            "made or read (the reader of a file compares the one it stores)."),
    ] = ""
    resource_changes: Annotated[
        Sequence[ResourceChange],
        doc("One entry per declared topic (and per topic to delete with prune)."),
    ] = always(EMPTY)
    diagnostics: Annotated[
        Sequence[Diagnostic],
        doc("Validation and live org-policy findings; a plan with an error cannot be "
            "applied."),
    ] = always(EMPTY)
    accepted: Annotated[
        Sequence[AcceptedDiagnostic],
        doc("Warnings the spec tree accepts (a comment in the spec, or the Owner "
            "document's acceptedFindings), each with its `acceptance`: where, why and until "
            "when; counted and listed, not among `diagnostics`. Absent when none."),
    ] = EMPTY
    drift: Annotated[
        Sequence[Drift],
        doc("Live topics out of step with the org policy whose storage policy is "
            "unmanaged: warnings, never changes."),
    ] = always(EMPTY)
    fingerprints: Fingerprints = always(Fingerprints())
    target: PlanTarget = always(PlanTarget())
    owner: Annotated[
        str,
        doc("The spec tree's owner identity (its Owner document, or `default`): recorded "
            "on the topics the plan creates or adopts (label reconcile-owner); a prune "
            "deletes only topics that carry it."),
    ] = always(DEFAULT_OWNER)
    prune: Annotated[
        bool, doc("Whether deletes of this owner's undeclared topics were planned.")
    ] = always(False)
    created_at: Annotated[str, doc("When the plan was made (ISO 8601, UTC).")] = always("")
    projects: Annotated[
        Strings,
        doc("Only with plan --project: the projects planned (sorted); absent when every "
            "declared project was planned."),
    ] = EMPTY
    custom_constraints: Annotated[
        Mapping[str, ProjectConstraints],
        doc("Per project (by id): the custom constraints on topics it enforces or "
            "dry-runs that the plan judged, and those it could not judge, with why; "
            "absent when no project has any, or none could be unknown."),
    ] = FrozenDict()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.diagnostics:
            # A dataclass read without a member it has a default for holds the class's
            # default, which msgspec does not write back: each diagnostic gets them all,
            # so that a key missing from a file changes the digest as any other would.
            derive(self, "diagnostics", FrozenList(dataclasses.replace(d) for d in
                                                   self.diagnostics))
        if self.accepted:  # and each one's acceptance
            derive(self, "accepted", FrozenList(
                dataclasses.replace(d, acceptance=d.acceptance and dataclasses.replace(
                    d.acceptance
                ))
                for d in self.accepted
            ))
        # The digest it was given (a file's: the reader compares it with the derived
        # one), kept beside the members: a plan file is parsed once.
        self.__dict__["_given_digest"] = self.digest
        derive(self, "digest", "")  # the content: the plan while it has no digest
        derive(self, "digest", digest_of(self))

    @property
    def given_digest(self) -> str:
        """The digest the plan was made or read with ("" when none), before its own
        was derived: a plan file's stored one."""
        given: str = self.__dict__.get("_given_digest", "")
        return given

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
        return indented_json(self)


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
        return [p for p in MASK_PATHS if p == LABELS.proto or after.get(p) is not None]
    return []


def derive_request(rc: ResourceChange) -> Request | None:
    """The request that makes `before` into `after`: every shown path carries its
    `after` value, except the computed ones (left out, or masked without a value); an
    update's labels are the merge of the label changes onto the topic as apply reads
    it, and creates and updates set the plan's marker, so an update always names
    labels in its mask."""
    if rc.action == "no-op":
        return None
    if rc.action == "delete":
        return Request("DeleteTopic", {"name": rc.address})
    after = rc.change.after or {}
    body: dict[str, Any] = {"name": rc.address}
    paths = shown_paths(rc)
    for path in paths:
        if path == LABELS.proto and rc.action == "update":
            continue  # made from label_merge when sent
        if path not in rc.change.computed and after.get(path) is not None:
            body[path] = after[path]
    if rc.action == "create":
        if after.get(TAGS.proto):  # input-only, immutable: CreateTopic alone sends them
            body[TAGS.proto] = after[TAGS.proto]
        return Request("CreateTopic", body, marker_label=PLAN_LABEL)
    mask = [p for p in MASK_PATHS if p in paths or p == LABELS.proto]
    return Request("UpdateTopic", body, mask, label_merge(rc), PLAN_LABEL)


def label_merge(rc: ResourceChange) -> LabelMerge:
    """The label changes of an update, before -> after (none when it changes only the
    storage policy)."""
    before: Mapping[str, str] = (rc.change.before or {}).get(LABELS.proto) or {}
    after: Mapping[str, str] = (rc.change.after or {}).get(LABELS.proto) or {}
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return LabelMerge(
        {k: after[k] for k in changed if k in after}, [k for k in changed if k not in after]
    )


def _sets(before: Any, after: Any, path: str) -> tuple[list[str], list[str]]:
    """Members added and removed: label keys, or regions (none when a side allows
    every region; none for a path that holds one value)."""
    if path == LABELS.proto:
        b, a = set(before or {}), set(after or {})
        return sorted(a - b), sorted(b - a)
    if path != STORAGE_POLICY.proto:
        return [], []
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
        if path == LABELS.proto and rc.action == "create":
            b = {}
        added, removed = _sets(b, a, path)
        note = None
        if path in rc.change.computed:
            note = NOTE_CREATE if rc.action == "create" else NOTE_UPDATE
        out.append(FieldChange(path, b, a, added, removed, note))  # type: ignore[arg-type]
    return out
