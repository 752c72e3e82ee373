"""What the read-ahead's two processes say to each other (plan/readahead.py).

The parent sends `{"project": P}` for each project as validation comes across it, then
`{"projects": [...]}`, the final list. The child answers: what the backend states it
is (`BackendInfo`, as a dict), and for each project of the final list its topics
(backends/topicproto.py: `topic_row`), effective org inputs, a plan's ancestry
(`[parents, unavailable]`) and custom constraints on topics (those of the
organization the ancestry ends at, read right after it) and subscriptions, or the
error reading them raised
(re-raised in the parent as the same class, message and hint: the user sees what
reading in one process would have shown); for `residency` also the by-region gauges
it will ask for (`[query, stored]`). It then stays, for the parent's requests of
by-region gauges (`{"stored": [query_row, ...]}`, answered with `{"stored":
[stored_row, ...]}`): a plan's depend on the specs and the live topics, so the parent
asks once it has both, and never loads the Monitoring client. It leaves at the pipe's
end of file.

The parent's messages are JSON lines; each answer is one `marshal` document of plain
values after its length (8 bytes, big-endian): the same interpreter runs both sides,
it loads much faster than JSON for a large tree (benchmarks/README.md), and it can
carry only data.
"""

from __future__ import annotations

from typing import Any

from reconciler import errors
from reconciler.backends.base import (
    Ancestry,
    CustomConstraints,
    GaugeQuery,
    ObservedSubscription,
    OrgInputs,
    RegionStored,
    StoredMessages,
    SubscriptionListing,
)
from reconciler.orgpolicy.custom import CustomConstraint
from reconciler.orgpolicy.model import Policy, PolicySpec

FRAME_HEADER = 8  # an answer's length, big-endian, before the answer


def query_row(query: GaugeQuery) -> list[Any]:
    project, scope, ids, retained = query
    return [project, scope, None if ids is None else list(ids), retained]


def query_of(row: list[Any]) -> GaugeQuery:
    project, scope, ids, retained = row
    return GaugeQuery(str(project), scope, None if ids is None else tuple(ids), bool(retained))


def _spec_row(spec: PolicySpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    spec_dict: dict[str, Any] = Policy("projects/_/policies/_", spec).to_dict()["spec"]
    return spec_dict


def _spec_of(row: dict[str, Any] | None) -> PolicySpec | None:
    if row is None:
        return None
    return Policy.from_dict({"name": "projects/_/policies/_", "spec": row}).spec


_SPECS = (
    "resource_locations", "enforce_in_transit", "restrict_non_cmek", "key_projects",
    "disable_topic_transforms",
)


def org_row(inputs: OrgInputs) -> dict[str, Any]:
    row: dict[str, Any] = {name: _spec_row(getattr(inputs, name)) for name in _SPECS}
    row["source"] = inputs.source
    return row


def org_of(row: dict[str, Any]) -> OrgInputs:
    return OrgInputs(source=row["source"], **{name: _spec_of(row[name]) for name in _SPECS})


def custom_row(constraints: CustomConstraints) -> list[Any]:
    """Each constraint in the shape gcloud takes, with its enforcement."""
    return [[constraint.to_dict(), mode] for constraint, mode in constraints]


def custom_of(row: list[Any]) -> CustomConstraints:
    return tuple((CustomConstraint.from_dict(data), mode) for data, mode in row)


def ancestry_row(ancestry: Ancestry) -> list[Any]:
    return [list(ancestry.parents), ancestry.unavailable]


def ancestry_of(row: list[Any]) -> Ancestry:
    return Ancestry(tuple(row[0]), row[1])


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


def subscriptions_row(listing: SubscriptionListing) -> dict[str, Any]:
    return {
        "rows": [tuple(s) for s in listing.subscriptions],  # marshal takes no subclass
        "unavailable": listing.unavailable,
        "calls": listing.calls,
    }


def subscriptions_of(row: dict[str, Any] | None) -> SubscriptionListing:
    if row is None:
        return SubscriptionListing(unavailable="subscriptions were not read ahead")
    return SubscriptionListing(
        tuple(map(ObservedSubscription._make, row["rows"])),
        unavailable=row["unavailable"],
        calls=row["calls"],
    )


def _regions_row(figures: dict[str, dict[str, RegionStored]]) -> dict[str, Any]:
    return {
        rid: [[r.region, r.messages, r.bytes, r.oldest_age_seconds] for r in regions.values()]
        for rid, regions in figures.items()
    }


def _regions_of(row: dict[str, Any]) -> dict[str, dict[str, RegionStored]]:
    return {rid: {r[0]: RegionStored(*r) for r in regions} for rid, regions in row.items()}


def stored_row(stored: StoredMessages) -> dict[str, Any]:
    return {
        "unacked": _regions_row(stored.unacked),
        "retained": _regions_row(stored.retained),
        "unavailable": stored.unavailable,
        "calls": stored.calls,
    }


def stored_of(row: dict[str, Any]) -> StoredMessages:
    return StoredMessages(
        _regions_of(row["unacked"]),
        _regions_of(row["retained"]),
        unavailable=row["unavailable"],
        calls=row["calls"],
    )
