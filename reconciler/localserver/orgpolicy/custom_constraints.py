"""The Org Policy API's custom-constraint RPCs (`google.cloud.orgpolicy.v2.OrgPolicy`
CreateCustomConstraint, UpdateCustomConstraint, GetCustomConstraint,
ListCustomConstraints, DeleteCustomConstraint), over the server's `PolicyStore`,
whose `custom_constraints` the evaluator reads (`reconciler.orgpolicy.cel`).

A constraint is checked by the rules the snapshot file uses
(`reconciler.orgpolicy.custom`, and its condition compiled by the evaluator), so a
constraint the server accepts is one a snapshot may hold and the other way round;
a broken one is INVALID_ARGUMENT naming the rule. A condition that is not valid CEL
is refused; one that uses what the evaluator's CEL library does not have (a function,
a macro or a syntax the service's environment may have: `ConditionError.unsupported`)
is accepted, as the service may accept it, and a call it would judge is answered
FAILED_PRECONDITION saying the server cannot evaluate it
(`reconciler.localserver.pubsub.constraints`). Update replaces every field (the
service's documented behaviour), except that `resourceTypes` is immutable.
The constraints are kept in the server's state (journaled with the policies, so a
`--state-dir` server keeps them across a restart); the Pub/Sub services enforce them
(`reconciler.localserver.pubsub.constraints`).
"""

from __future__ import annotations

from typing import Any

from google.cloud.orgpolicy_v2.types import constraint as _constraint
from google.cloud.orgpolicy_v2.types import orgpolicy as _op
from google.protobuf import empty_pb2, json_format

from reconciler.localserver.api.paging import token_offset
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import already_exists, invalid, not_found
from reconciler.localserver.pubsub.state import ServerState
from reconciler.orgpolicy.cel import ConditionError, compile_condition
from reconciler.orgpolicy.custom import CustomConstraint, constraint_problems, name_problem

CustomConstraintPb: Any = _constraint.CustomConstraint.pb()
CreateRequest: Any = _op.CreateCustomConstraintRequest.pb()
UpdateRequest: Any = _op.UpdateCustomConstraintRequest.pb()
GetRequest: Any = _op.GetCustomConstraintRequest.pb()
ListRequest: Any = _op.ListCustomConstraintsRequest.pb()
ListResponse: Any = _op.ListCustomConstraintsResponse.pb()
DeleteRequest: Any = _op.DeleteCustomConstraintRequest.pb()
DEFAULT_PAGE_SIZE = 100


def _organization(parent: str) -> str:
    kind, _, number = parent.partition("/")
    if kind != "organizations" or not number.isdigit():
        raise invalid(f"Invalid parent {parent!r}: expected organizations/ORGANIZATION_ID.")
    return parent


def to_proto(constraint: CustomConstraint, update_ns: int = 0) -> Any:
    pb = json_format.ParseDict(constraint.to_dict(), CustomConstraintPb())
    if update_ns:
        pb.update_time.FromNanoseconds(update_ns)
    return pb


def from_proto(pb: Any) -> CustomConstraint:
    """The constraint a request carries, or INVALID_ARGUMENT naming the first rule it
    breaks (its CEL included)."""
    data = json_format.MessageToDict(pb)
    data.pop("updateTime", None)
    problems = constraint_problems(data)
    if problems:
        path, message = problems[0]
        where = ".".join(str(p) for p in path)
        raise invalid(f"Invalid custom constraint {pb.name}: {message}" + (
            f" (field {where})" if where else ""
        ))
    constraint = CustomConstraint.from_dict(data)
    try:
        compile_condition(constraint.condition)
    except ConditionError as exc:
        if exc.unsupported:
            return constraint
        raise invalid(
            f"Invalid custom constraint {pb.name}: the condition does not compile: "
            f"{exc.message} ({exc.place})"
        ) from None
    return constraint


class CustomConstraintService:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def _answer(self, constraint: CustomConstraint) -> Any:
        return to_proto(constraint, self.state.constraint_updated(constraint.name))

    def put(self, constraint: CustomConstraint) -> None:
        """Store a constraint without the API (seeding from a snapshot)."""
        self.state.write_custom_constraint(constraint.name, lambda _current: constraint)

    def create(self, request: Any, call: CallInfo) -> Any:
        parent = _organization(request.parent)
        constraint = from_proto(request.custom_constraint)
        if constraint.organization != parent:
            raise invalid(
                f"Custom constraint {constraint.name} is not under parent {parent}."
            )

        def change(current: CustomConstraint | None) -> CustomConstraint:
            if current is not None:
                raise already_exists(f"Custom constraint {constraint.name} already exists.")
            return constraint

        stored = self.state.write_custom_constraint(constraint.name, change)
        assert stored is not None  # `change` returns a constraint or raises
        return self._answer(stored)

    def update(self, request: Any, call: CallInfo) -> Any:
        constraint = from_proto(request.custom_constraint)

        def change(current: CustomConstraint | None) -> CustomConstraint:
            if current is None:
                raise not_found(f"Custom constraint {constraint.name} not found.")
            if current.resource_types != constraint.resource_types:
                raise invalid(
                    f"Custom constraint {constraint.name}: resourceTypes is immutable "
                    f"({', '.join(current.resource_types)}); delete and create it again."
                )
            return constraint

        stored = self.state.write_custom_constraint(constraint.name, change)
        assert stored is not None  # `change` returns a constraint or raises
        return self._answer(stored)

    def get(self, request: Any, call: CallInfo) -> Any:
        if problem := name_problem(request.name):
            raise invalid(problem)
        with self.state.locked():
            constraint = self.state.policy_store.custom_constraints.get(request.name)
            if constraint is None:
                raise not_found(f"Custom constraint {request.name} not found.")
            return self._answer(constraint)

    def list_constraints(self, request: Any, call: CallInfo) -> Any:
        parent = _organization(request.parent)
        if request.page_size < 0:
            raise invalid("page_size must not be negative.")
        size = request.page_size or DEFAULT_PAGE_SIZE
        start = 0
        if request.page_token:
            start = token_offset(request.page_token, request.page_token)
        with self.state.locked():
            stored = self.state.policy_store.custom_constraints
            mine = [c for n, c in sorted(stored.items()) if c.organization == parent]
            page = [self._answer(c) for c in mine[start : start + size]]
        response = ListResponse(custom_constraints=page)
        if start + size < len(mine):
            response.next_page_token = str(start + size)
        return response

    def delete(self, request: Any, call: CallInfo) -> Any:
        def change(current: CustomConstraint | None) -> None:
            if current is None:
                raise not_found(f"Custom constraint {request.name} not found.")

        self.state.write_custom_constraint(request.name, change)
        return empty_pb2.Empty()

    def rpcs(self) -> list[Rpc]:
        return [
            Rpc("CreateCustomConstraint", self.create, CreateRequest, CustomConstraintPb,
                lambda r: r.custom_constraint.name),
            Rpc("UpdateCustomConstraint", self.update, UpdateRequest, CustomConstraintPb,
                lambda r: r.custom_constraint.name),
            Rpc("GetCustomConstraint", self.get, GetRequest, CustomConstraintPb,
                lambda r: r.name),
            Rpc("ListCustomConstraints", self.list_constraints, ListRequest, ListResponse,
                lambda r: r.parent),
            Rpc("DeleteCustomConstraint", self.delete, DeleteRequest, empty_pb2.Empty,
                lambda r: r.name),
        ]
