"""A topic's managed shape: its labels, its storage policy, its retention, key and
schema settings, as one immutable value.

Plan, apply and import compare topics only through this type, so they agree on what
"the same" means: regions are a sorted set, `enforce_in_transit` false equals absent,
`policy is None` means the topic carries no storage policy at all, a retention is the
service's seconds (`172800s`), and a field that is None is not set. The protobuf
`Topic` is converted to and from it only in `reconciler.backends`; its fields' names
(the plan's JSON keys, the update-mask paths) and conversions are the table's,
reconciler/topicfields.py; the value types are reconciler/topicvalues.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from reconciler.memo import MEMO_ENTRIES
from reconciler.ownership import PLAN_LABEL, is_reserved
from reconciler.topicfields import INGESTION, LABELS, SETTINGS, STORAGE_POLICY, TRANSFORMS
from reconciler.topicvalues import IN_TRANSIT as IN_TRANSIT
from reconciler.topicvalues import REGIONS as REGIONS
from reconciler.topicvalues import SchemaSettings as SchemaSettings
from reconciler.topicvalues import StoragePolicy as StoragePolicy
from reconciler.topicvalues import is_regionless as is_regionless
from reconciler.topicvalues import norm_policy as norm_policy
from reconciler.topicvalues import policy_json as policy_json
from reconciler.topicvalues import region_set as region_set

# One value per entry of topicfields.SETTINGS, in its order (None: not set): the
# retention, key and schema settings as TopicShape holds them.
Settings = tuple[Any, ...]
_SETTINGS_OF = attrgetter(*(entry.shape for entry in SETTINGS))


@dataclass(frozen=True)
class TopicShape:
    """Labels (all keys, managed and foreign), the storage policy (None = unset), the
    message retention in the service's form (`172800s`; None = unset), the key name
    (None = unset), the schema settings (None = unset), and what the topic has that
    reconcile does not manage but shows (`unmanaged`: its ingestion source and message
    transforms, described for people; `unmanaged_json`: the same by their REST JSON
    names and in that shape, for custom constraints' conditions, None when unset)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    policy: StoragePolicy | None = None
    retention: str | None = None
    kms_key_name: str | None = None
    schema_settings: SchemaSettings | None = None
    # REST JSON, read-only (topicfields.TRANSFORMS, INGESTION); None = unset.
    message_transforms: Any = None
    ingestion: Any = None
    unmanaged: tuple[str, ...] = ()
    unmanaged_json: Mapping[str, Any] | None = None

    def unmanaged_notes(self, declared: Any) -> tuple[str, ...]:
        """`unmanaged` less the fields a spec declares (`declared(rest_name)` true):
        one note per key of `unmanaged_json`, in its order."""
        if not self.unmanaged or self.unmanaged_json is None:
            return self.unmanaged
        return tuple(
            note for rest, note in zip(self.unmanaged_json, self.unmanaged, strict=False)
            if not declared(rest)
        )

    def managed_labels(self, declared: Mapping[str, str]) -> dict[str, str]:
        """Keys reconcile manages on this topic: the declared ones and every reserved key."""
        return {k: v for k, v in sorted(self.labels.items()) if is_managed_key(k, declared)}

    def foreign_labels(self, declared: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in self.labels.items() if not is_managed_key(k, declared)}

    def to_json(self) -> dict[str, Any]:
        """The plan's `before`/`after` form (labels in the given order, the policy
        normalised, the other fields when set)."""
        return {**shape_json(dict(self.labels), self.policy), **self.settings_json()}

    def settings_json(self) -> dict[str, Any]:
        """The retention, key and schema settings that are set, by their JSON keys."""
        return settings_json(*self.settings())

    def settings(self) -> Settings:
        """The retention, key and schema settings: one value per entry of
        topicfields.SETTINGS, in its order (None: not set)."""
        values: Settings = _SETTINGS_OF(self)
        return values

    def body(self, name: str) -> dict[str, Any]:
        """An observed topic's body: the policy exactly as set (None = unset)."""
        return {"name": name, LABELS.proto: dict(self.labels),
                STORAGE_POLICY.proto: policy_json(self.policy), **self.settings_json()}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TopicShape:
        """A topic body (plan `before`/`after`, a request, an observed topic)."""
        return cls(
            dict(body.get(LABELS.proto) or {}),
            StoragePolicy.from_json(body.get(STORAGE_POLICY.proto)),
            *(f.from_json(body.get(f.proto) or None) for f in SETTINGS),
        )




def settings_json(*values: Any) -> dict[str, Any]:
    """The fields of a topic besides labels and the storage policy (`values`: one per
    entry of topicfields.SETTINGS) that are set, as the plan and the requests write
    them (a field not set has no key)."""
    out: dict[str, Any] = {}
    for entry, value in zip(SETTINGS, values, strict=True):
        if value is not None:
            out[entry.proto] = entry.to_json(value)
    return out


def shape_json(labels: Mapping[str, str], policy: StoragePolicy | None) -> dict[str, Any]:
    """`TopicShape(labels, policy).to_json()` without the shape (the plan writes one
    for every declared topic); `labels` (a dict) is used as given, not copied."""
    return {LABELS.proto: labels, STORAGE_POLICY.proto: policy_json(norm_policy(policy))}


def is_managed_key(key: str, declared: Mapping[str, str]) -> bool:
    """A declared key, or a reserved one other than the plan marker: apply stamps the
    marker on each topic it changes, and no plan compares, sets or removes it."""
    return key in declared or (is_reserved(key) and key != PLAN_LABEL)


def request_body(
    name: str, labels: Mapping[str, str] | None, policy: StoragePolicy | None
) -> dict[str, Any]:
    """A CreateTopic/UpdateTopic body: only the fields given (None = not sent)."""
    body: dict[str, Any] = {"name": name}
    if labels is not None:
        body[LABELS.proto] = dict(labels)
    if policy is not None:
        body[STORAGE_POLICY.proto] = policy.to_json()
    return body


def request_shape(body: Mapping[str, Any]) -> tuple[dict[str, str] | None, StoragePolicy | None]:
    """Inverse of request_body: (labels or None when not sent, policy or None); the
    other fields a request sends are read by `TopicShape.from_json`."""
    labels = body.get(LABELS.proto)
    return (None if labels is None else dict(labels)), StoragePolicy.from_json(
        body.get(STORAGE_POLICY.proto)
    )


# (the row's notes, transforms, source) -> the shape's, by identity: a row's are one
# object for each distinct value (backends/topicproto.py `_extras`, and marshal keeps
# them shared), so each is made canonical once. Held, so that an id stays its
# object's; bounded, emptied when full.
_Extras = tuple[Any, Any, tuple[str, ...]]
_EXTRAS_SEEN: dict[tuple[int, int, int], tuple[Any, Any, Any, _Extras]] = {}


def _canonical_extras(
    unmanaged: Sequence[str], transforms: Any, ingestion: Any
) -> _Extras:
    """A live topic's transforms and source as the table holds them, and its notes."""
    key = (id(unmanaged), id(transforms), id(ingestion))
    seen = _EXTRAS_SEEN.get(key)
    if seen is not None and seen[0] is unmanaged and seen[1] is transforms and (
            seen[2] is ingestion):
        return seen[3]
    made = (TRANSFORMS.from_json(transforms), INGESTION.from_json(ingestion),
            tuple(unmanaged))
    if len(_EXTRAS_SEEN) >= MEMO_ENTRIES:
        _EXTRAS_SEEN.clear()
    _EXTRAS_SEEN[key] = (unmanaged, transforms, ingestion, made)
    return made


class ObservedTopic:
    """A live topic: `body` is the managed shape as JSON and `shape` the same as a
    TopicShape (either is worked out from the other when first asked for); `raw` is
    every field as JSON, for fingerprints and for showing what is kept. A backend that
    has the topic's wire form gives `digest` (sha256 of it, every field) instead of
    `raw`: converting every topic of a large plan to JSON only to hash them would be
    most of the plan's time. `retention_seconds`: how long the topic keeps messages,
    acknowledged or not (0: it keeps none; `residency` counts what it retains).

    The shape's labels are sorted by key (a plan shows them so, without copying them
    again for each topic): `of_shape` callers give them sorted, and a shape worked out
    from `body` sorts them.

    `from_row` builds it from its fields as plain values, read from the wire type in
    one place (backends/topicproto.py: `topic_row`), which the plan's read-ahead
    process sends as they are: a field added here is added there and to `from_row`.

    A plain class with slots, not a dataclass: a plan makes one per live topic, and a
    frozen dataclass's constructor is slower. Never changed once made."""

    __slots__ = ("_body", "_shape", "digest", "name", "raw", "retention_seconds")

    def __init__(
        self,
        name: str,
        body: dict[str, Any] | None = None,
        raw: dict[str, Any] | None = None,
        digest: str = "",
        *,
        shape: TopicShape | None = None,
        retention_seconds: int = 0,
    ) -> None:
        if body is None and shape is None:
            raise TypeError("ObservedTopic needs its body or its shape")
        self.name = name  # projects/P/topics/T
        self.raw: dict[str, Any] = raw if raw is not None else {}
        self.digest = digest
        self.retention_seconds = retention_seconds
        self._body = body
        self._shape = shape

    @classmethod
    def of_shape(
        cls, name: str, shape: TopicShape, digest: str, retention_seconds: int = 0
    ) -> ObservedTopic:
        """A live topic read from its wire form: the shape is known already (its
        labels sorted by key)."""
        return cls(name, digest=digest, shape=shape, retention_seconds=retention_seconds)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ObservedTopic:
        """The live topic of [name, labels sorted by key, [sorted regions,
        enforce_in_transit] or None, digest, retention_seconds, settings] (plain values:
        backends/topicproto.py reads them from the wire; settings: [retention as the
        service writes it, key name, [schema, encoding, first, last] or None, what is
        not managed, described, and in the REST JSON shape or None, the message
        transforms and the ingestion source in the REST JSON shape or None], or None
        when the topic has none of them)."""
        name, labels, regions, digest, retention, settings = row
        policy = None if regions is None else StoragePolicy(tuple(regions[0]), regions[1])
        if settings is None:
            shape = TopicShape(labels, policy)
        else:
            text, key, schema, unmanaged, unmanaged_json, transforms, ingestion = settings
            shape = TopicShape(
                labels, policy, text, key, None if schema is None else SchemaSettings(*schema),
                *_canonical_extras(unmanaged, transforms, ingestion), unmanaged_json,
            )
        return cls(name, digest=digest, shape=shape, retention_seconds=retention)

    @property
    def body(self) -> dict[str, Any]:
        if self._body is None:
            assert self._shape is not None
            self._body = self._shape.body(self.name)
        return self._body

    @property
    def shape(self) -> TopicShape:
        if self._shape is None:
            shape = TopicShape.from_json(self.body)
            self._shape = replace(shape, labels=dict(sorted(shape.labels.items())))
        return self._shape

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObservedTopic):
            return NotImplemented
        return (self.name, self.body, self.raw, self.digest, self.retention_seconds) == (
            other.name, other.body, other.raw, other.digest, other.retention_seconds
        )

    __hash__ = None  # type: ignore[assignment]  # mutable caches: not a dict key

    def __repr__(self) -> str:
        return f"ObservedTopic(name={self.name!r}, body={self.body!r}, digest={self.digest!r})"
