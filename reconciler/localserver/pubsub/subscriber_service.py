"""`google.pubsub.v1.Subscriber` with the service's checks: subscriptions (create, get,
update with a mask, list, delete; their fields' rules in `subconfig`), ModifyPushConfig,
Pull, StreamingPull, Acknowledge and ModifyAckDeadline, ack deadlines and redelivery,
retention, detached and export subscriptions, and in-transit enforcement of the
topic's storage policy on Pull and StreamingPull.

Handlers are plain functions over `ServerState` (transport-independent); `PullStream`
is one StreamingPull stream as a plain object: the gRPC layer feeds it the client's
requests and sends what it yields. Messages follow Google's emulator where it answers
and say more where it is silent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_child, parse_project, parse_topic
from reconciler.localserver.api.paging import decode_token, encode_token, page_size
from reconciler.localserver.api.rpc import CLIENT_REGION_KEY, CallInfo, Rpc
from reconciler.localserver.api.status import (
    ServiceError,
    already_exists,
    failed_precondition,
    invalid,
    not_found,
    unavailable,
)
from reconciler.localserver.api.wire import length_delimited
from reconciler.localserver.pubsub import ackids, deadletter, masks
from reconciler.localserver.pubsub.ackids import AckIds
from reconciler.localserver.pubsub.backlog import Delivered
from reconciler.localserver.pubsub.constraints import check_call
from reconciler.localserver.pubsub.delivery_transforms import at_delivery, check_runnable
from reconciler.localserver.pubsub.filters import FilterError, compile_filter, describe
from reconciler.localserver.pubsub.limits import (
    DEFAULT_ACK_DEADLINE_S,
    DEFAULT_SUBSCRIPTION_RETENTION_S,
    MAX_ACK_DEADLINE_S,
    MAX_ACK_PAYLOAD,
    MAX_PULL_MESSAGES,
    MIN_ACK_DEADLINE_S,
    check_payload,
)
from reconciler.localserver.pubsub.masks import checked_paths
from reconciler.localserver.pubsub.state import ServerState
from reconciler.localserver.pubsub.subconfig import (
    DELIVERY_CONFIGS,
    MASKS,
    MUTABLE_PATHS,
    check_ack_deadline,
    check_config,
    clear_outputs,
    updated,
)
from reconciler.localserver.pubsub.subindex import DELETED_TOPIC
from reconciler.orgpolicy.custom import SUBSCRIPTION
from reconciler.orgpolicy.publishing import (
    declared_region_problem,
    receiving_region,
    refuses_in_transit,
)

# A Pull waits this long at most for a first message (the service holds a pull open
# for a while too; clients re-issue it).
PULL_WAIT_S = 10.0
STREAM_POLL_S = 1.0
# The service's answer, with exactly-once delivery, to ack IDs that name no delivery
# whose lease holds (docs/local-server.md cites where it is seen).
EXACTLY_ONCE_FAILURE = (
    "Some acknowledgement ids in the request were invalid. This could be because the "
    "acknowledgement ids have expired or the acknowledgement ids were malformed."
)


def parse_subscription(name: str) -> tuple[str, str]:
    """(project_id, subscription_id) of "projects/P/subscriptions/S"; else
    INVALID_ARGUMENT in the emulator's words plus the reason."""
    return parse_child("subscriptions", name)


def in_transit_refusal(
    method: str, declared: str | None, topic: str, allowed: list[str]
) -> ServiceError:
    """What a Publish, Pull or StreamingPull refused by in-transit enforcement answers
    (`declared`: the region the request names, None for the default)."""
    return failed_precondition(
        f"{method} request received in region {received_text(declared)}, which the "
        f"message storage policy of {topic} does not allow (enforce_in_transit is set; "
        f"allowed regions: {', '.join(allowed)})."
    )


def declared_region(call: CallInfo) -> str | None:
    """The region a Publish, Pull or StreamingPull declares it is received in (its
    `CLIENT_REGION_KEY` metadata or header, else the server's --client-region), or
    None; INVALID_ARGUMENT for one that is no Google Cloud region, checked before
    anything is read, stored or numbered."""
    declared = call.client_region
    if declared is not None:
        problem = declared_region_problem(declared)
        if problem is not None:
            raise invalid(f"Invalid {CLIENT_REGION_KEY}: {problem}.")
    return declared


