"""`google.cloud.orgpolicy.v2.OrgPolicy`: policies stored as protos, evaluated by
`reconciler.orgpolicy` (the same evaluator the offline validator uses), so that the
server and `reconcile validate` can never disagree about what a policy allows."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import policy_parent, split_policy_name
from reconciler.localserver.api.paging import token_offset
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import ServiceError, already_exists, invalid, not_found
from reconciler.localserver.pubsub.state import ServerState, policy_from_proto, policy_to_proto
from reconciler.orgpolicy.model import PolicyFormatError

DEFAULT_PAGE_SIZE = 100


def stamp(policy: Any) -> Any:
    """Set update_time and a content etag, as the service does on every write."""
    out = protos.Policy()
    out.CopyFrom(policy)
    out.ClearField("etag")
    if out.HasField("spec"):
        out.spec.ClearField("etag")
        out.spec.update_time.FromNanoseconds(time.time_ns())
    digest = hashlib.sha256(out.SerializeToString(deterministic=True)).digest()[:12]
    out.etag = base64.urlsafe_b64encode(digest).decode("ascii")
    if out.HasField("spec"):
        out.spec.etag = out.etag
    return out


def _validated(policy: Any) -> None:
    try:
        policy_from_proto(policy)
    except PolicyFormatError as exc:
        raise invalid(f"Invalid policy {policy.name}: {exc}") from None


def _check_etag(given: str, current: Any) -> None:
    if given and given != current.etag:
        raise ServiceError(
            grpc.StatusCode.ABORTED,
            f"The etag {given!r} does not match the current etag of {current.name}; "
            "read the policy again and retry.",
        )


class OrgPolicyService:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    @staticmethod
    def _canonical(name: str) -> str:
        parent, constraint = split_policy_name(name)
        return f"{parent}/policies/{constraint}"

    def get_policy(self, request: Any, call: CallInfo) -> Any:
        name = self._canonical(request.name)
        policy = self.state.get_policy(name)
        if policy is None:
            raise not_found(f"Policy {name} not found.")
        return policy

    def get_effective_policy(self, request: Any, call: CallInfo) -> Any:
        parent, constraint = split_policy_name(request.name)
        with self.state.locked():
            effective = self.state.policy_store.effective_policy(constraint, parent)
        return policy_to_proto(effective)

    def list_policies(self, request: Any, call: CallInfo) -> Any:
        parent = policy_parent(request.parent)
        if request.page_size < 0:
            raise invalid("page_size must not be negative.")
        size = request.page_size or DEFAULT_PAGE_SIZE
        policies = self.state.list_policies(parent)
        start = 0
        if request.page_token:
            start = token_offset(request.page_token, request.page_token)
        page = policies[start : start + size]
        response = protos.ListPoliciesResponse(policies=page)
        if start + size < len(policies):
            response.next_page_token = str(start + size)
        return response

    def create_policy(self, request: Any, call: CallInfo) -> Any:
        parent = policy_parent(request.parent)
        name = self._canonical(request.policy.name)
        if not name.startswith(parent + "/policies/"):
            raise invalid(f"Policy name {request.policy.name} is not under parent {parent}.")
        given = protos.Policy()
        given.CopyFrom(request.policy)
        given.name = name
        _validated(given)

        def change(current: Any | None) -> Any:
            if current is not None:
                raise already_exists(f"Policy {name} already exists.")
            return stamp(given)

        _, after = self.state.write_policy(name, change)
        return after

    def update_policy(self, request: Any, call: CallInfo) -> Any:
        name = self._canonical(request.policy.name)
        paths = list(request.update_mask.paths) if request.HasField("update_mask") else []
        for path in paths:
            if path not in ("spec", "dry_run_spec", "alternate"):
                raise invalid(f"Invalid update_mask path {path!r}: use spec or dry_run_spec.")
        given = protos.Policy()
        given.CopyFrom(request.policy)
        given.name = name
        _validated(given)

        def change(current: Any | None) -> Any:
            if current is None:
                raise not_found(f"Policy {name} not found.")
            _check_etag(request.policy.etag, current)
            if not paths:
                return stamp(given)
            updated = protos.Policy()
            updated.CopyFrom(current)
            for path in paths:
                if given.HasField(path):
                    getattr(updated, path).CopyFrom(getattr(given, path))
                else:
                    updated.ClearField(path)
            return stamp(updated)

        _, after = self.state.write_policy(name, change)
        return after

    def delete_policy(self, request: Any, call: CallInfo) -> Any:
        name = self._canonical(request.name)

        def change(current: Any | None) -> None:
            if current is None:
                raise not_found(f"Policy {name} not found.")
            _check_etag(request.etag, current)
            return None

        self.state.write_policy(name, change)
        return protos.Empty()

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("GetPolicy", self.get_policy, p.GetPolicyRequest, p.Policy, lambda r: r.name),
            Rpc(
                "GetEffectivePolicy",
                self.get_effective_policy,
                p.GetEffectivePolicyRequest,
                p.Policy,
                lambda r: r.name,
            ),
            Rpc(
                "ListPolicies",
                self.list_policies,
                p.ListPoliciesRequest,
                p.ListPoliciesResponse,
                lambda r: r.parent,
            ),
            Rpc(
                "CreatePolicy",
                self.create_policy,
                p.CreatePolicyRequest,
                p.Policy,
                lambda r: r.policy.name,
            ),
            Rpc(
                "UpdatePolicy",
                self.update_policy,
                p.UpdatePolicyRequest,
                p.Policy,
                lambda r: r.policy.name,
            ),
            Rpc(
                "DeletePolicy",
                self.delete_policy,
                p.DeletePolicyRequest,
                p.Empty,
                lambda r: r.name,
            ),
        ]
