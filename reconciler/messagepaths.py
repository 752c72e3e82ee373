"""Where one topic's message data goes, and where it comes from, beyond the copies
the topic stores: the Vertex AI model each enabled AI Inference transform sends
every message to, the ingestion source the topic takes messages from, and the export
subscriptions (BigQuery, Cloud Storage) that write them out; and what that means
against the topic's storage policy and the org's constraints, as findings.

Pure functions over the REST JSON shapes (camelCase, as a spec and the REST API
write them) and plain values: no call, no google import, so `validate` may use it;
`plan` and `residency` give it what they read live. The transforms' and sources'
own parsing is reconciler/transformrules.py's and reconciler/ingestionrules.py's.

    data_paths(transforms, ingestion, exports) -> [DataPath]
    path_findings(address, project, transforms, ingestion, exports, bounds, call)
        -> [PathFinding]

What the findings rest on (docs/residency.md, "Where transforms and sources send
data", cites each): googleapis `google/pubsub/v1/pubsub.proto`: `AIInference.endpoint`
("Vertex AI API requests will be sent to this endpoint", its location in the name);
`BigQueryConfig.State` / `CloudStorageConfig.State` `IN_TRANSIT_LOCATION_RESTRICTION`
("enforce_in_transit is set to true and the destination locations are not in the
allowed regions") and `VERTEX_AI_LOCATION_RESTRICTION` ("the table is not in the
same location as where Vertex AI models used in message_transforms are deployed");
every ingestion source's `State` `CONFLICTING_REGION_CONSTRAINTS` ("the selected
ingestion region is not permitted by the Regional Access Boundary (RAB)
restrictions on the project's service account"); the managed constraint
`pubsub.managed.disableTopicMessageTransforms`. What is not public is said as such:
what the service does with a model outside the allowed regions, an export's
destination location (not in the Pub/Sub API), a Regional Access Boundary (not in
the spec nor the Pub/Sub API). "The same location" is read as the same name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from reconciler.diagnostics import Severity
from reconciler.frozen import READ_ONLY, FrozenList
from reconciler.ingestionrules import source_kind
from reconciler.memo import MEMO_ENTRIES
from reconciler.transformrules import ai_endpoints, endpoint_location

VERTEX_AI_STATE = "VERTEX_AI_LOCATION_RESTRICTION"
IN_TRANSIT_STATE = "IN_TRANSIT_LOCATION_RESTRICTION"
CONFLICTING_STATE = "CONFLICTING_REGION_CONSTRAINTS"
EXPORT_KINDS = ("bigquery", "cloud_storage")
DISABLE_TRANSFORMS = "pubsub.managed.disableTopicMessageTransforms"

# The finding codes (docs/validate.md, "Checks", lists them).
MODEL_REGION = "transform-model-region"
TRANSFORMS_DISABLED = "org-transforms-disabled"
EXISTING_TRANSFORMS_DISABLED = "existing-transforms-disabled"
EXPORT_RESTRICTION = "export-location-restriction"
EXPORT_UNJUDGED = "export-location-unjudged"
EXPORTS_AT_PLAN = "transform-exports-at-plan"
INGESTION_UNJUDGED = "ingestion-region-unjudged"
INGESTION_CONFLICT = "ingestion-region-conflict"

TRANSFORMS_PATH: tuple[str | int, ...] = ("spec", "messageTransforms")
INGESTION_PATH: tuple[str | int, ...] = ("spec", "ingestionDataSourceSettings")
# The members of `spec` whose declaring topics nearly all get a finding offline (an
# AI Inference transform's exports, a source's boundary: known only live, or never):
# their documents keep where spec's members sit from the first, position-less read
# (yamlio.load_documents `layout_of`), so those findings read no file again.
FOUND_ON_EVERY_TOPIC = frozenset({str(TRANSFORMS_PATH[1]), str(INGESTION_PATH[1])})
_SOURCE_TEXT = {
    "awsKinesis": "Amazon Kinesis", "cloudStorage": "Cloud Storage",
    "azureEventHubs": "Azure Event Hubs", "awsMsk": "Amazon MSK",
    "confluentCloud": "Confluent Cloud",
}
# What a source is named by (never a credential: client and tenant IDs, identity
# pools and role ARNs are not shown).
_SOURCE_NAMED_BY = {
    "awsKinesis": ("streamArn",), "cloudStorage": ("bucket",),
    "azureEventHubs": ("namespace", "eventHub"), "awsMsk": ("clusterArn", "topic"),
    "confluentCloud": ("bootstrapServer", "topic"),
}
_ARN_FIELD = {"awsKinesis": "streamArn", "awsMsk": "clusterArn"}
_EXPORT_TEXT = {"bigquery": "BigQuery export", "cloud_storage": "Cloud Storage export"}

PathKind = Literal["model", "source", "export"]


class ExportLike(Protocol):
    """What is read of a subscription (backends' ObservedSubscription has it)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def state(self) -> str: ...


@dataclass(frozen=True)
class DataPath:
    """One way message data leaves or enters the topic. `location`: where, when the
    name says it (a model's location, an AWS source's region), None when not known;
    `state`: what the service says of it (an export's or a source's state)."""

    kind: PathKind
    what: str
    location: str | None
    detail: str
    spec_path: tuple[str | int, ...] = ()
    state: str | None = None


class Bounds(NamedTuple):
    """What the paths are judged against: the regions the topic allows (None: every
    one), whether in-transit enforcement is on, and whether the org enforces
    pubsub.managed.disableTopicMessageTransforms on its project. (A NamedTuple, as
    `Call`: one is made, and hashed as a key of `judged_findings`, per topic.)"""

    allowed: frozenset[str] | None
    enforce_in_transit: bool
    transforms_disabled: bool = False


class Call(NamedTuple):
    """What is known of the call: `live` (False: offline, nothing says whether the
    topic exists), whether it exists, and whether the call sets the transforms or
    the ingestion source (a create with them, an update whose mask names them)."""

    live: bool
    exists: bool = False
    sets_transforms: bool = True
    sets_ingestion: bool = True


@dataclass(frozen=True)
class PathFinding:
    """One finding, at `spec_path` in the topic's document; `at_plan`: offline, what
    only the live topic decides (validate says so and plan says it again)."""

    severity: Severity
    code: str
    message: str
    spec_path: tuple[str | int, ...]
    hint: str | None = None
    at_plan: bool = False


def model_paths(transforms: Sequence[Mapping[str, Any]] | None) -> tuple[DataPath, ...]:
    """Each enabled AI Inference transform: the model every message is sent to.
    Remembered by the transforms' identity: they are read-only (topicvalues), and a
    spec's topics that declare the same list share one (spec/restfields.py)."""
    if not transforms:
        return ()
    if type(transforms) is not FrozenList:  # may change: not remembered
        return _model_paths(transforms)
    seen = _MODELS_SEEN.get(id(transforms))
    if seen is not None and seen[0] is transforms:
        return seen[1]
    found = _model_paths(transforms)
    if len(_MODELS_SEEN) >= MEMO_ENTRIES:
        _MODELS_SEEN.clear()
    _MODELS_SEEN[id(transforms)] = (transforms, found)  # held: its id stays its own
    return found


def _model_paths(transforms: Sequence[Mapping[str, Any]]) -> tuple[DataPath, ...]:
    return tuple(
        DataPath(
            "model", f"messageTransforms[{index}] AI Inference", endpoint_location(endpoint),
            endpoint, (*TRANSFORMS_PATH, index, "aiInference", "endpoint"),
        )
        for index, endpoint in ai_endpoints(transforms)
    )


# id(transforms) -> (the transforms, their model paths); bounded, emptied when full.
_MODELS_SEEN: dict[int, tuple[Any, tuple[DataPath, ...]]] = {}


def arn_region(arn: str) -> str | None:
    """The AWS region an ARN names (`arn:aws:kinesis:us-east-1:...`), or None."""
    parts = arn.split(":")
    return parts[3] or None if len(parts) > 5 and parts[0] == "arn" else None


def source_path(ingestion: Mapping[str, Any] | None) -> DataPath | None:
    """The ingestion source the topic takes messages from (None: none)."""
    kind = source_kind(ingestion or {})
    if kind is None or ingestion is None:
        return None
    body = ingestion.get(kind) or {}
    detail = ", ".join(
        f"{key} {body[key]}" for key in _SOURCE_NAMED_BY[kind] if body.get(key)
    )
    arn = body.get(_ARN_FIELD.get(kind, ""))
    where = arn_region(arn) if isinstance(arn, str) else None
    state = body.get("state")
    return DataPath(
        "source", _SOURCE_TEXT[kind], where and f"aws:{where}", detail or "(not named)",
        (*INGESTION_PATH, kind), state if isinstance(state, str) else None,
    )


def export_paths(exports: Sequence[ExportLike] | None) -> list[DataPath]:
    """The BigQuery and Cloud Storage exports: their destination's location is not
    in the Pub/Sub API (None)."""
    return [
        DataPath("export", _EXPORT_TEXT[s.kind], None, s.name, (), s.state)
        for s in sorted(exports or (), key=lambda s: s.name) if s.kind in EXPORT_KINDS
    ]


def data_paths(
    transforms: Sequence[Mapping[str, Any]] | None,
    ingestion: Mapping[str, Any] | None,
    exports: Sequence[ExportLike] | None = None,
) -> list[DataPath]:
    """Every path, in order: the source, the models, the exports."""
    source = source_path(ingestion)
    return [*([source] if source else []), *model_paths(transforms), *export_paths(exports)]


def _allowed_text(allowed: frozenset[str] | None) -> str:
    return "every region" if allowed is None else ", ".join(sorted(allowed)) or "none"


def path_findings(
    address: str,
    project: str,
    transforms: Sequence[Mapping[str, Any]] | None,
    ingestion: Mapping[str, Any] | None,
    exports: Sequence[ExportLike] | None,
    bounds: Bounds,
    call: Call,
) -> list[PathFinding]:
    """The findings on topic `address` as the call leaves it (`transforms`,
    `ingestion`: after the call; `exports`: its subscriptions, None offline)."""
    out: list[PathFinding] = []
    models = model_paths(transforms)
    out += _model_findings(address, models, bounds)
    out += disabled_findings(address, project, transforms, bounds, call)
    if call.live:
        out += _export_findings(address, models, exports, bounds, call)
    elif models:
        out.append(PathFinding(
            Severity.WARNING, EXPORTS_AT_PLAN,
            f"topic {address} sends each message to a Vertex AI model in "
            f"{', '.join(sorted({m.location or '?' for m in models}))}: an export "
            "subscription (BigQuery, Cloud Storage) whose destination is elsewhere reads "
            f"{VERTEX_AI_STATE} and stops delivering; which exports the topic has is known "
            "only live",
            TRANSFORMS_PATH, at_plan=True,
        ))
    out += _source_findings(address, ingestion, call)
    return out


# path_findings of a topic without export subscriptions, by all it depends on: the
# transforms and the source (by identity: read-only values, one object for each
# distinct one in a spec's topics and in the live ones, spec/restfields.py and
# topic.py), the bounds, the call, the project. A tree's topics repeat a few
# combinations: each is judged once, worded with TOPIC where the topic's name goes
# (`for_topic`). Held, so that an id stays its object's; bounded, emptied when full.
TOPIC = "\x00"  # a message never holds a control character of its own (escaped)
_JUDGED: dict[tuple[Any, ...], tuple[Any, Any, tuple[PathFinding, ...]]] = {}


def judged_findings(
    project: str,
    transforms: Sequence[Mapping[str, Any]] | None,
    ingestion: Mapping[str, Any] | None,
    exports: Sequence[ExportLike] | None,
    bounds: Bounds,
    call: Call,
) -> Sequence[PathFinding]:
    """`path_findings`, judged once for the topics that share what it reads: each
    message and hint with TOPIC where the topic's name goes (`for_topic`)."""
    if exports or not (_read_only(transforms) and _read_only(ingestion)):
        # the topic's own subscriptions, or values that may change: judged for it
        return path_findings(TOPIC, project, transforms, ingestion, exports, bounds, call)
    key = (id(transforms), id(ingestion), exports is None, bounds, call, project)
    seen = _JUDGED.get(key)
    if seen is None or seen[0] is not transforms or seen[1] is not ingestion:
        if len(_JUDGED) >= MEMO_ENTRIES:
            _JUDGED.clear()
        seen = _JUDGED[key] = (transforms, ingestion, tuple(path_findings(
            TOPIC, project, transforms, ingestion, exports, bounds, call)))
    return seen[2]


def _read_only(value: Any) -> bool:
    return value is None or type(value) in READ_ONLY


def for_topic(text: str, address: str) -> str:
    """A judged finding's message or hint, for topic `address`."""
    return text.replace(TOPIC, address)


def _model_findings(
    address: str, models: Sequence[DataPath], bounds: Bounds
) -> list[PathFinding]:
    """A model outside the allowed regions while in-transit enforcement is on."""
    if not bounds.enforce_in_transit or bounds.allowed is None:
        return []
    return [
        PathFinding(
            Severity.WARNING, MODEL_REGION,
            f"{m.what} of topic {address} sends each message to a Vertex AI model in "
            f"{m.location!r}, outside the topic's allowed regions "
            f"({_allowed_text(bounds.allowed)}) while enforceInTransit is on: message data "
            "leaves the allowed regions for inference (whether the service refuses or "
            "pauses such a transform is not public)",
            m.spec_path,
            hint=f"use a model endpoint in an allowed region, or allow {m.location!r}",
        )
        for m in models if m.location is not None and m.location not in bounds.allowed
    ]


def disabled_findings(
    address: str, project: str, transforms: Sequence[Mapping[str, Any]] | None,
    bounds: Bounds, call: Call,
) -> list[PathFinding]:
    """Transforms where the managed constraint forbids them: the service refuses a
    call that sets any (disabled ones too); a topic that keeps its own is left."""
    if not bounds.transforms_disabled or not transforms:
        return []
    said = (
        f"constraints/{DISABLE_TRANSFORMS} is enforced for project {project}: the service "
        f"refuses a call that sets message transforms on topic {address} "
        "(FAILED_PRECONDITION)"
    )
    hint = "drop messageTransforms, or have the constraint lifted for the project"
    if not call.live:
        return [PathFinding(Severity.WARNING, TRANSFORMS_DISABLED, said, TRANSFORMS_PATH,
                            hint, at_plan=True)]
    if call.sets_transforms:
        return [PathFinding(Severity.ERROR, TRANSFORMS_DISABLED, said, TRANSFORMS_PATH, hint)]
    return [PathFinding(
        Severity.WARNING, EXISTING_TRANSFORMS_DISABLED,
        f"topic {address} has message transforms while constraints/{DISABLE_TRANSFORMS} "
        f"is enforced for project {project}: the plan leaves them as they are (no call "
        "sets them); a call that sets them would be refused",
        TRANSFORMS_PATH, hint,
    )]


def _export_findings(
    address: str, models: Sequence[DataPath], exports: Sequence[ExportLike] | None,
    bounds: Bounds, call: Call,
) -> list[PathFinding]:
    """What the models (after the call) do to the topic's exports."""
    found = [s for s in exports or () if s.kind in EXPORT_KINDS]
    if not found or not models:
        return []
    where = sorted({m.location or "?" for m in models})
    out: list[PathFinding] = []
    for sub in sorted(found, key=lambda s: s.name):
        text = f"{_EXPORT_TEXT[sub.kind]} {sub.name} of topic {address}"
        if sub.state == VERTEX_AI_STATE:
            out.append(PathFinding(
                Severity.WARNING, EXPORT_RESTRICTION,
                f"{text} reads {VERTEX_AI_STATE} now: its destination is not where the "
                f"model is deployed ({', '.join(where)}); messages wait in its backlog",
                TRANSFORMS_PATH,
                hint="move the destination to the model's location, or use a model there",
            ))
            continue
        if not call.sets_transforms:
            continue  # the models stay as they are, and the export delivers
        if len(where) > 1:
            why = (f"will read {VERTEX_AI_STATE}: the models are in {', '.join(where)}, and "
                   "its destination cannot be in all of them")
        elif bounds.enforce_in_transit and bounds.allowed is not None and (
                where[0] not in bounds.allowed):
            why = (f"will read {VERTEX_AI_STATE} (a destination outside {where[0]}) or "
                   f"{IN_TRANSIT_STATE} (a destination in {where[0]}, which the topic's "
                   f"allowed regions, {_allowed_text(bounds.allowed)}, leave out under "
                   "enforceInTransit)")
        else:
            out.append(PathFinding(
                Severity.WARNING, EXPORT_UNJUDGED,
                f"{text} delivers only if its destination is in {where[0]} (elsewhere it "
                f"reads {VERTEX_AI_STATE}); the destination's location is not in the "
                "Pub/Sub API, so this was not judged",
                TRANSFORMS_PATH,
                hint=f"check that the table or bucket is in {where[0]}",
            ))
            continue
        out.append(PathFinding(Severity.WARNING, EXPORT_RESTRICTION, f"{text} {why}",
                               TRANSFORMS_PATH))
    return out


def _source_findings(
    address: str, ingestion: Mapping[str, Any] | None, call: Call
) -> list[PathFinding]:
    """A source's region against a Regional Access Boundary: never knowable here."""
    source = source_path(ingestion)
    if source is None:
        return []
    at = source.spec_path
    if source.state == CONFLICTING_STATE:
        return [PathFinding(
            Severity.WARNING, INGESTION_CONFLICT,
            f"the {source.what} ingestion source of topic {address} reads "
            f"{CONFLICTING_STATE}: its ingestion region is not permitted by the Regional "
            "Access Boundary on the project's service account; nothing is ingested",
            at, hint="change the source's region or the boundary",
        )]
    if call.live and not call.sets_ingestion:
        return []
    return [PathFinding(
        Severity.WARNING, INGESTION_UNJUDGED,
        f"whether the {source.what} ingestion source of topic {address} conflicts with a "
        f"Regional Access Boundary ({CONFLICTING_STATE}) was not judged: the boundary on "
        "the project's service account is in neither the spec nor the Pub/Sub API; the "
        "source's state says after the change (`reconcile residency` shows it)",
        at, at_plan=not call.live,
    )]