def received_text(declared: str | None) -> str:
    """The receiving region as a refusal names it: the default one says why."""
    if declared:
        return declared
    return (
        f"{receiving_region(None)} (the default: the request declares no region in "
        f"{CLIENT_REGION_KEY} and the server has no --client-region)"
    )


class SubscriberService:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.subs = state.subs

    # ------------------------------------------------------------ in-transit check

    def check_in_transit(self, method: str, sub: Any, call: CallInfo) -> None:
        """FAILED_PRECONDITION when the topic enforces in-transit regions and the
        request is received in a region its storage policy does not allow."""
        if sub.topic == DELETED_TOPIC:
            return
        topic = self.state.get_topic(sub.topic)
        if topic is None or not topic.HasField("message_storage_policy"):
            return
        policy = topic.message_storage_policy
        allowed = list(policy.allowed_persistence_regions)
        received = receiving_region(call.client_region)
        if refuses_in_transit(received, allowed, policy.enforce_in_transit):
            raise in_transit_refusal(method, call.client_region, sub.topic, allowed)

    def _pullable(self, method: str, name: str, call: CallInfo) -> Any:
        parse_subscription(name)
        declared_region(call)
        sub = self.subs.raw(name)
        if sub is None:
            raise not_found("Subscription does not exist")
        if sub.detached:
            raise failed_precondition(
                f"{method}: subscription {name} is detached from its topic; detached "
                "subscriptions deliver no messages."
            )
        self.check_in_transit(method, sub, call)
        return sub

    # ------------------------------------------------------------------- admin

    def create_subscription(self, request: Any, call: CallInfo) -> Any:
        project, _ = parse_subscription(request.name)
        parse_topic(request.topic)
        check_config(request, MUTABLE_PATHS)
        try:
            compile_filter(request.filter)
        except FilterError as exc:
            raise invalid(describe(exc, request.filter)) from None

        def build() -> Any:
            if self.state.get_topic(request.topic) is None:
                raise not_found("Subscription topic does not exist")
            check_call(
                self.state.policy_store, project, SUBSCRIPTION, "CREATE", request,
                sets_transforms=True,
            )
            sub = protos.Subscription()
            sub.CopyFrom(request)
            sub.ClearField("state")
            sub.ClearField("topic_message_retention_duration")
            sub.detached = False
            if not any(sub.HasField(c) for c in DELIVERY_CONFIGS):
                sub.push_config.SetInParent()  # a pull one: `pushConfig: {}`, as the service
            if not sub.ack_deadline_seconds:
                sub.ack_deadline_seconds = DEFAULT_ACK_DEADLINE_S
            if not sub.HasField("message_retention_duration"):
                sub.message_retention_duration.seconds = int(DEFAULT_SUBSCRIPTION_RETENTION_S)
            clear_outputs(sub)
            deadletter.settle_policy(sub, self._topic_exists, created=True)
            return sub

        created = self.subs.create(request.name, build)
        if created is None:
            raise already_exists("Subscription already exists")
        return created

    def get_subscription(self, request: Any, call: CallInfo) -> Any:
        parse_subscription(request.subscription)
        sub = self.subs.get(request.subscription)
        if sub is None:
            raise not_found("Subscription does not exist")
        return sub

    def update_subscription(self, request: Any, call: CallInfo) -> Any:
        paths = request.update_mask.paths if request.HasField("update_mask") else ()
        fields = checked_paths(paths, protos.Subscription.DESCRIPTOR, MASKS)
        return self._update(request.subscription, fields)

    def modify_push_config(self, request: Any, call: CallInfo) -> Any:
        """Push to pull (an empty push_config), pull to push, or another endpoint or
        push authentication: an update of push_config, checked and journaled as one."""
        given = protos.Subscription(name=request.subscription)
        given.push_config.CopyFrom(request.push_config)
        self._update(given, ("push_config",))
        return protos.Empty()

    def _update(self, given: Any, fields: tuple[str, ...]) -> Any:
        project, _ = parse_subscription(given.name)

        def change(current: Any) -> Any:
            sub = updated(current, given, fields)
            if masks.touches(fields, "dead_letter_policy"):  # (its topic may be gone since)
                deadletter.settle_policy(sub, self._topic_exists, created=False)
            check_call(
                self.state.policy_store, project, SUBSCRIPTION, "UPDATE", sub, current,
                sets_transforms=masks.touches(fields, "message_transforms"),
            )
            return sub

        stored = self.subs.update(given.name, change)
        if stored is None:
            raise not_found("Subscription does not exist")
        return stored

    def _topic_exists(self, name: str) -> bool:
        return self.state.get_topic(name) is not None

    def list_subscriptions(self, request: Any, call: CallInfo) -> Any:
        project = parse_project(request.project)
        size = page_size(request.page_size)
        after = decode_token(request.page_token, f"projects/{project}/subscriptions/")
        body, last = self.subs.list_page(project, after, size)
        if last:
            body += length_delimited(2, encode_token(last).encode())  # next_page_token
        return body if call.serialized_reply else protos.ListSubscriptionsResponse.FromString(body)

    def delete_subscription(self, request: Any, call: CallInfo) -> Any:
        parse_subscription(request.subscription)
        if not self.subs.delete(request.subscription):
            raise not_found("Subscription does not exist")
        return protos.Empty()

    # -------------------------------------------------------------------- pull

    def pull(self, request: Any, call: CallInfo) -> Any:
        name = request.subscription
        if request.max_messages <= 0:
            raise invalid("No max_messages specified")
        if request.max_messages > MAX_PULL_MESSAGES:
            raise invalid(
                f"max_messages is {request.max_messages}; a Pull returns at most "
                f"{MAX_PULL_MESSAGES} messages."
            )
        sub = self._pullable("Pull", name, call)
        check_runnable(sub.message_transforms)
        wait = 0.0 if request.return_immediately else PULL_WAIT_S
        got = self.subs.pull(
            name,
            request.max_messages,
            ack_deadline=sub.ack_deadline_seconds or DEFAULT_ACK_DEADLINE_S,
            wait=wait,
        )
        if got is None:
            raise not_found("Subscription does not exist")
        response = protos.PullResponse()
        got, messages = at_delivery(sub.message_transforms, got, *self.settlers(name, sub))
        _fill(response.received_messages, got, sub.HasField("dead_letter_policy"), messages)
        return response

    def settlers(self, name: str, sub: Any) -> tuple[Callable[[list[str]], Any], Any]:
        """How `delivery_transforms` acknowledges ack IDs of `name` (a transform
        filtered them) and nacks them (one failed; only with a dead-letter policy,
        which keeps why, for the forward's SMT error attribute)."""

        def nack(failed: list[tuple[Delivered, str]], passed: list[Delivered]) -> None:
            self.subs.dead_letters.smt_failed(name, failed, passed)
            self.subs.modify(name, self.ack_ids(name, [d.ack_id for d, _ in failed]), 0)

        return (
            lambda sent: self.subs.ack(name, self.ack_ids(name, sent)),
            nack if sub.HasField("dead_letter_policy") else None,
        )

    def ack_ids(self, name: str, sent: Any) -> AckIds:
        """The ack IDs a request sends `name`, parsed; INVALID_ARGUMENT for one that is
        not an ack ID of this server, or that names another subscription (in the
        words of Google's emulator, which refuses both so): such a request changes
        nothing. A well-formed ID of this subscription that names no current
        delivery is not refused here (the state tells it stale)."""
        parsed = ackids.parse(list(sent))
        if isinstance(parsed, str):
            cut = parsed if len(parsed) <= 200 else parsed[:200] + "..."
            raise invalid(f"Invalid ack id (ack_id={cut})")
        tag = ackids.subscription_tag(name)
        if parsed.tags() != {tag}:
            i = next(i for i, p in enumerate(parsed.prefixes) if not p.startswith(tag))
            foreign = parsed.prefixes[i][:16]
            owner = next(
                (n for n in self.subs.names() if ackids.subscription_tag(n) == foreign), None
            )
            meant = f"subscription: {owner}" if owner else "another subscription"
            raise invalid(
                f"Subscription {name} received an invalid ack ID {parsed.texts[i]}, meant "
                f"for {meant}"
            )
        return parsed

    def _settled(self, name: str, outcome: tuple[list[int], list[str]] | None) -> None:
        """After an Acknowledge or ModifyAckDeadline: NOT_FOUND when the subscription
        went away; with exactly-once delivery, INVALID_ARGUMENT with an `ErrorInfo`
        naming each ack ID that settled nothing (the others did), as the service
        answers; without it those are accepted silently, as the service accepts
        expired ones."""
        if outcome is None:
            raise not_found("Subscription does not exist")
        stale = outcome[1]
        if not stale:
            return
        sub = self.subs.raw(name)
        if sub is not None and sub.enable_exactly_once_delivery:
            raise exactly_once_failure(stale)

    def acknowledge(self, request: Any, call: CallInfo) -> Any:
        check_payload(call.payload or request.ByteSize(), MAX_ACK_PAYLOAD)
        name = request.subscription
        parse_subscription(name)
        if not request.ack_ids:
            raise invalid("No ack ids specified.")
        self._settled(name, self.subs.ack(name, self.ack_ids(name, request.ack_ids)))
        return protos.Empty()

    def modify_ack_deadline(self, request: Any, call: CallInfo) -> Any:
        check_payload(call.payload or request.ByteSize(), MAX_ACK_PAYLOAD)
        parse_subscription(request.subscription)
        seconds = request.ack_deadline_seconds
        if seconds < 0:
            raise invalid("Ack deadline cannot be negative")
        if seconds > MAX_ACK_DEADLINE_S:
            raise invalid(
                f"Invalid ack deadline {seconds}: the maximum is {MAX_ACK_DEADLINE_S} seconds."
            )
        if not request.ack_ids:
            raise invalid("No ack ids specified.")
        name = request.subscription
        self._settled(
            name, self.subs.modify(name, self.ack_ids(name, request.ack_ids), seconds)
        )
        return protos.Empty()

    def streaming_pull(self, request: Any, call: CallInfo) -> PullStream:
        """Open a stream from its first request (checked here; the gRPC layer then
        feeds the stream's later requests to `PullStream.receive`)."""
        name = request.subscription
        check_ack_deadline(request.stream_ack_deadline_seconds, "stream_ack_deadline_seconds")
        if not request.stream_ack_deadline_seconds:
            raise invalid(
                "stream_ack_deadline_seconds must be set (10 to 600 seconds) in the first "
                "StreamingPullRequest."
            )
        sub = self._pullable("StreamingPull", name, call)
        stream = PullStream(self, sub, request)
        stream.receive(request)
        return stream

    # -------------------------------------------------------------------- wiring

    def rpcs(self) -> list[Rpc]:
        p = protos
        return [
            Rpc(
                "CreateSubscription",
                self.create_subscription,
                p.Subscription,
                p.Subscription,
                lambda r: r.name,
            ),
            Rpc(
                "GetSubscription",
                self.get_subscription,
                p.GetSubscriptionRequest,
                p.Subscription,
                lambda r: r.subscription,
            ),
            Rpc(
                "UpdateSubscription",
                self.update_subscription,
                p.UpdateSubscriptionRequest,
                p.Subscription,
                lambda r: r.subscription.name,
            ),
            Rpc(
                "ListSubscriptions",
                self.list_subscriptions,
                p.ListSubscriptionsRequest,
                p.ListSubscriptionsResponse,
                lambda r: r.project,
                serialized_reply=True,
            ),
            Rpc(
                "DeleteSubscription",
                self.delete_subscription,
                p.DeleteSubscriptionRequest,
                p.Empty,
                lambda r: r.subscription,
            ),
            Rpc("Pull", self.pull, p.PullRequest, p.PullResponse, lambda r: r.subscription),
            Rpc(
                "Acknowledge",
                self.acknowledge,
                p.AcknowledgeRequest,
                p.Empty,
                lambda r: r.subscription,
            ),
            Rpc(
                "ModifyAckDeadline",
                self.modify_ack_deadline,
                p.ModifyAckDeadlineRequest,
                p.Empty,
                lambda r: r.subscription,
            ),
            Rpc(
                "StreamingPull",
                self.streaming_pull,
                p.StreamingPullRequest,
                p.StreamingPullResponse,
                lambda r: r.subscription,
                stream=True,
            ),
            Rpc(
                "ModifyPushConfig",
                self.modify_push_config,
                p.ModifyPushConfigRequest,
                p.Empty,
                lambda r: r.subscription,
            ),
        ]


