"""What the read-ahead's two processes say to each other (plan/readahead.py).

The parent sends `{"project": P}` for each project as validation comes across it, then
`{"projects": [...]}`, the final list, and closes the pipe. The child answers once:
what the backend states it is (`BackendInfo`, as a dict), and for each project of
the final list its topics and effective org inputs, or the error reading them raised
(re-raised in the parent as the same class, message and hint: the user sees what
reading in one process would have shown).

The parent's messages are JSON lines; the answer is one `marshal` document of plain
values: the same interpreter runs both sides, it loads much faster than JSON for a
large tree (benchmarks/README.md), and it can carry only data.
"""

from __future__ import annotations

from typing import Any

from reconciler import errors
from reconciler.backends.base import ObservedTopic, OrgInputs
from reconciler.orgpolicy.model import Policy, PolicySpec
from reconciler.topic import StoragePolicy, TopicShape


def topic_of(row: list[Any]) -> ObservedTopic:
    """The live topic of a row the child made (backends/topicproto.py: topic_row_pb):
    [name, labels sorted by key, [sorted regions, enforce_in_transit] or None, digest]."""
    name, labels, regions, digest = row
    policy = None if regions is None else StoragePolicy(tuple(regions[0]), regions[1])
    return ObservedTopic.of_shape(name, TopicShape(labels, policy), digest)


def _spec_row(spec: PolicySpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    spec_dict: dict[str, Any] = Policy("projects/_/policies/_", spec).to_dict()["spec"]
    return spec_dict


def _spec_of(row: dict[str, Any] | None) -> PolicySpec | None:
    if row is None:
        return None
    return Policy.from_dict({"name": "projects/_/policies/_", "spec": row}).spec


def org_row(inputs: OrgInputs) -> dict[str, Any]:
    return {
        "resource_locations": _spec_row(inputs.resource_locations),
        "enforce_in_transit": _spec_row(inputs.enforce_in_transit),
        "source": inputs.source,
    }


def org_of(row: dict[str, Any]) -> OrgInputs:
    return OrgInputs(
        _spec_of(row["resource_locations"]), _spec_of(row["enforce_in_transit"]), row["source"]
    )


def error_row(exc: errors.ReconcileError) -> dict[str, Any]:
    return {
        "kind": type(exc).__name__,
        "message": exc.message,
        "hint": exc.hint,
        "status": getattr(exc, "status", None),
    }


def error_of(row: dict[str, Any]) -> errors.ReconcileError:
    kind = getattr(errors, str(row["kind"]), None)
    if not (isinstance(kind, type) and issubclass(kind, errors.ReconcileError)):
        kind = errors.BackendError
    if issubclass(kind, errors.BackendError):
        return kind(row["message"], hint=row["hint"], status=row["status"])
    return kind(row["message"], hint=row["hint"])
