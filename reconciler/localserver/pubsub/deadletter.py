"""Dead-letter policies as the service applies them: what a policy must name, the
message a forward publishes to the dead-letter topic, where that publish lands, the
thread that forwards what nobody pulls again, and the subscriptions' attempts
(`DeadLetters`, owned by `subscriptions.Subscriptions`).

The facts (Google Cloud's "Handle message failures" page,
https://cloud.google.com/pubsub/docs/handling-failures, and the `DeadLetterPolicy`
comments of `google/pubsub/v1/pubsub.proto`; docs/local-server.md):
- delivery attempts are 1 + the nacks (ModifyAckDeadline to 0) + the expired ack
  deadlines of a message, counted only while the subscription has a dead-letter
  policy; `max_delivery_attempts` is 5 to 100, 0 meaning the default of 5;
- after its last allowed attempt a message is published to the dead-letter topic
  with its data, attributes and ordering key, plus the attributes below, and
  acknowledged on the source subscription;
- the forward is a publish to the dead-letter topic like any other: its message
  storage policy (from the region the source message is stored in), in-transit
  enforcement and schema apply. What the service does when they refuse it is not
  documented; here the message stays in the source subscription, is delivered again
  and each later failure tries the forward anew (logged each time).

Durability: a pull of a subscription with a policy journals the attempts it hands
out (`DELIVERY_ATTEMPTS`, durable before the reply), and a forward is one record
(`DEAD_LETTERED`: the publish and the source's acknowledgement, so a crash keeps both
or neither; `records` encodes both). After a restart a message handed out before it
counts that delivery as failed, as an expired deadline would.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import grpc

from reconciler.localserver.api import protos
from reconciler.localserver.api.names import parse_topic
from reconciler.localserver.api.status import ServiceError, not_found
from reconciler.localserver.persistence import journal as j
from reconciler.localserver.persistence.journal import StateWriteError
from reconciler.localserver.pubsub.backlog import Backlog, Batch, Delivered
from reconciler.localserver.pubsub.journaled import Writes
from reconciler.localserver.pubsub.records import decode_attempts, encode_attempts
from reconciler.localserver.schemas.settings import has_schema, validate_request
from reconciler.orgpolicy.publishing import Refusal, land

log = logging.getLogger(__name__)

# The attributes the service adds to a forwarded message ("Handle message failures").
DELIVERY_COUNT = "CloudPubSubDeadLetterSourceDeliveryCount"
SOURCE_SUBSCRIPTION = "CloudPubSubDeadLetterSourceSubscription"
SOURCE_PROJECT = "CloudPubSubDeadLetterSourceSubscriptionProject"
SOURCE_PUBLISH_TIME = "CloudPubSubDeadLetterSourceTopicPublishTime"
# Added when the message's last attempt failed in the subscription's message transforms
# (Pub/Sub's "Troubleshooting a subscription with SMTs"; its text is not public).
SMT_ERROR = "CloudPubSubDeadLetterSourceSMTErrorMessage"

MIN_ATTEMPTS = 5
MAX_ATTEMPTS = 100
DEFAULT_ATTEMPTS = 5

# ------------------------------------------------------------------ the policy


def check_attempts(policy: Any) -> None:
    """OUT_OF_RANGE for a max_delivery_attempts outside 5..100 (0 is the default), in
    the words of Google's emulator."""
    attempts = policy.max_delivery_attempts
    if attempts == 0 or MIN_ATTEMPTS <= attempts <= MAX_ATTEMPTS:
        return
    if attempts < MIN_ATTEMPTS:
        size, bound, which = "small", MIN_ATTEMPTS, "minimum"
    else:
        size, bound, which = "large", MAX_ATTEMPTS, "maximum"
    raise ServiceError(
        grpc.StatusCode.OUT_OF_RANGE,
        f"The value for max_delivery_attempts is too {size}. You passed {attempts} in the "
        f"request, but the {which} value is {bound}.",
    )


def settle_policy(sub: Any, topic_exists: Callable[[str], bool], *, created: bool) -> None:
    """Make `sub`'s dead-letter policy what the service stores (under the write lock:
    the topic must exist now): 0 attempts read 5; a policy naming no topic is
    NOT_FOUND on a create (as Google's emulator answers) and, on an update that
    cleared both of its fields (the "remove dead-letter policy" sample's mask), no
    policy at all."""
    if not sub.HasField("dead_letter_policy"):
        return
    policy = sub.dead_letter_policy
    check_attempts(policy)
    if not policy.dead_letter_topic and not policy.max_delivery_attempts and not created:
        sub.ClearField("dead_letter_policy")
        return
    name = policy.dead_letter_topic
    try:
        parse_topic(name)
    except ServiceError:
        raise not_found("Dead letter topic not found") from None
    if not topic_exists(name):
        raise not_found("Dead letter topic not found")
    if not policy.max_delivery_attempts:
        policy.max_delivery_attempts = DEFAULT_ATTEMPTS


