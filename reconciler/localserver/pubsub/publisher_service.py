"""`google.pubsub.v1.Publisher` with the real service's checks: names, update masks,
message storage policies against the effective org policy, in-transit enforcement.

Messages follow Google's emulator where it answers (`Topic not found`, `Topic already
exists`, the update-mask sentences) and say more where it is silent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.counters import RpcCounters
from reconciler.localserver.api.names import parse_project, parse_topic
from reconciler.localserver.api.paging import decode_token, encode_token, page_size
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import (
    ServiceError,
    already_exists,
    failed_precondition,
    invalid,
    not_found,
)
from reconciler.localserver.api.wire import publish_response
from reconciler.localserver.pubsub import masks
from reconciler.localserver.pubsub.constraints import check_call
from reconciler.localserver.pubsub.limits import check_labels, check_publish
from reconciler.localserver.pubsub.publish_transforms import (
    Transformed,
    enabled,
    response_ids,
    transform_request,
)
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.pubsub.subscriber_service import (
    declared_region,
    in_transit_refusal,
    parse_subscription,
    received_text,
)
from reconciler.localserver.pubsub.topicextras import (
    INGESTION,
    TAGS,
    TRANSFORMS,
    IngestionStates,
    check_ingestion,
    check_transforms,
    settle_output_fields,
)
from reconciler.localserver.schemas.settings import check_settings, has_schema, validate_request
from reconciler.names import topics_prefix
from reconciler.orgpolicy.cmek import cmek_required, key_project_verdict
from reconciler.orgpolicy.custom import TOPIC
from reconciler.orgpolicy.locations import catalog, enforce_in_transit, location_restriction
from reconciler.orgpolicy.model import (
    ENFORCE_IN_TRANSIT,
    RESOURCE_LOCATIONS,
    RESTRICT_KEY_PROJECTS,
    RESTRICT_NON_CMEK,
)
from reconciler.orgpolicy.publishing import Landing, Refusal, land
from reconciler.topicfields import (
    KMS_KEY,
    LABELS,
    MASK_PATHS,
    RETENTION,
    SENT,
)
from reconciler.topicrules import KMS_KEY_FORMAT, NANOS, retention_problem, split_kms_key

# The fields reconcile manages (the table's) and those it does not.
UPDATABLE_PATHS = (*MASK_PATHS, INGESTION, TRANSFORMS)
# A mask may name a field inside these too (`masks`): python-pubsub's
# update-topic-schema sample sends "schemaSettings.firstRevisionId,...", and Google's
# emulator takes each part of schema_settings.
TOPIC_MASKS = masks.MaskRules(
    request="UpdateTopicRequest",
    resource="Topic",
    example="schema_settings",
    misspelt="schemaSetings",
    mutable=frozenset(UPDATABLE_PATHS),
    # input-only and immutable (pubsub.proto): taken on CreateTopic only
    immutable=frozenset({TAGS}),
)

_KIND_TEXT = {
    "zone": "a zone",
    "multi_region": "a multi-region location",
    "dual_region": "a dual-region location",
    "group": "a value group",
    "exclusion": "an exclusion",
    "unknown": "not a known Google Cloud region",
}


def _described(topic: Any, given: Any, fields: tuple[str, ...]) -> Any:
    """The updated topic as the call describes it: a storage policy the update clears
    is absent, as on a CreateTopic that sends none, not the one the service then
    computes from the org policy (what a condition sees of a computed policy is not
    documented)."""
    if "message_storage_policy" not in fields or given.HasField("message_storage_policy"):
        return topic
    described = protos.Topic()
    described.CopyFrom(topic)
    described.ClearField("message_storage_policy")
    return described


def _check_labels(topic: Any) -> None:
    check_labels(topic.labels, "topic")


def _check_retention(topic: Any) -> None:
    if topic.HasField(RETENTION.proto):
        d = topic.message_retention_duration
        if problem := retention_problem(d.seconds * NANOS + d.nanos):
            raise invalid(f"{RETENTION.proto} out of bounds: {problem}")


def _check_kms_key(topic: Any) -> None:
    key = topic.kms_key_name
    if key and split_kms_key(key) is None:
        raise invalid(f"Invalid {KMS_KEY.proto} {key!r}: expected {KMS_KEY_FORMAT}.")


# The checks a field's value gets wherever a call sets it, by the table's proto names
# (the schema settings are checked against the schema store, under the write lock).
_FIELD_CHECKS: dict[str, Callable[[Any], None]] = {
    LABELS.proto: _check_labels,
    RETENTION.proto: _check_retention,
    KMS_KEY.proto: _check_kms_key,
}


class _SchemaCheck(Exception):
    """Raised under the write lock when a Publish must be transformed by the topic's
    message transforms or validated against its schema settings (first seen, or
    changed since the request was prepared)."""

    def __init__(self, topic: Any) -> None:
        super().__init__(topic.name)
        self.topic = topic


class PublisherService:
    """Handlers; every one runs on a worker thread and reads/writes `ServerState`."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        # Messages accepted from a region the topic's storage policy excludes (no
        # in-transit enforcement): the service reroutes them to an allowed region.
        self.rerouted = RpcCounters()  # keyed by topic name
        # Ingestion states a test declared (`LocalServer.set_ingestion_state`).
        self.ingestion_states = IngestionStates()

    # ------------------------------------------------------------------ org policy view

    def _location_restriction(self, project: str) -> Any:
        spec = self.state.policy_store.effective_spec(RESOURCE_LOCATIONS, f"projects/{project}")
        return location_restriction(spec)

    def _enforce_in_transit(self, project: str) -> bool:
        spec = self.state.policy_store.effective_spec(ENFORCE_IN_TRANSIT, f"projects/{project}")
        return enforce_in_transit(spec)

    def computed_storage_policy(self, project: str) -> Any | None:
        """What the service gives a topic with no storage policy: the org policy's
        regions, or none at all when no resource-locations policy is in effect."""
        restriction = self._location_restriction(project)
        if restriction.allowed is None:
            return None
        regions = restriction.allowed_regions()
        if not regions:
            raise failed_precondition(
                f"The effective org policy constraints/{RESOURCE_LOCATIONS} of "
                f"projects/{project} allows no region, so no message storage policy can "
                "be computed for the topic."
            )
        return protos.MessageStoragePolicy(
            allowed_persistence_regions=regions,
            enforce_in_transit=self._enforce_in_transit(project),
        )

    def set_storage_policy(self, project: str, topic: Any, given: Any) -> None:
        """The policy `given` asks for (validated against the org policy), or, when it
        has none, the one the org policy computes (none without a location policy)."""
        if given.HasField("message_storage_policy"):
            policy = self.checked_storage_policy(project, given.message_storage_policy)
        else:
            policy = self.computed_storage_policy(project)
        if policy is None:
            topic.ClearField("message_storage_policy")
        else:
            topic.message_storage_policy.CopyFrom(policy)

    def checked_storage_policy(self, project: str, given: Any) -> Any:
        """An explicit storage policy, validated; enforce_in_transit is forced on when
        the org policy enforces in-transit regions."""
        regions = list(given.allowed_persistence_regions)
        if not regions:
            raise invalid(
                "message_storage_policy.allowed_persistence_regions must name at least one "
                "region; to follow the org policy, leave message_storage_policy unset."
            )
        cat = catalog()
        for region in regions:
            kind = cat.kind_of(region)
            if kind != "region":
                raise invalid(
                    f"Invalid message storage policy: {region!r} is {_KIND_TEXT[kind]}; "
                    "allowed_persistence_regions takes Google Cloud region names only "
                    "(e.g. us-central1)."
                )
        restriction = self._location_restriction(project)
        refused = sorted({r for r in regions if not restriction.allows(r)})
        if refused:
            allowed = ", ".join(restriction.allowed_regions()) or "none"
            raise failed_precondition(
                f"Message storage policy region(s) {', '.join(refused)} are not allowed by "
                f"the effective org policy constraints/{RESOURCE_LOCATIONS} of "
                f"projects/{project}. Allowed regions: {allowed}."
            )
        out = protos.MessageStoragePolicy()
        out.CopyFrom(given)
        if self._enforce_in_transit(project):
            out.enforce_in_transit = True
        return out

    def check_cmek(self, project: str, key: str) -> None:
        """The CMEK constraints on a new topic (they apply to creation only). The
        words are those other Google services answer with (public reports quote them
        for Compute Engine and GKE); what Pub/Sub says is not documented. A key project
        the server's ancestry does not place under an allowed node is refused."""
        store = self.state.policy_store
        resource = f"projects/{project}"
        if not key:
            if cmek_required(store.effective_spec(RESTRICT_NON_CMEK, resource)):
                raise failed_precondition(
                    f"Constraint `constraints/{RESTRICT_NON_CMEK}` violated for "
                    f"`{resource}` attempting to create a resource without specifying a "
                    "KMS CryptoKey."
                )
            return
        split = split_kms_key(key)
        spec = store.effective_spec(RESTRICT_KEY_PROJECTS, resource)
        if split is None or spec is None:
            return
        key_project = f"projects/{split[0]}"
        if key_project_verdict(spec, store.chain(key_project)) != "allowed":
            raise failed_precondition(
                f"Constraint `constraints/{RESTRICT_KEY_PROJECTS}` violated for "
                f"`{resource}` attempting to use the KMS CryptoKey {key} of "
                f"{key_project}, which is not an allowed key project."
            )

    # ------------------------------------------------------------------ field checks

    @staticmethod
    def _check_fields(topic: Any, fields: tuple[str, ...]) -> None:
        """The service's rules (reconciler/topicrules.py) for the table's fields that
        `fields` names and that have one here, in the table's order; then those of the
        fields reconcile does not manage."""
        for entry in SENT:
            check = _FIELD_CHECKS.get(entry.proto)
            if check is not None and entry.proto in fields:
                check(topic)
        if TRANSFORMS in fields:
            check_transforms(topic.message_transforms)
        if INGESTION in fields:
            check_ingestion(topic)

    # ------------------------------------------------------------------------ RPCs

    def _check_schema_settings(self, topic: Any) -> None:
        if topic.HasField("schema_settings"):
            check_settings(topic.schema_settings, self.state.schemas.revisions)

    def create_topic(self, request: Any, call: CallInfo) -> Any:
        project, _ = parse_topic(request.name)
        self._check_fields(request, UPDATABLE_PATHS)

        def build() -> Any:
            # Under the write lock: a schema deleted meanwhile is not linked to, and the
            # org's constraints are those in force now.
            self.check_cmek(project, request.kms_key_name)
            self._check_schema_settings(request)
            check_call(
                self.state.policy_store, project, TOPIC, "CREATE", request,
                sets_transforms=True,
            )
            topic = protos.Topic()
            topic.CopyFrom(request)
            topic.ClearField("state")
            topic.ClearField("satisfies_pzs")
            settle_output_fields(topic)
            self.set_storage_policy(project, topic, request)
            return topic

        created = self.state.create_topic(request.name, build)
        if created is None:
            raise already_exists("Topic already exists")
        return self.ingestion_states.shown(created)

    def get_topic(self, request: Any, call: CallInfo) -> Any:
        parse_topic(request.topic)
        topic = self.state.get_topic(request.topic)
        if topic is None:
            raise not_found("Topic not found")
        return self.ingestion_states.shown(topic)

    def update_topic(self, request: Any, call: CallInfo) -> Any:
        given = request.topic
        project, _ = parse_topic(given.name)
        paths = request.update_mask.paths if request.HasField("update_mask") else ()
        fields = masks.checked_paths(paths, protos.Topic.DESCRIPTOR, TOPIC_MASKS)
        self._check_fields(given, tuple(f for f in fields if "." not in f))

        def change(current: Any) -> Any:
            topic = protos.Topic()
            topic.CopyFrom(current)
            for field in fields:
                if field == "message_storage_policy":
                    self.set_storage_policy(project, topic, given)
                else:
                    masks.copy_path(topic, given, field)
            if any(f.startswith("message_storage_policy.") for f in fields):
                # a part changed: the whole policy is checked as an explicit one
                policy = self.checked_storage_policy(project, topic.message_storage_policy)
                topic.message_storage_policy.CopyFrom(policy)
            self._check_fields(topic, tuple({f.split(".", 1)[0] for f in fields if "." in f}))
            if masks.touches(fields, "schema_settings"):
                self._check_schema_settings(topic)
            check_call(
                self.state.policy_store, project, TOPIC, "UPDATE", _described(topic, given, fields),
                current, sets_transforms=masks.touches(fields, TRANSFORMS),
            )
            settle_output_fields(topic)
            return topic

        updated = self.state.update_topic(given.name, change)
        if updated is None:
            raise not_found("Topic not found.")
        return self.ingestion_states.shown(updated)

    def list_topics(self, request: Any, call: CallInfo) -> Any:
        project = parse_project(request.project)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, topics_prefix(project))
        topics, last = self.state.list_topics(project, after, size)
        response = protos.ListTopicsResponse(topics=map(self.ingestion_states.shown, topics))
        if last:
            response.next_page_token = encode_token(last)
        return response

    def list_topic_subscriptions(self, request: Any, call: CallInfo) -> Any:
        project, _ = parse_topic(request.topic)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"projects/{project}/subscriptions/")
        if self.state.get_topic(request.topic) is None:
            raise not_found("Topic not found")
        names, last = self.state.subs.list_topic(request.topic, after, size)
        response = protos.ListTopicSubscriptionsResponse(subscriptions=names)
        if last:
            response.next_page_token = encode_token(last)
        return response

    def detach_subscription(self, request: Any, call: CallInfo) -> Any:

        parse_subscription(request.subscription)
        if not self.state.subs.detach(request.subscription):
            raise not_found("Subscription does not exist")
        return protos.DetachSubscriptionResponse()

    def delete_topic(self, request: Any, call: CallInfo) -> Any:
        parse_topic(request.topic)
        if not self.state.delete_topic(request.topic):
            raise not_found("Topic not found")
        return protos.Empty()

    def publish(self, request: Any, call: CallInfo) -> Any:
        """The hot path. The gRPC face hands over the request parsed as
        `protos.WirePublishRequest` (messages left serialized: checked from their
        bytes; the request's bytes are stored as they came, or as the topic's message
        transforms made them: `publish_transforms`) and takes the
        response's bytes; REST hands over a PublishRequest and its bytes, and takes
        a message."""
        raw = call.raw or request.SerializeToString()
        wire = request
        if type(wire) is not protos.WirePublishRequest:
            wire = protos.WirePublishRequest.FromString(raw)
        name = wire.topic
        parse_topic(name)
        ordering = check_publish(raw, wire, call.payload)
        call.notes["has_ordering"] = ordering
        count = len(wire.messages)
        declared = declared_region(call)
        landed: list[Landing] = []
        checked: list[Any] = [None]  # the schema settings `raw` was validated against
        received = raw
        applied: list[tuple[Any, ...]] = [()]  # the enabled transforms `raw` went through
        transformed: list[Transformed | None] = [None]

        def prepare(topic: Any) -> bytes:
            """Outside the write lock: `received` after the topic's enabled transforms
            (run first: the transformed message is what is stored), then validated
            against its schema settings."""
            steps = enabled(topic.message_transforms)
            out = received
            transformed[0] = None
            if steps:
                done = transform_request(name, steps, received)
                transformed[0], out = done, done.raw
            applied[0] = steps
            checked[0] = None
            if has_schema(topic) and (transformed[0] is None or transformed[0].kept):
                out = validate_request(topic, self.state.schemas.revisions, out)
                checked[0] = topic.schema_settings
            return out

        def place(topic: Any) -> str:
            settings = topic.schema_settings if has_schema(topic) else None
            if (settings is not None or checked[0] is not None) and settings != checked[0]:
                raise _SchemaCheck(topic)
            if (topic.message_transforms or applied[0]) and enabled(
                topic.message_transforms
            ) != applied[0]:
                raise _SchemaCheck(topic)
            landing = self._land(name, topic, declared, ordering)
            landed.append(landing)
            assert landing.stored is not None  # _land raises for a refused one
            return landing.stored

        known = self.state.get_topic(name)
        if known is not None and (has_schema(known) or known.message_transforms):
            # Transformed and checked before the write lock is first taken: `place`
            # then finds the transforms and settings it was prepared with, unless
            # they changed meanwhile.
            raw = prepare(known)
        for _ in range(3):
            kept = count if transformed[0] is None else len(transformed[0].kept)
            try:
                stored = self.state.subs.publish(
                    name, raw, kept, place, reserve=count - kept
                )
                break
            except _SchemaCheck as need:
                # Prepared outside the write lock; `place` sees whether the topic's
                # transforms and schema settings are still those once the lock is held.
                raw = prepare(need.topic)
        else:
            raise ServiceError(
                grpc.StatusCode.ABORTED,
                f"The message transforms or schema settings of {name} kept changing while "
                "the request was prepared; retry.",
            )
        if stored is None:
            raise not_found("Topic not found")
        first, _ = stored
        if landed[0].rerouted:
            self.rerouted.incr(name, amount=count)
        if transformed[0] is not None and transformed[0].filtered:
            reply = response_ids(first, transformed[0])
            return reply if call.serialized_reply else protos.PublishResponse.FromString(reply)
        reply = publish_response(first, count)  # the IDs are consecutive
        return reply if call.serialized_reply else protos.PublishResponse.FromString(reply)

    @staticmethod
    def _land(name: str, topic: Any, declared: str | None, ordering: bool) -> Landing:
        """Where this Publish lands under the topic's storage policy (the rule of
        `reconciler.orgpolicy.publishing`), or FAILED_PRECONDITION saying why not."""
        if not topic.HasField("message_storage_policy"):
            return land(declared, None, enforce_in_transit=False, ordering=ordering)
        policy = topic.message_storage_policy
        allowed = list(policy.allowed_persistence_regions)
        landing = land(
            declared, allowed, enforce_in_transit=policy.enforce_in_transit, ordering=ordering
        )
        if not landing.refusals:
            return landing
        refusal = landing.refusals[0]
        if refusal is Refusal.IN_TRANSIT:
            raise in_transit_refusal("Publish", declared, name, allowed)
        if refusal is Refusal.ORDERING:
            raise failed_precondition(
                "Cannot publish messages with an ordering key from region "
                f"{received_text(declared)}: the message storage policy of {name} does not "
                f"allow it (allowed regions: {', '.join(allowed)})."
            )
        raise failed_precondition(
            f"The message storage policy of {name} allows no region: nothing can be "
            "published to it."
        )

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc("CreateTopic", self.create_topic, p.Topic, p.Topic, lambda r: r.name),
            Rpc("GetTopic", self.get_topic, p.GetTopicRequest, p.Topic, lambda r: r.topic),
            Rpc(
                "UpdateTopic",
                self.update_topic,
                p.UpdateTopicRequest,
                p.Topic,
                lambda r: r.topic.name,
            ),
            Rpc(
                "ListTopics",
                self.list_topics,
                p.ListTopicsRequest,
                p.ListTopicsResponse,
                lambda r: r.project,
            ),
            Rpc("DeleteTopic", self.delete_topic, p.DeleteTopicRequest, p.Empty, lambda r: r.topic),
            Rpc(
                "ListTopicSubscriptions",
                self.list_topic_subscriptions,
                p.ListTopicSubscriptionsRequest,
                p.ListTopicSubscriptionsResponse,
                lambda r: r.topic,
            ),
            Rpc(
                "DetachSubscription",
                self.detach_subscription,
                p.DetachSubscriptionRequest,
                p.DetachSubscriptionResponse,
                lambda r: r.subscription,
            ),
            Rpc(
                "Publish",
                self.publish,
                p.PublishRequest,
                p.PublishResponse,
                lambda r: r.topic,
                raw=True,
                wire_type=p.WirePublishRequest,
            ),
        ]
