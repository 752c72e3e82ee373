"""Subscriptions and messages in the server state: configs, per-subscription backlogs
(`backlog.Backlog`), the per-topic log of recent messages, and their journal records.

Durability (state format 3): subscription changes are admin changes (durable before
visible, like topics). A Publish is journaled as received (the request's bytes, its
first message ID, publish time, persistence region and the subscriptions that
receive it) and an Acknowledge as the message IDs it acknowledged; both are fsynced
before the reply (group commit) and applied after, so an acknowledged publish or ack
survives a kill -9. Leases (ack deadlines) are not journaled: after a restart every
unacknowledged message is delivered again at once, as if its deadline had passed
(at-least-once, as the service), and the ack IDs handed out before it name deliveries
that no longer exist (`ackids`). Compaction writes each batch still held by some
subscription once, then each subscription's unacked and retained acked message IDs.

Bounds: each subscription holds at most `max_backlog` unacknowledged messages and
none older than its message_retention_duration; the per-topic log holds the last
`keep_messages` (what `LocalServer.messages` shows). A batch is freed when no
subscription and no topic log refers to it.

Filters: a subscription with a filter (`filters`) receives every message of the
topic, and those the filter excludes are acknowledged on arrival (at their publish
time), as the service acknowledges them on the subscriber's behalf: they are never
delivered, count in no unacknowledged figure, and with retain_acked_messages are
retained acked. Replaying a PUBLISH applies the same filter (it cannot change) again.

Dead-letter policies (`deadletter.DeadLetters`): attempts are counted in the backlog
while a subscription has one; a pull journals the attempts it hands out; messages
that used up theirs are forwarded by the `deadletter.Sweeper` thread, journaled as
one record. Snapshots and Seek: `snapshotstore.SnapshotStore`.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from reconciler.errors import InputError
from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import page_after
from reconciler.localserver.persistence import journal as j
from reconciler.localserver.pubsub import ackids, deadletter
from reconciler.localserver.pubsub.ackids import AckIds
from reconciler.localserver.pubsub.backlog import Backlog, BacklogStats, Batch, Delivered, Ref
from reconciler.localserver.pubsub.filters import Filter, FilterError, compile_filter
from reconciler.localserver.pubsub.journaled import Writes
from reconciler.localserver.pubsub.limits import DEFAULT_SUBSCRIPTION_RETENTION_S, duration_seconds
from reconciler.localserver.pubsub.messages import DEFAULT_MAX_BACKLOG, MessageLog
from reconciler.localserver.pubsub.records import (
    decode_ack,
    decode_backlog,
    decode_forward,
    decode_next_id,
    decode_publish,
    encode_ack,
    encode_backlog,
    encode_forward,
    encode_next_id,
    encode_publish,
)
from reconciler.localserver.pubsub.snapshotstore import SnapshotStore
from reconciler.localserver.pubsub.subindex import DELETED_TOPIC, SubscriptionIndex

log = logging.getLogger(__name__)


class ServerState(Writes, Protocol):
    """What subscriptions need of the server state (`state.ServerState`, which owns
    them) besides its writes. Stated here so that the two modules do not import each
    other."""

    def get_topic(self, name: str) -> Any | None: ...
    def forget_iam_policy(self, name: str) -> None: ...
    def schema_revisions(self, name: str) -> list[Any] | None: ...


class Subscriptions:
    """Owned by `ServerState`, under its locks (`wlock` for changes, `lock` for
    memory); see the module docstring."""

    def __init__(
        self,
        state: ServerState,
        keep_messages: int,
        destination_locations: dict[str, str],
        max_backlog: int = DEFAULT_MAX_BACKLOG,
    ) -> None:
        self.state = state
        self.keep_messages = keep_messages
        self.max_backlog = max_backlog
        self.index = SubscriptionIndex(state, destination_locations)
        self._subs = self.index.configs  # read as is on the hot paths
        self._backlogs: dict[str, Backlog] = {}
        self._filters: dict[str, Filter] = {}  # subscriptions with a filter
        self._conds: dict[str, threading.Condition] = {}
        self._maintained: dict[str, float] = {}
        self._logs: dict[str, MessageLog] = {}
        self._next_id = 1
        self._loading: dict[int, Batch] = {}
        self.snapshots = SnapshotStore(state, self)
        self.stopping = threading.Event()
        self.dead_letters = deadletter.DeadLetters(state, self, self.stopping)

    # ---------------------------------------------------------------- configs

    def _put(self, config: Any) -> None:
        name = config.name
        if self.index.put(config):  # first: a config it refuses changes nothing
            self._conds[name] = threading.Condition(self.state.lock)
        self._put_filter(name, config.filter)
        backlog = self._backlogs.get(name)
        retention = (
            duration_seconds(config.message_retention_duration)
            if config.HasField("message_retention_duration")
            else DEFAULT_SUBSCRIPTION_RETENTION_S
        )
        if backlog is None:
            backlog = self._backlogs[name] = Backlog(
                cap=self.max_backlog,
                retention_s=retention,
                retain_acked=config.retain_acked_messages,
                ack_prefix=ackids.new_prefix(name),
            )
        else:
            backlog.retention_s = retention
            backlog.retain_acked = config.retain_acked_messages
        self.dead_letters.track(name, backlog, config)
        if config.detached:
            self.dead_letters.reset(name)
            backlog.purge()

    def _put_filter(self, name: str, text: str) -> None:
        """Compile the subscription's filter (checked at create; immutable after). One
        stored by a version that did not check filters and that the language does not
        allow keeps every message, as that version delivered them, and says so."""
        self._filters.pop(name, None)
        try:
            compiled = compile_filter(text)
        except FilterError as exc:
            log.warning(
                "local server: %s keeps every message: its stored filter %r is not valid "
                "(%s)", name, text, exc.reason,
            )
            return
        if compiled is not None:
            self._filters[name] = compiled

    def _drop(self, name: str) -> None:
        self.index.drop(name)
        self._backlogs.pop(name, None)
        self.dead_letters.forget(name)
        self._filters.pop(name, None)
        self._maintained.pop(name, None)
        cond = self._conds.pop(name)
        cond.notify_all()  # waiting pulls see it gone
        self.state.forget_iam_policy(name)

    def topic_deleted(self, topic: str) -> None:
        """Under `lock`: the topic's subscriptions stay, pointing at _deleted-topic_;
        its log of recent messages goes; its snapshots name _deleted-topic_ too."""
        self._logs.pop(topic, None)
        self.snapshots.topic_deleted(topic, DELETED_TOPIC)
        self.index.topic_deleted(topic)

    def get(self, name: str) -> Any | None:
        """The stored config with its delivery state as of now (None if missing)."""
        out = protos.Subscription()
        with self.state.lock:
            return out if self.index.view_into(name, out) else None

    def raw(self, name: str) -> Any | None:
        """The config as stored (no computed fields)."""
        with self.state.lock:
            return self._subs.get(name)

    def create(self, name: str, build: Any) -> Any | None:
        """Store `build()` (run under `wlock`: it checks the topic) unless `name`
        exists (then None)."""
        state = self.state
        with state.wlock:
            if name in self._subs:
                return None
            config = build()
            state.commit((j.PUT_SUBSCRIPTION, name, config.SerializeToString()))
            with state.lock:
                self._put(config)
            state.maybe_compact()
        return self.get(name)

    def update(self, name: str, change: Any) -> Any | None:
        state = self.state
        with state.wlock:
            current = self._subs.get(name)
            if current is None:
                return None
            config = change(current)
            state.commit((j.PUT_SUBSCRIPTION, name, config.SerializeToString()))
            with state.lock:
                self._put(config)
            self.settle_exports(config.topic)
            state.maybe_compact()
        return self.get(name)

    def delete(self, name: str) -> bool:
        state = self.state
        with state.wlock:
            if name not in self._subs:
                return False
            state.commit((j.DELETE_SUBSCRIPTION, name, b""))
            with state.lock:
                self._drop(name)
            state.maybe_compact()
        return True

    def detach(self, name: str) -> bool:
        """Detach from the topic: no more messages, the backlog dropped."""
        state = self.state
        with state.wlock:
            current = self._subs.get(name)
            if current is None:
                return False
            config = protos.Subscription()
            config.CopyFrom(current)
            config.detached = True
            state.commit((j.DETACH_SUBSCRIPTION, name, config.SerializeToString()))
            with state.lock:
                self._put(config)
                self._conds[name].notify_all()
            state.maybe_compact()
        return True

    def list_page(self, project: str, after: str, limit: int) -> tuple[bytes, str]:
        """A page of the project's subscriptions (as `get` answers them), serialized as
        the `subscriptions` of a ListSubscriptionsResponse, in one hold of the lock;
        the last name listed when more follow, else ""."""
        with self.state.lock:
            return self.index.page(project, after, limit)

    def names_in_project(self, project: str) -> list[str]:
        with self.state.lock:
            return self.index.in_project(project)

    def list_topic(self, topic: str, after: str, limit: int) -> tuple[list[str], str]:
        with self.state.lock:
            return page_after(self.index.attached(topic), after, limit)

    # ------------------------------------------------------------ exports and push

    def settle_exports(self, topic_name: str) -> None:
        """Under `wlock`: export and push subscriptions of the topic that are ACTIVE
        deliver what they held while paused (journaled as acknowledged)."""
        state = self.state
        topic = state.get_topic(topic_name)
        now_ns = time.time_ns()
        for name in self.index.delivering(topic_name, topic):
            backlog = self._backlogs[name]
            with state.lock:
                ids = sorted(b.first_id + i for b, i in backlog.unacked_refs())
            if not ids:
                continue
            state.commit((j.ACK, name, encode_ack(now_ns, ids)))
            with state.lock:
                backlog.ack(ids, now_ns)

    def set_location(self, key: str, location: str | None) -> None:
        """Declare (None: forget) where an export or push destination is."""
        with self.state.wlock:
            self.index.set_location(key, location)
            for topic in self.index.topics_attached():
                self.settle_exports(topic)

    # -------------------------------------------------------------------- publish

    def publish(
        self,
        topic_name: str,
        raw: bytes,
        count: int,
        place: Callable[[Any], str],
        reserve: int = 0,
    ) -> tuple[int, str] | None:
        """Store a checked Publish request of `count` messages, given as its bytes
        (durable first), in the region `place(topic)` names (it raises to refuse them;
        called under the write lock, so the topic's storage policy cannot change
        between the decision and the write); (the first of their consecutive IDs,
        that region), or None when the topic does not exist. `reserve` more IDs
        follow them, never stored (the IDs of messages a topic's transform filtered):
        a NEXT_MESSAGE_ID record keeps them from being reused after a restart."""
        state = self.state
        with state.wlock:
            topic = state.get_topic(topic_name)
            if topic is None:
                return None
            region = place(topic)
            receivers = self.index.receivers(topic_name, topic)
            first = self._next_id
            self._next_id += count + reserve
            publish_ns = time.time_ns()
            ticket = 0
            if state.durable:
                records: list[j.Record] = []
                if count:
                    head = encode_publish(first, publish_ns, region, receivers)
                    records.append((j.PUBLISH, topic_name, head + raw))
                if reserve:
                    records.append((j.NEXT_MESSAGE_ID, "", encode_next_id(self._next_id)))
                ticket = state.write_grouped(records)
        if not count:
            state.sync_grouped(ticket, lambda: None)
            return first, region
        batch = Batch(topic_name, first, publish_ns, region, raw, count)
        state.sync_grouped(ticket, lambda: self._deliver(batch, receivers))
        return first, region

    def _deliver(self, batch: Batch, receivers: list[str]) -> None:
        log = self._logs.get(batch.topic)
        if log is None:
            log = self._logs[batch.topic] = MessageLog(self.keep_messages)
        log.add(batch)
        self.snapshots.index.receive(batch)
        for name in receivers:
            backlog = self._backlogs.get(name)
            if backlog is None or self._subs[name].detached:
                continue
            flt = self._filters.get(name)
            if flt is None:
                backlog.add(batch)
            else:
                keep = [flt.matches(m.attributes) for m in batch.stamped()]
                backlog.add_filtered(batch, keep)
                if not any(keep):
                    continue
            self._conds[name].notify_all()

    def topic_messages(self, topic: str) -> list[Any]:
        log = self._logs.get(topic)
        return log.stored() if log is not None else []

    def topic_message_count(self, topic: str) -> int:
        log = self._logs.get(topic)
        return log.count if log is not None else 0

    # ----------------------------------------------------------------------- pull

    def _maintain(self, name: str, backlog: Backlog, now: float) -> None:
        backlog.release_expired(now)
        self.dead_letters.watch(backlog)
        if now - self._maintained.get(name, 0.0) >= 1.0:
            self._maintained[name] = now
            backlog.expire(time.time_ns())

    def pull(
        self,
        name: str,
        max_messages: int,
        *,
        ack_deadline: float,
        wait: float,
        max_bytes: int = 0,
        cancelled: Any = None,
    ) -> list[Delivered] | None:
        """Lease up to `max_messages`, waiting up to `wait` seconds for the first;
        None when the subscription does not exist (or went away meanwhile). With a
        dead-letter policy the attempts handed out are durable before the reply."""
        got = self._lease(name, max_messages, ack_deadline, wait, max_bytes, cancelled)
        if got:
            self.dead_letters.handed_out(name, got)
        return got

    def _lease(
        self,
        name: str,
        max_messages: int,
        ack_deadline: float,
        wait: float,
        max_bytes: int,
        cancelled: Any,
    ) -> list[Delivered] | None:
        with self.state.lock:
            backlog = self._backlogs.get(name)
            if backlog is None:
                return None
            cond = self._conds[name]
            end = time.monotonic() + wait
            while True:
                now = time.monotonic()
                self._maintain(name, backlog, now)
                got = backlog.take(max_messages, now + ack_deadline, max_bytes)
                if got:
                    self.dead_letters.watch(backlog)  # a new deadline the sweeper waits for
                if got or now >= end or self.stopping.is_set():
                    return got
                if cancelled is not None and cancelled():
                    return got
                step = min(end - now, 1.0)
                nxt = backlog.next_deadline()
                if nxt is not None:
                    step = max(0.0, min(step, nxt - now))
                cond.wait(step)
                if self._backlogs.get(name) is not backlog:
                    return None

    def wait_change(self, name: str, timeout: float) -> None:
        """Wait until the subscription changes (an arrival, an ack, a nack) or `timeout`."""
        with self.state.lock:
            cond = self._conds.get(name)
            if cond is not None and not self.stopping.is_set():
                cond.wait(timeout)

    def wake(self, name: str) -> None:
        with self.state.lock:
            cond = self._conds.get(name)
            if cond is not None:
                cond.notify_all()

    def stop(self) -> None:
        """Wake every waiting pull and the sweeper: the server is stopping."""
        self.stopping.set()
        self.dead_letters.sweeper.poke()
        with self.state.lock:
            for cond in self._conds.values():
                cond.notify_all()

    def ack(self, name: str, ack_ids: AckIds) -> tuple[list[int], list[str]] | None:
        """Acknowledge the deliveries these ack IDs name while their lease holds
        (durable before the reply: the message IDs are journaled, and replayed as
        they are); (the message IDs settled, the ack IDs that name no such delivery
        and change nothing: `Backlog.current`); None when the subscription is gone."""
        state = self.state
        now_ns = time.time_ns()
        with state.wlock:
            with state.lock:
                backlog = self._backlogs.get(name)
                if backlog is None:
                    return None
                ids, stale = backlog.current(ack_ids, time.monotonic())
                self.dead_letters.watch(backlog)
            if not ids:
                return ids, stale
            ticket = state.write_grouped([(j.ACK, name, encode_ack(now_ns, ids))])

        def apply() -> None:
            held = self._backlogs.get(name)
            if held is not None:
                held.ack(ids, now_ns)
                self._conds[name].notify_all()

        state.sync_grouped(ticket, apply)
        return ids, stale

    def modify(
        self, name: str, ack_ids: AckIds, seconds: float
    ) -> tuple[list[int], list[str]] | None:
        """New ack deadlines for the deliveries these ack IDs name while their lease
        holds (memory only: leases do not survive a restart); as `ack` answers."""
        with self.state.lock:
            backlog = self._backlogs.get(name)
            if backlog is None:
                return None
            now = time.monotonic()
            ids, stale = backlog.current(ack_ids, now)
            backlog.modify(ids, seconds, now)
            self.dead_letters.watch(backlog)
            if seconds <= 0:
                self._conds[name].notify_all()
            return ids, stale

    def is_leased(self, name: str, msg_id: int) -> bool:
        with self.state.lock:
            backlog = self._backlogs.get(name)
            return backlog is not None and backlog.is_leased(msg_id)

    # ------------------------------------------------------- dead letters, Seek

    def ready(self) -> None:
        """The state is loaded (and its journal open): forwarding may start."""
        self.dead_letters.ready()

    def backlog(self, name: str) -> Backlog | None:
        """Under `lock`: the subscription's backlog (None if missing)."""
        return self._backlogs.get(name)

    def keeps(self, name: str) -> Callable[[Ref], bool]:
        """Whether the subscription's filter keeps a message (all without a filter)."""
        flt = self._filters.get(name)
        if flt is None:
            return lambda ref: True
        matches = flt.matches
        return lambda ref: matches(ref[0].stamped()[ref[1]].attributes)

    def dead_lettered(
        self, source: str, topic_name: str, topic: Any, forward: deadletter.Forward, raw: bytes
    ) -> None:
        """Under `wlock`: publish `forward` (its request's bytes `raw`) to the
        dead-letter topic and acknowledge its messages on `source`, as one record
        (durable first)."""
        receivers = self.index.receivers(topic_name, topic)
        head = encode_publish(self._next_id, time.time_ns(), forward.region, receivers)
        value = encode_forward(time.time_ns(), forward.ids, topic_name, head + raw)
        self.state.commit((j.DEAD_LETTERED, source, value))
        with self.state.lock:
            self._apply_forward(source, value)

    def _apply_forward(self, source: str, value: bytes) -> None:
        """Under `lock`: a DEAD_LETTERED record (live or replayed)."""
        ack_ns, ids, topic, publish = decode_forward(value)
        first, publish_ns, region, receivers, raw = decode_publish(publish)
        count = len(protos.WirePublishRequest.FromString(raw).messages)
        self._next_id = max(self._next_id, first + count)
        batch = Batch(topic, first, publish_ns, region, raw, count)
        self._deliver(batch, [r for r in receivers if r in self._subs])
        backlog = self._backlogs.get(source)
        if backlog is not None:
            backlog.ack(ids, ack_ns)

    # ------------------------------------------------------------------ read API

    def subscription_stats(self, name: str) -> BacklogStats | None:
        """Per region: unacked and retained-acked counts, bytes, oldest publish time."""
        with self.state.lock:
            backlog = self._backlogs.get(name)
            return backlog.stats() if backlog is not None else None

    def topic_stats(self, topic: str) -> BacklogStats:
        """The same across every subscription attached to the topic."""
        out = BacklogStats()
        with self.state.lock:
            for name in self.index.attached(topic):
                out.merge(self._backlogs[name].stats())
        return out

    def names(self) -> list[str]:
        with self.state.lock:
            return sorted(self._subs)

    # ------------------------------------------------------------ journal replay

    def apply(self, record: j.Record) -> None:
        kind, key, value = record
        if kind == j.PUT_SUBSCRIPTION or kind == j.DETACH_SUBSCRIPTION:
            self._put(protos.Subscription.FromString(value))
        elif kind == j.DELETE_SUBSCRIPTION:
            if key in self._subs:
                self._drop(key)
        elif kind == j.PUBLISH:
            first, publish_ns, region, receivers, raw = decode_publish(value)
            count = len(protos.WirePublishRequest.FromString(raw).messages)
            batch = Batch(key, first, publish_ns, region, raw, count)
            self._next_id = max(self._next_id, first + count)
            if receivers:
                self._deliver(batch, [r for r in receivers if r in self._subs])
            else:
                self._loading[first] = batch  # a snapshot's batch; BACKLOG refers to it
                self.snapshots.index.receive(batch)  # (a compacted state lists them first)
        elif kind == j.ACK:
            now_ns, ids = decode_ack(value)
            backlog = self._backlogs.get(key)
            if backlog is not None:
                backlog.ack(ids, now_ns)
        elif kind == j.NEXT_MESSAGE_ID:
            self._next_id = max(self._next_id, decode_next_id(value))
        elif kind == j.BACKLOG:
            self._restore_backlog(key, value)
        elif kind in (j.PUT_SNAPSHOT, j.SNAPSHOT_CONFIG, j.DELETE_SNAPSHOT, j.SEEK):
            if kind == j.SEEK:
                self.dead_letters.reset(key)
            self.snapshots.apply(record, self._loaded_refs())
        elif kind == j.DELIVERY_ATTEMPTS:
            self.dead_letters.replay_attempts(key, value)
        elif kind == j.DEAD_LETTERED:
            self._apply_forward(key, value)
        else:
            raise InputError(
                f"the local server's state holds a record of unknown kind {kind}",
                hint="it was written by another version of reconcile: use that one",
            )

    def loaded(self) -> None:
        self.dead_letters.loaded()
        self._loading.clear()
        self.snapshots.index.prune(time.time_ns())  # expiry is not journaled: it is a time

    def _loaded_refs(self) -> Callable[[int], Ref | None]:
        """Finds a message of the batches a compacted state lists, by ID."""
        firsts = sorted(self._loading)

        def ref(msg_id: int) -> Ref | None:
            i = bisect.bisect_right(firsts, msg_id) - 1
            if i < 0:
                return None
            batch = self._loading[firsts[i]]
            index = msg_id - batch.first_id
            return (batch, index) if index < len(batch) else None

        return ref

    def _restore_backlog(self, name: str, value: bytes) -> None:
        backlog = self._backlogs.get(name)
        if backlog is None:
            return
        ref = self._loaded_refs()
        ids, acked_ids = decode_backlog(value)
        unacked = [found for found in map(ref, ids) if found is not None]
        acked = []
        for msg_id, ack_ns in acked_ids:
            found = ref(msg_id)
            if found is not None:
                acked.append((found[0], found[1], ack_ns))
        backlog.restore(unacked, acked)

    def records(self) -> Iterator[j.Record]:
        """The whole subscription and message state, for a snapshot."""
        for name, config in self._subs.items():
            yield j.PUT_SUBSCRIPTION, name, config.SerializeToString()
        if self._next_id > 1:  # message IDs are never reused after a restart
            yield j.NEXT_MESSAGE_ID, "", encode_next_id(self._next_id)
        held: dict[int, Batch] = {}
        lists: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
        for name, backlog in self._backlogs.items():
            unacked = []
            for batch, index in backlog.unacked_refs():
                held[batch.first_id] = batch
                unacked.append(batch.first_id + index)
            acked = []
            for batch, index, ack_ns in backlog.acked_refs():
                held[batch.first_id] = batch
                acked.append((batch.first_id + index, ack_ns))
            lists[name] = (sorted(unacked), acked)
        now_ns = time.time_ns()
        kept = self.snapshots.live(now_ns)
        for snapshot in kept:
            for batch, _ in snapshot.refs():
                held[batch.first_id] = batch
        for first in sorted(held):
            batch = held[first]
            head = encode_publish(first, batch.publish_ns, batch.region, [])
            yield j.PUBLISH, batch.topic, head + batch.request_bytes()
        for name, (unacked, acked) in lists.items():
            yield j.BACKLOG, name, encode_backlog(unacked, acked)
        yield from self.dead_letters.records()
        yield from self.snapshots.records(kept)

