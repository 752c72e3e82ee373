"""What the `Defaults` documents already applying where `reconcile import` writes give
each topic it writes, and the explicit values that keep an imported topic as it is live.

A Defaults document applies to every topic of its directory and below (spec/defaults.py;
there is no other scope), with the merge rules of spec/topics.py and spec/settings.py:
labels merge (outer documents first, the topic's own keys last), every other field is
the topic's own value, else the nearest document's. Import writes the live topic's own
values, so a Defaults value is harmless wherever the topic states that field itself.
Where it does not:

- a `publishers` block: the topic gets `publishers: {}` (its own, empty block: no
  hedging or endpoint label, as the live topic has none);
- a storage policy: `inherit` when that is what the topic has (the org policy computes
  exactly the live one, or none for a topic without one);
- a label key, a retention, a key name or schema settings the live topic lacks: the spec
  format has no way to say "not this inherited value" (a label cannot be removed, a
  setting cannot be cleared), so these are `Conflict`s, and the import writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.spec.documents import DefaultsDoc, SchemaSettingsSpec, StoragePolicySpec
from reconciler.spec.tree import Located
from reconciler.topicfields import FIELDS, HEDGING, NEAREST, STORAGE_POLICY

Doc = dict[str, Any]
# The fields import writes that a Defaults document gives whole (nearest wins), in the
# spec's words and the record's attribute names.
WHOLE_FIELDS = tuple((f.spec, f.attr) for f in FIELDS if f.inherit == NEAREST)
SHOWN_TOPICS = 5  # topic names listed per conflict, the rest counted


@dataclass(frozen=True)
class Given:
    """One value a Defaults document gives: as a message shows it, and where it is
    written (`FILE:LINE`) and which directory it applies to."""

    shown: str
    where: str
    scope: str


@dataclass(frozen=True)
class Inherited:
    """What the applying Defaults documents give a topic that does not say otherwise."""

    labels: Mapping[str, Given] = field(default_factory=dict)
    fields: Mapping[str, Given] = field(default_factory=dict)  # spec key -> value

    def __bool__(self) -> bool:
        return bool(self.labels or self.fields)


@dataclass
class Conflict:
    """A Defaults value that would change topics whose spec cannot refuse it."""

    given: Given
    what: str  # `label team` / `messageRetentionDuration`
    topics: list[str] = field(default_factory=list)  # full topic names

    def message(self) -> str:
        names = ", ".join(self.topics[:SHOWN_TOPICS])
        if len(self.topics) > SHOWN_TOPICS:
            names += f" and {len(self.topics) - SHOWN_TOPICS} more"
        live = "the live topic" if len(self.topics) == 1 else "the live topics"
        verb = "has" if len(self.topics) == 1 else "have"
        return (
            f"{self.given.where}: gives {self.given.shown} to every topic in "
            f"{self.given.scope} and below; {live} {names} {verb} no {self.what}"
        )


def inherited_values(chain: Sequence[Located[DefaultsDoc]]) -> Inherited:
    """What `chain` (the Defaults documents applying to a directory, nearest first)
    gives a topic there."""
    labels: dict[str, Given] = {}
    for located in reversed(chain):  # outermost first: nearer documents win
        for key, value in located.model.spec.labels.items():
            labels[key] = _given(located, ("spec", "labels", key), f"label {key}={value!r}")
    fields: dict[str, Given] = {}
    for key, attr in WHOLE_FIELDS:
        for located in chain:
            value = getattr(located.model.spec, attr)
            if value is not None:
                fields[key] = _given(located, ("spec", key), f"{key} {_shown(value)}")
                break
    return Inherited(labels, fields)


def keep_live(
    spec: Doc, inherited: Inherited, inherit_matches: bool, topic: str,
    conflicts: dict[tuple[str, str], Conflict],
) -> None:
    """Make the imported topic's `spec` (what the live topic has, as import writes it)
    keep its values under `inherited`: write the explicit values that refuse an inherited
    one, and add to `conflicts` (by where and what) those no spec can refuse.
    `inherit_matches`: `messageStoragePolicy: inherit` gives the topic its live policy."""
    own_labels = spec.get("labels", {})
    for key, given in inherited.labels.items():
        if key not in own_labels:
            _conflict(conflicts, given, f"label {key}", topic)
    for key, given in inherited.fields.items():
        if key in spec:
            continue
        if key == HEDGING.spec:
            spec[key] = {}
        elif key == STORAGE_POLICY.spec and inherit_matches:
            spec[key] = "inherit"
        else:
            _conflict(conflicts, given, key, topic)


def _conflict(
    conflicts: dict[tuple[str, str], Conflict], given: Given, what: str, topic: str
) -> None:
    conflicts.setdefault((given.where, what), Conflict(given, what)).topics.append(topic)


def _given(located: Located[DefaultsDoc], path: tuple[str, ...], shown: str) -> Given:
    line = located.doc.key_mark(path).line
    return Given(shown, f"{located.path}:{line}", f"{located.directory}/")


def _shown(value: object) -> str:
    """A Defaults value as a message names it."""
    if isinstance(value, StoragePolicySpec):
        regions = ", ".join(value.allowed_persistence_regions)
        return f"(allowedPersistenceRegions [{regions}])"
    if isinstance(value, SchemaSettingsSpec):
        return f"(schema {value.schema_}, encoding {value.encoding})"
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # messageTransforms
        return f"({len(value)} message transform(s))"
    return "(a publishers block)"
