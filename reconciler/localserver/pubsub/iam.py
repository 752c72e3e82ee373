"""IAM policies on Pub/Sub resources (topics, subscriptions, snapshots, schemas): the
rules a policy obeys and how SetIamPolicy and TestIamPermissions answer, as the
service documents them. Policies are stored and read back; none is enforced (every
caller may do everything), which the docs say.

Where each rule comes from:

- google/iam/v1/policy.proto and iam_policy.proto: a binding has a role and at least
  one principal; a policy refers to at most 1,500 principals, at most 250 of them
  groups (each occurrence counts); versions 0, 1 and 3; SetIamPolicy's update mask
  defaults to `bindings, etag`; GetIamPolicy of a resource without a policy is an
  empty policy; TestIamPermissions of a resource that does not exist answers no
  permissions (not NOT_FOUND); wildcards (`*`, `pubsub.*`) are not permissions.
- Pub/Sub's access-control page: the permissions of each resource type and where
  each predefined role can be granted (Publisher on topics; Subscriber on topics,
  subscriptions and snapshots; Admin, Editor and Viewer on all four).
- IAM's list of resource types that accept conditional role bindings does not name
  Pub/Sub: a binding with a condition is refused.
- A stale etag is ABORTED (HTTP 409) with IAM's sentence; the empty policy's etag is
  `ACAB` (what the service answers for a topic without a policy).
- An unknown permission is INVALID_ARGUMENT (the service answers 400). Nothing
  public says what it answers for a Pub/Sub permission of another resource type
  (`pubsub.subscriptions.consume` on a topic); this server refuses it the same way.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError, invalid

COLLECTIONS = ("topics", "subscriptions", "snapshots", "schemas")

# Permissions checked on the resource itself (those checked on its project, such as
# pubsub.topics.create and .list, are not permissions of the resource).
_TAGS = ("createTagBinding", "deleteTagBinding", "listEffectiveTags", "listTagBindings")
PERMISSIONS: dict[str, tuple[str, ...]] = {
    "topics": (
        "attachSubscription", "delete", "detachSubscription", "get", "getIamPolicy",
        "publish", "setIamPolicy", "update", "updateTag", *_TAGS,
    ),
    "subscriptions": (
        "consume", "delete", "get", "getIamPolicy", "setIamPolicy", "update", *_TAGS,
    ),
    "snapshots": ("delete", "get", "getIamPolicy", "seek", "setIamPolicy", "update", *_TAGS),
    "schemas": (
        "attach", "commit", "delete", "get", "getIamPolicy", "listRevisions", "rollback",
        "setIamPolicy",
    ),
}
_ALL_FOUR = frozenset(COLLECTIONS)
# Predefined roles and the resource types they can be granted on.
ROLES: dict[str, frozenset[str]] = {
    "roles/pubsub.admin": _ALL_FOUR,
    "roles/pubsub.editor": _ALL_FOUR,
    "roles/pubsub.viewer": _ALL_FOUR,
    "roles/pubsub.publisher": frozenset({"topics"}),
    "roles/pubsub.subscriber": frozenset({"topics", "subscriptions", "snapshots"}),
    "roles/owner": _ALL_FOUR,
    "roles/editor": _ALL_FOUR,
    "roles/viewer": _ALL_FOUR,
}
_CUSTOM_ROLE = re.compile(r"^(projects|organizations)/[^/]+/roles/[A-Za-z0-9_.]{3,64}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_DOMAIN = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
_EMAIL_KINDS = ("user:", "serviceAccount:", "group:")
MAX_PRINCIPALS = 1500
MAX_GROUPS = 250
VERSIONS = (0, 1, 3)
MASK_PATHS = {"bindings": "bindings", "etag": "etag", "version": "version",
              "audit_configs": "audit_configs", "auditConfigs": "audit_configs"}
DEFAULT_MASK = ("bindings", "etag")
EMPTY_ETAG = b"\x00\x20\x01"  # base64 "ACAB"
STALE_ETAG = (
    "There were concurrent policy changes. Please retry the whole read-modify-write with "
    "exponential backoff."
)


def empty_policy() -> Any:
    """The policy of a resource that never had one set."""
    return protos.IamPolicy(etag=EMPTY_ETAG)


def collection_of(name: str) -> str:
    """"topics" for "projects/P/topics/T" (one of `COLLECTIONS`); INVALID_ARGUMENT for
    a name that is no Pub/Sub resource."""
    parts = name.split("/")
    if len(parts) == 2 and parts[0] == "projects":
        raise invalid(
            "This service cannot be used to manage the permissions of resources of type "
            f"project ({name}); Pub/Sub manages the policies of topics, subscriptions, "
            "snapshots and schemas."
        )
    if len(parts) != 4 or parts[0] != "projects" or parts[2] not in COLLECTIONS:
        raise invalid(
            f"Invalid resource {name!r}: expected projects/P/topics/T, "
            "projects/P/subscriptions/S, projects/P/snapshots/S or projects/P/schemas/S."
        )
    return parts[2]


def check_version(version: int, what: str) -> None:
    if version not in VERSIONS:
        raise invalid(f"Invalid {what} {version}: the policy versions are 0, 1 and 3.")


def mask_fields(request: Any) -> tuple[str, ...]:
    """The policy fields a SetIamPolicy request changes (its update mask, or the
    default `bindings, etag`)."""
    if not request.HasField("update_mask") or not request.update_mask.paths:
        return DEFAULT_MASK
    fields = []
    for path in request.update_mask.paths:
        field = MASK_PATHS.get(path)
        if field is None:
            raise invalid(
                f"Invalid update_mask path {path!r}: a policy's fields are bindings, etag, "
                "version and audit_configs."
            )
        fields.append(field)
    return tuple(dict.fromkeys(fields))


def check_etag(current: Any, given: Any, fields: tuple[str, ...]) -> None:
    """ABORTED when the request names an etag (and the mask covers it) that is not
    the current policy's: someone changed the policy since it was read."""
    if "etag" in fields and given.etag and given.etag != current.etag:
        raise ServiceError(grpc.StatusCode.ABORTED, STALE_ETAG)


