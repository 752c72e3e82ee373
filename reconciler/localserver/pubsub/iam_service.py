"""`google.iam.v1.IAMPolicy`, the IAM mixin the Publisher, Subscriber and Schema
clients call (`get_iam_policy`, `set_iam_policy`, `test_iam_permissions`) on topics,
subscriptions, snapshots and schemas. The rules are `iam`'s; the policies are kept
in the server state (journaled, and dropped with their resource).

Policies are stored, never enforced: every caller is allowed everything, and
TestIamPermissions answers every permission asked that the resource type has.
"""

from __future__ import annotations

from typing import Any

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_child, parse_topic
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import not_found
from reconciler.localserver.pubsub import iam
from reconciler.localserver.pubsub.state import ServerState


class IamService:
    """Handlers over `ServerState`'s IAM policies."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.etags = iam.Etags()

    @staticmethod
    def _collection(name: str) -> str:
        """The resource's collection, its name checked as the resource's own RPCs do."""
        collection = iam.collection_of(name)
        if collection == "topics":
            parse_topic(name)
        else:
            parse_child(collection, name)
        return collection

    @staticmethod
    def _missing(name: str) -> Exception:
        return not_found(f"Resource not found (resource={name.rsplit('/', 1)[-1]}).")

    def get_iam_policy(self, request: Any, call: CallInfo) -> Any:
        name = request.resource
        self._collection(name)
        iam.check_version(request.options.requested_policy_version, "requested_policy_version")
        policy = self.state.iam_policy(name)
        if not self.state.resource_exists(name):
            raise self._missing(name)
        return policy if policy is not None else iam.empty_policy()

    def set_iam_policy(self, request: Any, call: CallInfo) -> Any:
        name = request.resource
        collection = self._collection(name)
        given = request.policy
        iam.check_version(given.version, "policy version")
        fields = iam.mask_fields(request)

        def change(current: Any | None) -> Any:
            before = current if current is not None else iam.empty_policy()
            iam.check_etag(before, given, fields)
            policy = iam.merged(before, given, fields)
            iam.check_policy(policy, collection)
            policy.version = 1  # no conditions on Pub/Sub resources: version 1 says it all
            policy.etag = self.etags.next()
            return policy

        policy = self.state.write_iam_policy(name, change)
        if policy is None:
            raise self._missing(name)
        return policy

    def test_iam_permissions(self, request: Any, call: CallInfo) -> Any:
        name = request.resource
        collection = self._collection(name)
        granted = iam.tested_permissions(request.permissions, collection)
        if not self.state.resource_exists(name):
            granted = []  # as the service: no permissions on what does not exist
        return protos.TestIamPermissionsResponse(permissions=granted)

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc(
                "GetIamPolicy",
                self.get_iam_policy,
                p.GetIamPolicyRequest,
                p.IamPolicy,
                lambda r: r.resource,
            ),
            Rpc(
                "SetIamPolicy",
                self.set_iam_policy,
                p.SetIamPolicyRequest,
                p.IamPolicy,
                lambda r: r.resource,
            ),
            Rpc(
                "TestIamPermissions",
                self.test_iam_permissions,
                p.TestIamPermissionsRequest,
                p.TestIamPermissionsResponse,
                lambda r: r.resource,
            ),
        ]