def exactly_once_failure(stale: list[str]) -> ServiceError:
    """What Acknowledge and ModifyAckDeadline answer on an exactly-once subscription
    when some ack IDs settled nothing: the reason and per-ID metadata the client
    libraries read (`EXACTLY_ONCE_ACKID_FAILURE`, `PERMANENT_FAILURE_INVALID_ACK_ID`)."""
    info = protos.ErrorInfo(
        reason="EXACTLY_ONCE_ACKID_FAILURE",
        domain="pubsub.googleapis.com",
        metadata=dict.fromkeys(stale, "PERMANENT_FAILURE_INVALID_ACK_ID"),
    )
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, EXACTLY_ONCE_FAILURE, (info,))


def _fill(out: Any, got: list[Delivered], attempts: bool, messages: Any = None) -> None:
    """ReceivedMessages for what a pull leased (delivery_attempt only with a
    dead-letter policy, as the service), carrying `messages` when given (what the
    subscription's transforms made of them)."""
    add = out.add
    stamped = None
    batch = None
    for i, d in enumerate(got):
        if messages is not None:
            message = messages[i]
        else:
            if d.batch is not batch:
                batch = d.batch
                stamped = batch.stamped()
            assert stamped is not None
            message = stamped[d.index]
        if attempts:
            add(ack_id=d.ack_id, message=message, delivery_attempt=d.attempt)
        else:
            add(ack_id=d.ack_id, message=message)


