"""What the organization's constraints say about a create or an update of a Pub/Sub
resource (a topic, a subscription, a snapshot or a schema): its custom constraints
(judged by `reconciler.orgpolicy.cel.judge`, the evaluator `validate` and `plan`
use, so the three cannot disagree) and Pub/Sub's managed constraints on message
transforms.

    check_call(store, project, resource_type, method, after, before=None, *,
               sets_transforms=False)     raises ServiceError when the service refuses

What the condition sees: the resource as the call describes it, in its REST JSON
shape: on CREATE the request's resource (for a snapshot and a schema, whose requests
do not carry the whole resource, the one the call makes: a snapshot's topic and
expire time, a schema's first revision), on UPDATE the stored resource with the
masked fields replaced (`before` is the stored one, for the "already violating"
rule: the resource after the call decides either way). Which constraints apply: those
of the organization the project's ancestry leads to, enforced by the project's
effective policy on `custom.NAME`; a dry-run one (enforced only by `dryRunSpec`) is
logged, never refused.

The refusal is the service's: FAILED_PRECONDITION, the message `Operation denied by
custom org policy: ["customConstraints/custom.NAME": "DESCRIPTION"]` and a
`google.rpc.ErrorInfo` with reason CUSTOM_ORG_POLICY_VIOLATION, domain
googleapis.com and metadata naming the constraints and the service (the shape other
services' documentation shows; no Pub/Sub page shows one). A managed constraint is
named `constraints/pubsub.managed.NAME` in the same ErrorInfo, as IAM's managed
constraints are. A condition the evaluator cannot evaluate on the resource is
refused too (FAILED_PRECONDITION saying why, without the ErrorInfo): the local server
does not guess the service's answer. So is a condition the evaluator's CEL library
cannot compile (the Org Policy service accepted it: it uses a function or macro the
library does not have); a dry-run one is logged.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from google.protobuf import json_format

from reconciler.localserver.api import protos
from reconciler.localserver.api.status import ServiceError
from reconciler.localserver.schemas.definitions import ENCODING_NAMES
from reconciler.orgpolicy.cel import ConditionError, Verdict, judge
from reconciler.orgpolicy.cel.resource import shape_resource
from reconciler.orgpolicy.custom import (
    SNAPSHOT,
    SUBSCRIPTION,
    TOPIC,
    CustomConstraint,
    denial_message,
)
from reconciler.orgpolicy.model import DISABLE_SUBSCRIPTION_TRANSFORMS, DISABLE_TOPIC_TRANSFORMS
from reconciler.orgpolicy.store import PolicyStore
from reconciler.topic import SchemaSettings, StoragePolicy, TopicShape
from reconciler.topicrules import NANOS, duration_text

log = logging.getLogger(__name__)

VIOLATION = "CUSTOM_ORG_POLICY_VIOLATION"
SERVICE = "pubsub.googleapis.com"
# The managed constraint that refuses message transforms on each resource type.
TRANSFORMS = {TOPIC: DISABLE_TOPIC_TRANSFORMS, SUBSCRIPTION: DISABLE_SUBSCRIPTION_TRANSFORMS}
_KIND = {TOPIC: "topics", SUBSCRIPTION: "subscriptions"}
# The resource types with a `labels` map (a schema has none).
_LABELLED = (TOPIC, SUBSCRIPTION, SNAPSHOT)


def rest_json(resource: Any, resource_type: str = TOPIC) -> dict[str, Any]:
    """A Pub/Sub resource proto in the REST JSON shape conditions read: a topic
    converted to reconcile's topic value and built by the builder `validate` and
    `plan` use (`topic_resource`); another resource as protobuf's JSON writes it, with
    `labels` always there on a type that has them (a map has no presence: none is an
    empty one, as `validate` sees a topic declared without labels)."""
    if resource_type == TOPIC:
        return shape_resource(*topic_value(resource))
    out: dict[str, Any] = json_format.MessageToDict(resource)
    if resource_type in _LABELLED:
        out.setdefault("labels", {})
    return out


# The fields of a Topic the topic value has by name; the others are kept in their
# REST JSON shape (`TopicShape.unmanaged_json`).
_VALUE_FIELDS = (
    "name", "labels", "message_storage_policy", "message_retention_duration",
    "kms_key_name", "schema_settings",
)


def topic_value(pb: Any) -> tuple[str, TopicShape]:
    """The server's protobuf Topic as reconcile's topic value: its name and shape
    (the regions in their order; the other fields it sets in their REST JSON shape,
    as protobuf's JSON writes them)."""
    policy = None
    if pb.HasField("message_storage_policy"):
        msp = pb.message_storage_policy
        policy = StoragePolicy(tuple(msp.allowed_persistence_regions),
                               bool(msp.enforce_in_transit))
    retention = None
    if pb.HasField("message_retention_duration"):
        d = pb.message_retention_duration
        retention = duration_text(d.seconds * NANOS + d.nanos)
    schema = None
    if pb.HasField("schema_settings"):
        ss = pb.schema_settings
        schema = SchemaSettings(ss.schema, ENCODING_NAMES.get(ss.encoding, str(ss.encoding)),
                                ss.first_revision_id, ss.last_revision_id)
    rest = protos.Topic()
    rest.CopyFrom(pb)
    for name in _VALUE_FIELDS:
        rest.ClearField(name)
    return pb.name, TopicShape(
        dict(pb.labels), policy, retention, pb.kms_key_name or None, schema,
        unmanaged_json=json_format.MessageToDict(rest) or None,
    )


def check_call(
    store: PolicyStore,
    project: str,
    resource_type: str,
    method: str,
    after: Any,
    before: Any | None = None,
    *,
    sets_transforms: bool = False,
) -> None:
    """Raise the service's refusal of `method` (CREATE or UPDATE) on the resource
    `after` (a proto, as the call describes it); `before`: the stored one (UPDATE);
    `sets_transforms`: the call sets message transforms (a CREATE with some, an
    UPDATE whose mask names them). Called under the state's write lock."""
    parent = f"projects/{project}"
    managed = TRANSFORMS.get(resource_type)
    if (
        managed is not None
        and sets_transforms
        and len(after.message_transforms)
        and store.enforcement(managed, parent) == "enforced"
    ):
        what = _KIND[resource_type]
        raise _refusal(
            f'Operation denied by org policy: ["constraints/{managed}": "Message transforms '
            f'are disabled for {what} in this project."]',
            f"constraints/{managed}",
        )
    if not store.custom_constraints:
        return
    applicable = store.custom_constraints_for(parent, resource_type)
    if not applicable:
        return
    resource = rest_json(after, resource_type)
    prior = rest_json(before, resource_type) if before is not None else None
    refused: list[CustomConstraint] = []
    for constraint, mode in applicable:
        try:
            judgement = judge(constraint, resource, method, prior, resource_type=resource_type)
        except ConditionError as exc:
            _uncompilable(constraint, mode, method, resource.get("name", ""), exc)
            continue
        if judgement is None or judgement.verdict is Verdict.ALLOWED:
            continue
        if mode == "dry-run":
            log.info(
                "local server: dry-run custom constraint %s would refuse %s of %s",
                constraint.constraint_id, method, resource.get("name", ""),
            )
            continue
        if judgement.verdict is Verdict.UNDECIDED:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"The local server could not evaluate the condition of custom constraint "
                f"customConstraints/{constraint.constraint_id} on {resource.get('name', '')}: "
                f"{judgement.outcome.reason}.",
            )
        refused.append(constraint)
    if refused:
        raise _refusal(
            denial_message(refused),
            ",".join(f"customConstraints/{c.constraint_id}" for c in refused),
        )


def _uncompilable(
    constraint: CustomConstraint, mode: str, method: str, name: str, error: ConditionError
) -> None:
    """A condition the library cannot compile: refused (enforced) or logged (dry run),
    saying the server cannot evaluate it; never a pass, never a crash."""
    reason = (
        f"its condition does not compile with the local server's CEL library: "
        f"{error.message} ({error.place})"
    )
    if mode == "dry-run":
        log.info(
            "local server: cannot evaluate dry-run custom constraint %s on %s of %s: %s",
            constraint.constraint_id, method, name, reason,
        )
        return
    raise ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"The local server could not evaluate the condition of custom constraint "
        f"customConstraints/{constraint.constraint_id} on {name}: {reason}.",
    )


def _refusal(message: str, constraints: str) -> ServiceError:
    info = protos.ErrorInfo(
        reason=VIOLATION,
        domain="googleapis.com",
        metadata={"customConstraints": constraints, "service": SERVICE},
    )
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, message, (info,))