def merged(current: Any, given: Any, fields: tuple[str, ...]) -> Any:
    """The policy `current` becomes: the masked fields from `given`."""
    out = protos.IamPolicy()
    out.CopyFrom(current)
    for field in fields:
        if field == "etag":
            continue
        if field == "version":
            out.version = given.version
        else:
            out.ClearField(field)
            getattr(out, field).extend(getattr(given, field))
    return out


def check_policy(policy: Any, collection: str) -> None:
    """The rules every stored policy obeys (see the module docstring)."""
    check_version(policy.version, "policy version")
    principals = groups = 0
    for binding in policy.bindings:
        _check_role(binding.role, collection)
        if binding.HasField("condition"):
            raise invalid(
                f"The binding of {binding.role} has a condition: Pub/Sub resources do not "
                "accept conditional role bindings (IAM Conditions)."
            )
        if not binding.members:
            raise invalid(f"The binding of {binding.role} has no principal; each needs one.")
        for member in binding.members:
            _check_member(member)
            principals += 1
            groups += member.startswith("group:")
    if principals > MAX_PRINCIPALS:
        raise invalid(
            f"The policy's bindings refer to {principals} principals; the maximum is "
            f"{MAX_PRINCIPALS} (each occurrence counts)."
        )
    if groups > MAX_GROUPS:
        raise invalid(
            f"The policy's bindings refer to {groups} groups; the maximum is {MAX_GROUPS}."
        )


def _check_role(role: str, collection: str) -> None:
    if _CUSTOM_ROLE.match(role):
        return
    kinds = ROLES.get(role)
    if kinds is None or collection not in kinds:
        raise invalid(
            f"Role {role} is not supported for this resource (a {collection.removesuffix('s')}"
            f"; roles here: {', '.join(r for r, k in ROLES.items() if collection in k)}, or a "
            "custom role projects/P/roles/R or organizations/O/roles/R)."
        )


def _check_member(member: str) -> None:
    if member in ("allUsers", "allAuthenticatedUsers"):
        return
    if member.startswith(("principal://", "principalSet://")) and len(member) > 14:
        return
    rest = member.removeprefix("deleted:")
    for kind in _EMAIL_KINDS:
        if rest.startswith(kind):
            email = rest[len(kind) :].split("?uid=", 1)[0]
            if _EMAIL.match(email):
                return
            raise invalid(f"Invalid principal {member!r}: {kind[:-1]} needs an email address.")
    if member.startswith("domain:") and _DOMAIN.match(member.removeprefix("domain:")):
        return
    raise invalid(
        f"Invalid principal {member!r}: expected user:EMAIL, serviceAccount:EMAIL, "
        "group:EMAIL, domain:DOMAIN, allUsers, allAuthenticatedUsers, principal://... or "
        "principalSet://..."
    )


def tested_permissions(asked: Any, collection: str) -> list[str]:
    """The permissions of TestIamPermissions' answer for an existing resource: every
    one asked (no enforcement), each checked to be a permission of the resource type."""
    valid = {f"pubsub.{collection}.{name}" for name in PERMISSIONS[collection]}
    out = []
    for permission in asked:
        if "*" in permission:
            raise invalid(
                f"Invalid permission {permission!r}: permissions with wildcards are not allowed."
            )
        if permission not in valid:
            raise invalid(
                f"Permission {permission!r} is not valid for this resource (a "
                f"{collection.removesuffix('s')}; its permissions: {', '.join(sorted(valid))})."
            )
        if permission not in out:
            out.append(permission)
    return out


class Etags:
    """New etags: 8 bytes, increasing with time (unique across restarts as the clock
    moves on), never the empty policy's."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> bytes:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return b"\x07" + (self._last & (2**56 - 1)).to_bytes(7, "big")
