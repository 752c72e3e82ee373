"""Where each declared topic's message data goes, as a plan finds it: the rules of
reconciler/messagepaths.py applied to the topic as the plan's call leaves it, its
live subscriptions and the project's effective org policy, each finding at the
field's line (spec/positions.py places it, as the org-policy verdicts are placed).

    path_verdicts(desired, facts, live, change, subs) -> [Diagnostic]
        an error: the service would refuse the call (the topic is not planned)

A topic that neither declares nor has transforms or an ingestion source costs one
look at each (the common case of a large plan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler.backends.base import ObservedSubscription, ObservedTopic
from reconciler.diagnostics import Diagnostic
from reconciler.memo import MEMO_ENTRIES
from reconciler.messagepaths import Bounds, Call, for_topic, judged_findings
from reconciler.plan.model import ResourceChange
from reconciler.spec.desired import DesiredTopic
from reconciler.spec.orgrules import OrgFacts
from reconciler.spec.positions import position
from reconciler.topic import StoragePolicy, TopicShape, region_set
from reconciler.topicfields import INGESTION, STORAGE_POLICY, TRANSFORMS


def live_extras(
    shape: TopicShape,
) -> tuple[Sequence[Mapping[str, Any]] | None, Mapping[str, Any] | None]:
    """A live topic's transforms and ingestion source in their REST JSON shape (None:
    it has none); the source with the service's `state`, which the shape leaves out
    (output-only) and the REST JSON read of the topic keeps."""
    ingestion = shape.ingestion
    if ingestion is not None and shape.unmanaged_json:
        ingestion = shape.unmanaged_json.get(INGESTION.rest, ingestion)
    return shape.message_transforms or None, ingestion or None


def path_verdicts(
    desired: DesiredTopic,
    facts: OrgFacts,
    live: ObservedTopic | None,
    change: ResourceChange,
    subscriptions_of: Callable[[str], Sequence[ObservedSubscription] | None],
) -> list[Diagnostic]:
    """The findings on `desired` and the call `change` makes (a create when `live`
    is None); `subscriptions_of(address)`: a topic's subscriptions (None: unknown),
    asked only of a topic with transforms or a source."""
    declared_t, declared_i = desired.message_transforms, desired.ingestion
    shape = live.shape if live is not None else None
    if declared_t is None and declared_i is None and (
            shape is None or (shape.message_transforms is None and shape.ingestion is None)):
        return []  # the common case: nothing sends or takes message data elsewhere
    had_t, had_i = live_extras(shape) if shape is not None else (None, None)
    if not (declared_t or declared_i or had_t or had_i):
        return []
    transforms = declared_t if declared_t is not None else had_t
    ingestion = declared_i if declared_i is not None else had_i
    mask = change.update_mask
    if live is None:
        sets_t, sets_i = bool(transforms), bool(ingestion)
    else:  # what the diff compares (the table's `same`; the live shape has no `state`)
        assert shape is not None
        sets_t = TRANSFORMS.proto in mask or (
            declared_t is not None and not TRANSFORMS.same(declared_t, shape.message_transforms))
        sets_i = INGESTION.proto in mask or (
            declared_i is not None and not INGESTION.same(declared_i, shape.ingestion))
    after = (change.change.after or {}).get(STORAGE_POLICY.proto)
    if after:
        bounds = _bounds_after(after, facts.transforms_disabled)
    else:
        bounds = _bounds(live.shape.policy if live is not None else None,
                         facts.transforms_disabled)
    call = _CALLS[True, live is not None, sets_t, sets_i]
    address = desired.address
    found = judged_findings(
        desired.project, transforms, ingestion, subscriptions_of(address), bounds, call
    )
    out = []
    for f in found:
        where, line, col = position(desired.file, desired.line, f.spec_path, None) or (
            desired.file or address, desired.line, 1 if desired.line else 0
        )
        out.append(Diagnostic(
            where, line, col, f.severity, f.code, for_topic(f.message, address),
            f.hint and for_topic(f.hint, address), topic=address,
        ))
    return out


def _bounds(policy: StoragePolicy | None, transforms_disabled: bool) -> Bounds:
    return Bounds(region_set(policy), bool(policy and policy.enforce_in_transit),
                  transforms_disabled)


# A change's `after` policy (one read-only object for each distinct policy,
# plan/topicstate.py) -> the bounds it gives, by identity; held, bounded.
_BOUNDS_SEEN: dict[tuple[int, bool], tuple[Any, Bounds]] = {}


def _bounds_after(after: Mapping[str, Any], transforms_disabled: bool) -> Bounds:
    """The bounds of the policy the call leaves the topic with."""
    key = (id(after), transforms_disabled)
    seen = _BOUNDS_SEEN.get(key)
    if seen is None or seen[0] is not after:
        if len(_BOUNDS_SEEN) >= MEMO_ENTRIES:
            _BOUNDS_SEEN.clear()
        seen = _BOUNDS_SEEN[key] = (
            after, _bounds(StoragePolicy.from_json(after), transforms_disabled))
    return seen[1]


_CALLS = {
    (True, exists, sets_t, sets_i): Call(True, exists, sets_t, sets_i)
    for exists in (False, True) for sets_t in (False, True) for sets_i in (False, True)
}