class PullStream:
    """One StreamingPull stream: delivers within the client's flow control
    (max_outstanding_messages / _bytes) with the stream's ack deadline, and takes acks,
    nacks and deadline changes from the client's later requests. A request the
    service would abort the stream for (an ack ID that is not one, or names another
    subscription; a negative deadline; deadlines and ack IDs of different sizes)
    ends it with that status. With exactly-once delivery each request's acks and
    deadline changes are confirmed on the stream (`AcknowledgeConfirmation`,
    `ModifyAckDeadlineConfirmation`: which ack IDs settled something, which not)."""

    def __init__(self, service: SubscriberService, sub: Any, first: Any) -> None:
        self.service = service
        self.subs = service.subs
        self.name = sub.name
        self.sub = sub
        self.deadline = float(first.stream_ack_deadline_seconds)
        self.max_messages = first.max_outstanding_messages or MAX_PULL_MESSAGES
        self.max_bytes = first.max_outstanding_bytes
        self._delivered: dict[int, int] = {}  # msg id -> bytes, outstanding on this stream
        self._lock = threading.Lock()
        self._confirmations: list[Any] = []  # StreamingPullResponses not yet sent
        self.failed: ServiceError | None = None
        self.closed = threading.Event()

    def receive(self, request: Any) -> None:
        """A request from the client (the first included): acks and deadline changes.
        One the service would abort the stream for ends it (`failed`)."""
        if self.failed is not None:
            return
        try:
            self._receive(request)
        except ServiceError as err:
            self.fail(err)

    def fail(self, error: ServiceError) -> None:
        """End the stream with `error` (its responses raise it)."""
        if self.failed is None:
            self.failed = error
        self.end()

    def _receive(self, request: Any) -> None:
        if request.stream_ack_deadline_seconds:
            seconds = request.stream_ack_deadline_seconds
            if MIN_ACK_DEADLINE_S <= seconds <= MAX_ACK_DEADLINE_S:
                self.deadline = float(seconds)
        confirm = self.sub.enable_exactly_once_delivery
        if request.ack_ids:
            outcome = self.subs.ack(self.name, self.service.ack_ids(self.name, request.ack_ids))
            if outcome is None:
                raise not_found("Subscription does not exist")
            settled, stale = outcome
            self._forget(settled)
            if confirm:
                self._confirm(
                    acknowledge_confirmation=protos.StreamingPullResponse.AcknowledgeConfirmation(
                        ack_ids=_others(request.ack_ids, stale), invalid_ack_ids=stale
                    )
                )
        if request.modify_deadline_ack_ids or request.modify_deadline_seconds:
            sent, deadlines = request.modify_deadline_ack_ids, request.modify_deadline_seconds
            if len(sent) != len(deadlines):
                raise invalid("ack IDs and deadlines must have the same size")
            if any(seconds < 0 for seconds in deadlines):
                raise invalid("Ack deadline cannot be negative")
            parsed = self.service.ack_ids(self.name, sent)
            by_seconds: dict[int, list[int]] = {}
            for i, seconds in enumerate(deadlines):
                by_seconds.setdefault(min(seconds, MAX_ACK_DEADLINE_S), []).append(i)
            failed: list[str] = []
            for seconds, indexes in by_seconds.items():
                outcome = self.subs.modify(self.name, parsed.only(indexes), seconds)
                if outcome is None:
                    raise not_found("Subscription does not exist")
                if seconds == 0:
                    self._forget(outcome[0])
                failed += outcome[1]
            if confirm:
                self._confirm(
                    modify_ack_deadline_confirmation=(
                        protos.StreamingPullResponse.ModifyAckDeadlineConfirmation(
                            ack_ids=_others(sent, failed), invalid_ack_ids=failed
                        )
                    )
                )

    def _confirm(self, **fields: Any) -> None:
        with self._lock:
            self._confirmations.append(protos.StreamingPullResponse(**fields))
        self.subs.wake(self.name)

    def end(self) -> None:
        """The client half-closed or went away."""
        self.closed.set()
        self.subs.wake(self.name)

    def _forget(self, ids: list[int]) -> None:
        with self._lock:
            for msg_id in ids:
                self._delivered.pop(msg_id, None)
        self.subs.wake(self.name)

    def _interrupted(self) -> bool:
        """Whether a waiting pull should return: the stream ended, or confirmations
        wait to be sent."""
        return self.closed.is_set() or bool(self._confirmations)

    def _room(self) -> tuple[int, int]:
        """(messages, bytes) the client's flow control still allows (bytes 0: no byte
        limit). Acks sent by unary Acknowledge (as the Python client sends them) are
        seen through the leases."""
        with self._lock:
            if len(self._delivered) >= self.max_messages or (
                self.max_bytes and sum(self._delivered.values()) >= self.max_bytes
            ):
                gone = [i for i in self._delivered if not self.subs.is_leased(self.name, i)]
                for msg_id in gone:
                    del self._delivered[msg_id]
            left = self.max_messages - len(self._delivered)
            if not self.max_bytes:
                return left, 0
            return left, self.max_bytes - sum(self._delivered.values())

    def responses(self, active: Callable[[], bool]) -> Iterator[Any]:
        """StreamingPullResponses until the client ends the stream, a request of the
        client fails it, or the server stops."""
        properties = protos.StreamingPullResponse.SubscriptionProperties(
            exactly_once_delivery_enabled=self.sub.enable_exactly_once_delivery,
            message_ordering_enabled=self.sub.enable_message_ordering,
        )
        attempts = self.sub.HasField("dead_letter_policy")
        while active():
            if self.failed is not None:
                raise self.failed
            if self.closed.is_set():
                return
            if self.subs.stopping.is_set():
                raise unavailable("local server is stopping")
            config = self.subs.raw(self.name) or self.sub
            check_runnable(config.message_transforms)
            with self._lock:
                confirmations, self._confirmations = self._confirmations, []
            for response in confirmations:
                response.subscription_properties.CopyFrom(properties)
                yield response
            left, room = self._room()
            if left <= 0 or (self.max_bytes and room <= 0):
                self.subs.wait_change(self.name, STREAM_POLL_S)  # until acks make room
                continue
            got = self.subs.pull(
                self.name,
                min(left, MAX_PULL_MESSAGES),
                ack_deadline=self.deadline,
                wait=STREAM_POLL_S,
                max_bytes=room,
                cancelled=self._interrupted,
            )
            if got is None:
                raise not_found("Subscription does not exist")
            got, messages = at_delivery(
                config.message_transforms, got, *self.service.settlers(self.name, config)
            )
            if not got:
                continue
            with self._lock:
                for d in got:
                    self._delivered[d.batch.first_id + d.index] = d.batch.size(d.index)
            response = protos.StreamingPullResponse(subscription_properties=properties)
            _fill(response.received_messages, got, attempts, messages)
            yield response


def _others(sent: Any, stale: list[str]) -> list[str]:
    """The ack IDs sent that are not among the `stale` ones, once each."""
    unsettled = set(stale)
    return list(dict.fromkeys(text for text in sent if text not in unsettled))
