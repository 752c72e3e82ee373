"""A custom constraint's verdict on a call: the one path from constraints and a
resource to judgements, which `validate`, `plan` and the local server take.

    judge(constraint, resource, method, before=None) -> Judgement | None
    ConstraintSet(constraints).objections(resource, method, before=None) -> [Judgement]

Both evaluate through `evaluate_all`, whose memo and batched calls live beside it
(condition.py); a set also remembers its objections by the values its conditions
read, when none of them reads the name (most resources share labels and regions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reconciler.orgpolicy.cel.condition import Condition, Outcome, condition_for, evaluate_all
from reconciler.orgpolicy.cel.reads import outermost
from reconciler.orgpolicy.cel.values import freeze_fields
from reconciler.orgpolicy.custom import TOPIC, CustomConstraint

_MEMO_LIMIT = 8192  # objections remembered per set


class Verdict(Enum):
    ALLOWED = "allowed"
    REFUSED = "refused"
    UNDECIDED = "undecided"  # the condition could not be evaluated


@dataclass(frozen=True)
class Judgement:
    """What the constraint says about one call. `outcome` is the condition on the
    resource as it will be after the call; for UPDATE, `before` is it on the resource
    as it is (the service refuses an update of a resource that already violates
    unless the update fixes it: the resource after the call decides either way)."""

    constraint: CustomConstraint
    method: str
    verdict: Verdict
    outcome: Outcome
    before: Outcome | None = None

    @property
    def already_violating(self) -> bool:
        return self.before is not None and _violates(self.constraint, self.before) is True


def _violates(constraint: CustomConstraint, outcome: Outcome) -> bool | None:
    """ALLOW: the resource must satisfy the condition; DENY: it is refused if it does."""
    if outcome.value is None:
        return None
    return outcome.value is False if constraint.action_type == "ALLOW" else outcome.value


def judge(
    constraint: CustomConstraint,
    resource: Mapping[str, Any],
    method: str,
    before: Mapping[str, Any] | None = None,
    *,
    resource_type: str = TOPIC,
    compiled: Callable[[CustomConstraint], Condition] = condition_for,
    keys: dict[tuple[str, ...], Any] | None = None,
) -> Judgement | None:
    """The constraint's verdict on CREATE or UPDATE of `resource` (the REST JSON dict
    as it will be after the call; `before`: as it is, for UPDATE); None when the
    constraint does not restrict that method on that resource type. `keys`: see
    `Condition.evaluate` (for `resource`, when several constraints judge it)."""
    if not constraint.applies_to(resource_type, method):
        return None
    found = _judgements((constraint,), (compiled(constraint),), resource, method, before, keys)
    return found[0]


def _judgements(
    constraints: Sequence[CustomConstraint], conditions: Sequence[Condition],
    resource: Mapping[str, Any], method: str, before: Mapping[str, Any] | None,
    keys: dict[tuple[str, ...], Any] | None, objections_only: bool = False,
) -> list[Judgement]:
    """The one way from conditions to judgements: the conditions evaluated together
    on `resource` (`evaluate_all`), each outcome judged by its constraint (all, or
    only those that do not allow the call)."""
    outcomes = evaluate_all(conditions, resource, keys)
    out = []
    for constraint, condition, outcome in zip(constraints, conditions, outcomes, strict=True):
        violates = _violates(constraint, outcome)
        if objections_only and violates is False:
            continue
        prior = condition.evaluate(before) if before is not None and method == "UPDATE" else None
        verdict = (
            Verdict.UNDECIDED if violates is None
            else Verdict.REFUSED if violates else Verdict.ALLOWED
        )
        out.append(Judgement(constraint, method, verdict, outcome, prior))
    return out


@dataclass
class _Applying:
    """The constraints of a set that restrict one method on one resource type, their
    conditions, and, when none of them reads the name, what they read (the memo's
    key) and the objections remembered by it."""

    constraints: tuple[CustomConstraint, ...]
    conditions: tuple[Condition, ...]
    reads: tuple[str, ...] | None
    said: dict[Any, list[Judgement]] = field(default_factory=dict)


class ConstraintSet:
    """Constraints judged together on each of many resources (validate's topics):
    their conditions compiled once, and on each resource those whose outcome is not
    remembered evaluated in one call of the library (`evaluate_all`). The verdicts
    are `judge`'s; the objections of conditions that do not read the name are
    remembered by the values they read (most topics share labels and regions)."""

    def __init__(
        self, constraints: Iterable[CustomConstraint],
        compiled: Callable[[CustomConstraint], Condition] = condition_for,
    ) -> None:
        self.constraints = tuple(constraints)
        self._compiled = compiled
        self._applying: dict[tuple[str, str], _Applying] = {}  # by (resource type, method)

    def objections(
        self,
        resource: Mapping[str, Any],
        method: str,
        before: Mapping[str, Any] | None = None,
        *,
        resource_type: str = TOPIC,
        keys: dict[tuple[str, ...], Any] | None = None,
    ) -> list[Judgement]:
        """The judgements, in the set's order, of the constraints that restrict
        `method` on `resource_type` and do not allow the call (refused, or
        undecided); the arguments are `judge`'s."""
        applying = self._applying.get((resource_type, method))
        if applying is None:
            chosen = tuple(c for c in self.constraints if c.applies_to(resource_type, method))
            compiled = tuple(self._compiled(c) for c in chosen)
            shared = not any(c.per_resource for c in compiled)
            reads = outermost(r for c in compiled for r in c.reads) if shared else None
            applying = self._applying[(resource_type, method)] = _Applying(
                chosen, compiled, reads
            )
        if not applying.conditions:
            return []
        if applying.reads is None or before is not None:
            return _judgements(applying.constraints, applying.conditions, resource, method,
                               before, keys, objections_only=True)
        said = applying.said
        signature = freeze_fields(resource, applying.reads)
        found = said.get(signature)
        if found is None:
            found = _judgements(applying.constraints, applying.conditions, resource, method,
                                None, keys, objections_only=True)
            if len(said) >= _MEMO_LIMIT:
                said.clear()
            said[signature] = found
        return found