def max_attempts(sub: Any) -> int:
    """The attempts a message gets before it is forwarded; 0 without a policy."""
    if not sub.HasField("dead_letter_policy") or not sub.dead_letter_policy.dead_letter_topic:
        return 0
    return sub.dead_letter_policy.max_delivery_attempts or DEFAULT_ATTEMPTS


# ------------------------------------------------------------------ a forward

Exhausted = tuple[int, tuple[Batch, int, int]]  # message ID, (batch, index, attempts)


@dataclass
class Forward:
    """Messages of one source subscription published to the dead-letter topic in
    one request, stored in `region`."""

    region: str
    ids: list[int] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)

    def request(self, topic: str) -> bytes:
        return bytes(protos.PublishRequest(topic=topic, messages=self.messages).SerializeToString())


def _publish_time_text(publish_ns: int) -> str:
    """The source message's publish time as the attribute carries it (RFC 3339 in
    UTC with milliseconds, as Google's emulator writes it)."""
    stamp = datetime.fromtimestamp(publish_ns // 1_000_000_000, tz=UTC)
    millis = publish_ns // 1_000_000 % 1000
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def forwarded_message(
    source: str, batch: Batch, index: int, attempts: int, smt_error: str | None = None
) -> Any:
    """The message a forward publishes: the source message's data, attributes and
    ordering key, and the attributes that say where it comes from (and why its
    subscription's transforms failed on it, when they did on its last attempt)."""
    original = batch.stamped()[index]
    _, project, _, sub_id = source.split("/", 3)
    message = protos.PubsubMessage(
        data=original.data, attributes=original.attributes, ordering_key=original.ordering_key
    )
    message.attributes[DELIVERY_COUNT] = str(attempts)
    message.attributes[SOURCE_SUBSCRIPTION] = sub_id
    message.attributes[SOURCE_PROJECT] = project
    message.attributes[SOURCE_PUBLISH_TIME] = _publish_time_text(batch.publish_ns)
    if smt_error is not None:
        message.attributes[SMT_ERROR] = smt_error
    return message


_REFUSAL_TEXT = {
    Refusal.NO_REGION: "its message storage policy allows no region",
    Refusal.IN_TRANSIT: "its message storage policy enforces in-transit regions and does not "
    "allow the region the message is stored in ({region})",
    Refusal.ORDERING: "the message has an ordering key and its message storage policy does "
    "not allow the region the message is stored in ({region})",
}


def plan_forwards(
    source: str,
    topic_name: str,
    topic: Any | None,
    held: list[Exhausted],
    revisions_of: Any,
    smt_errors: dict[int, str] | None = None,
) -> tuple[list[tuple[Forward, bytes]], list[int]]:
    """Where the exhausted messages of `source` go: the forwards (each with its
    request's bytes, as a Publish to the dead-letter `topic` would store them), and
    the IDs whose forward is refused (logged with the reason: no such topic, its
    storage policy, its schema). `smt_errors`: why the transforms failed on a
    message's last attempt, by message ID."""
    errors = smt_errors or {}
    if topic is None:
        _refused(source, topic_name, [i for i, _ in held], "it does not exist")
        return [], [i for i, _ in held]
    allowed = None
    enforce = False
    if topic.HasField("message_storage_policy"):
        allowed = list(topic.message_storage_policy.allowed_persistence_regions)
        enforce = topic.message_storage_policy.enforce_in_transit
    by_region: dict[str, Forward] = {}
    refused: list[int] = []
    for msg_id, (batch, index, attempts) in held:
        message = forwarded_message(source, batch, index, attempts, errors.get(msg_id))
        landing = land(batch.region, allowed, enforce_in_transit=enforce,
                       ordering=bool(message.ordering_key))
        if landing.stored is None:
            why = _REFUSAL_TEXT[landing.refusals[0]].format(region=batch.region)
            _refused(source, topic.name, [msg_id], why)
            refused.append(msg_id)
            continue
        forward = by_region.setdefault(landing.stored, Forward(landing.stored))
        forward.ids.append(msg_id)
        forward.messages.append(message)
    out = []
    for forward in by_region.values():
        if has_schema(topic):  # each message is checked on its own, as it is forwarded alone
            forward, refused_here = _schema_checked(source, topic, forward, revisions_of)
            refused += refused_here
            if not forward.ids:
                continue
        out.append((forward, forward.request(topic.name)))
    return out, refused


def _schema_checked(
    source: str, topic: Any, forward: Forward, revisions_of: Any
) -> tuple[Forward, list[int]]:
    """The forward's messages the dead-letter topic's schema accepts (tagged with the
    revision that accepts each, as a Publish stores them), and the IDs it refuses."""
    kept = Forward(forward.region)
    refused = []
    for msg_id, message in zip(forward.ids, forward.messages, strict=True):
        alone = Forward(forward.region, [msg_id], [message])
        try:
            raw = validate_request(topic, revisions_of, alone.request(topic.name))
        except ServiceError as err:
            _refused(source, topic.name, [msg_id], f"its schema refuses it: {err.message}")
            refused.append(msg_id)
            continue
        kept.ids.append(msg_id)
        kept.messages.extend(protos.PublishRequest.FromString(raw).messages)
    return kept, refused


def _refused(source: str, topic: str, ids: list[int], why: str) -> None:
    log.warning(
        "local server: %s: %d message(s) (IDs %s) used up their delivery attempts but "
        "cannot be forwarded to %s: %s; they stay in the subscription and are delivered "
        "again", source, len(ids), ", ".join(map(str, ids[:10])), topic, why,
    )


# ------------------------------------------------------------------ the sweeper


class Sweeper:
    """Forwards what used up its attempts without waiting for a pull: one daemon
    thread per server, started with its first subscription that has a dead-letter
    policy. `sweep()` (the state's) releases expired deadlines of those
    subscriptions, forwards what is exhausted and returns the next deadline
    (monotonic seconds) or None; `poke()` runs it again at once (a nack, a new
    lease). Its lock is a leaf: poke() may be called under the state's locks."""

    def __init__(self, sweep: Callable[[], float | None], stopping: threading.Event) -> None:
        self._sweep = sweep
        self._stopping = stopping
        self._cond = threading.Condition(threading.Lock())
        self._poked = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and not self._stopping.is_set():
            self._thread = threading.Thread(
                target=self._run, name="local-server-dead-letters", daemon=True
            )
            self._thread.start()

    def poke(self) -> None:
        if self._thread is None:
            return
        with self._cond:
            self._poked = True
            self._cond.notify()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                due = self._sweep()
            except StateWriteError as exc:  # the disk refused a forward: nothing changed
                log.warning("local server: dead-letter forward not made (%s); retrying", exc)
                due = time.monotonic() + 1.0
            except Exception:  # a bug: said once per round, and the server goes on
                log.exception("local server: dead-letter forwarding failed")
                due = time.monotonic() + 1.0
            with self._cond:
                if not self._poked and not self._stopping.is_set():
                    self._cond.wait(None if due is None else max(0.0, due - time.monotonic()))
                self._poked = False


# ------------------------------------------------------------------ the bookkeeping


class State(Writes, Protocol):
    """What the dead letters need of the server state besides its writes."""

    def get_topic(self, name: str) -> Any | None: ...
    def schema_revisions(self, name: str) -> list[Any] | None: ...


class Sources(Protocol):
    """What the dead letters need of the subscriptions (`subscriptions.Subscriptions`,
    which owns them), called under the state's `lock`."""

    def backlog(self, name: str) -> Backlog | None: ...
    def raw(self, name: str) -> Any | None: ...
    def wake(self, name: str) -> None: ...
    def dead_lettered(
        self, source: str, topic_name: str, topic: Any, forward: Forward, raw: bytes
    ) -> None: ...


class DeadLetters:
    """The subscriptions with a dead-letter policy, under the state's locks: their
    delivery attempts (counted in each backlog, journaled by a pull, replayed) and
    the `Sweeper` that forwards what used up its attempts."""

    def __init__(self, state: State, subs: Sources, stopping: threading.Event) -> None:
        self.state = state
        self.subs = subs
        self._counting: set[str] = set()  # subscriptions with a policy
        self._replayed: dict[str, dict[int, int]] = {}  # applied once loaded
        # Why the transforms failed on a message's last attempt (in memory: after a
        # restart the next attempt runs them again), by subscription and message ID.
        self._smt_errors: dict[str, dict[int, str]] = {}
        self._ready = False
        self._stopping = stopping
        self.sweeper = Sweeper(self._sweep, stopping)

    def track(self, name: str, backlog: Backlog, config: Any) -> None:
        """Under `lock`, as a subscription's config is stored: its attempts are
        counted while it has a policy."""
        backlog.set_max_attempts(max_attempts(config))
        if backlog.max_attempts:
            self._counting.add(name)
            if self._ready:
                self.sweeper.start()
                self.sweeper.poke()
        else:
            self._counting.discard(name)
            self._smt_errors.pop(name, None)  # no forward will carry them

    def forget(self, name: str) -> None:
        """Under `lock`: the subscription is gone."""
        self._counting.discard(name)
        self._replayed.pop(name, None)
        self._smt_errors.pop(name, None)

    def smt_failed(
        self, name: str, failed: list[tuple[Delivered, str]], passed: list[Delivered]
    ) -> None:
        """A delivery's transforms failed on `failed` (why, each) and passed `passed`:
        what a forward of each says (`SMT_ERROR`) if its next nack is its last."""
        with self.state.lock:
            if name not in self._counting:
                return
            errors = self._smt_errors.setdefault(name, {})
            for d in passed:
                errors.pop(d.batch.first_id + d.index, None)
            for d, why in failed:
                errors[d.batch.first_id + d.index] = why
            if not errors:
                del self._smt_errors[name]

    def reset(self, name: str) -> None:
        """Under `lock`, while the journal is replayed: the attempts replayed so far
        are for messages a detach or a Seek reset."""
        self._replayed.pop(name, None)

    def handed_out(self, name: str, got: list[Delivered]) -> None:
        """After a pull leased `got`: with a policy, the attempts handed out are
        durable before the reply."""
        state = self.state
        if not got or not state.durable or name not in self._counting:
            return
        handed = [(d.batch.first_id + d.index, d.attempt) for d in got]
        with state.wlock:
            ticket = state.write_grouped([(j.DELIVERY_ATTEMPTS, name, encode_attempts(handed))])
        state.sync_grouped(ticket, lambda: None)

    def replay_attempts(self, name: str, value: bytes) -> None:
        """A DELIVERY_ATTEMPTS record, kept until the state is loaded."""
        counts = self._replayed.setdefault(name, {})
        for msg_id, count in decode_attempts(value):
            counts[msg_id] = max(counts.get(msg_id, 0), count)

    def loaded(self) -> None:
        """The journal is replayed: the backlogs get their replayed attempts."""
        for name, counts in self._replayed.items():
            backlog = self.subs.backlog(name)
            if backlog is not None:
                backlog.set_attempts(counts)
        self._replayed.clear()

    def records(self) -> Iterator[j.Record]:
        """The attempts of every subscription with a policy, for a snapshot."""
        for name in self._counting:
            backlog = self.subs.backlog(name)
            counts = backlog.attempt_counts() if backlog is not None else None
            if counts:
                yield j.DELIVERY_ATTEMPTS, name, encode_attempts(counts)

    def ready(self) -> None:
        """The state is loaded (and its journal open): forwarding may start."""
        with self.state.lock:
            self._ready = True
            if self._counting:
                self.sweeper.start()
                self.sweeper.poke()

    def watch(self, backlog: Backlog) -> None:
        """Under `lock`, after a backlog changed: the sweeper forwards what is
        exhausted and waits for the deadlines of subscriptions with a policy."""
        if backlog.max_attempts:
            self.sweeper.poke()

    def _sweep(self) -> float | None:
        """The sweeper's round."""
        state = self.state
        due: float | None = None
        with state.lock:
            now = time.monotonic()
            exhausted = []
            for name in self._counting:
                backlog = self.subs.backlog(name)
                if backlog is None:
                    continue
                backlog.release_expired(now)
                if backlog.exhausted:
                    exhausted.append(name)
                deadline = backlog.next_deadline()
                if deadline is not None and (due is None or deadline < due):
                    due = deadline
        for name in exhausted:
            with state.wlock:
                if self._stopping.is_set():
                    return None
                self._forward(name)
        return due

    def _forward(self, name: str) -> None:
        """Under `wlock`: forward the subscription's exhausted messages to its
        dead-letter topic (one DEAD_LETTERED record per request, durable first)."""
        state = self.state
        with state.lock:
            backlog = self.subs.backlog(name)
            config = self.subs.raw(name)
            if backlog is None or config is None or not backlog.exhausted:
                return
            held = list(backlog.exhausted.items())
            errors = self._smt_errors.get(name, {})
            smt_errors = {i: errors.pop(i) for i, _ in held if i in errors}
        topic_name = config.dead_letter_policy.dead_letter_topic
        topic = state.get_topic(topic_name)
        forwards, refused = plan_forwards(
            name, topic_name, topic, held, state.schema_revisions, smt_errors
        )
        if refused:
            with state.lock:
                backlog.unexhaust(refused)
                self.subs.wake(name)
        for forward, raw in forwards:
            self.subs.dead_lettered(name, topic_name, topic, forward, raw)
