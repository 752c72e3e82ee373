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
from reconciler.messagepaths import Bounds, Call, path_findings
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
    policy = StoragePolicy.from_json((change.change.after or {}).get(STORAGE_POLICY.proto))
    if policy is None and live is not None:
        policy = live.shape.policy
    bounds = Bounds(
        region_set(policy), bool(policy and policy.enforce_in_transit),
        facts.transforms_disabled,
    )
    call = Call(True, live is not None, sets_t, sets_i)
    found = path_findings(
        desired.address, desired.project, transforms, ingestion,
        subscriptions_of(desired.address), bounds, call,
    )
    out = []
    for f in found:
        where, line, col = position(desired.file, desired.line, f.spec_path, None) or (
            desired.file or desired.address, desired.line, 1 if desired.line else 0
        )
        out.append(Diagnostic(
            where, line, col, f.severity, f.code, f.message, f.hint, topic=desired.address,
        ))
    return out
