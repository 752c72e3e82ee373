"""Published messages and their delivery to one subscription: the backlog, leases
(ack deadlines), redelivery, acknowledgement and retention. Plain data structures,
no transport, no lock but `Batch`'s first parse (the state lock guards them), no
journal (the state journals what changes them and replays it here).

A Publish request is kept as one `Batch` (the request's bytes as they came, its
first message ID, publish time and the region it is persisted in) shared by
every subscription that receives it; a subscription holds references, so a message
costs its bytes once however many subscriptions hold it. A batch is parsed and
stamped (message_id, publish_time) once, the first time it is delivered or read,
and leases are taken per pull, not per message.

Bounds: each subscription keeps at most `cap` unacknowledged messages (the oldest
beyond it are dropped, as the service's retention would drop the oldest first) and
drops messages older than its message_retention_duration; retained acknowledged
messages (retain_acked_messages) fall out of the same window.

Delivery attempts (`max_attempts`, set while the subscription has a dead-letter
policy): each delivery counts one, as the service counts 1 + nacks + expired
deadlines, and only while a policy is set (before it, a delivery reads 0). A message
whose last allowed attempt is nacked or expires is `exhausted`: still unacknowledged,
never delivered again, until the state forwards it to the dead-letter topic (and
acknowledges it) or, when the forward is refused, hands it back (`unexhaust`).
"""

from __future__ import annotations

import heapq
import threading
from collections import deque
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from reconciler.localserver.pubsub.ackids import AckIds

NS = 1_000_000_000


class Batch:
    """The messages of one Publish request, as stored: the request's own bytes
    (`raw`, as journaled) and how many messages it holds, parsed (one C parse, into
    one arena) with ID and publish time set the first time they are read, so that
    Publish itself makes no object per message."""

    __slots__ = (
        "_count",
        "_messages",
        "_raw",
        "_sizes",
        "first_id",
        "publish_ns",
        "region",
        "topic",
    )

    def __init__(
        self, topic: str, first_id: int, publish_ns: int, region: str, raw: bytes, count: int
    ) -> None:
        self.topic = topic
        self.first_id = first_id
        self.publish_ns = publish_ns
        self.region = region
        self._raw: bytes | None = raw
        self._count = count
        self._messages: Any = None
        self._sizes: list[int] | None = None

    def __len__(self) -> int:
        return self._count

    def stamped(self) -> Any:
        """The messages with message_id and publish_time set (parsed once; pulls of
        several subscriptions on several threads may ask at once)."""
        messages = self._messages
        if messages is not None:
            return messages
        with _PARSING:
            if self._messages is None:
                from reconciler.localserver.api import protos  # lazy: the CLI imports this module

                stamp = protos.Timestamp()
                stamp.FromNanoseconds(self.publish_ns)
                messages = protos.PublishRequest.FromString(self._raw).messages
                for i, message in enumerate(messages, self.first_id):
                    message.message_id = str(i)
                    message.publish_time.CopyFrom(stamp)
                self._messages = messages
                self._raw = None
            return self._messages

    def request_bytes(self) -> bytes:
        """A PublishRequest holding the batch (what a snapshot journals)."""
        raw = self._raw
        if raw is not None:
            return raw
        from reconciler.localserver.api import protos

        request = protos.PublishRequest(topic=self.topic, messages=self.stamped())
        return bytes(request.SerializeToString())

    def size(self, index: int) -> int:
        """The message's size in bytes, as the service's byte metrics count it (data,
        attributes and ordering key: the message as published)."""
        if self._sizes is None:
            self._sizes = [_published_size(m) for m in self.stamped()]
        return self._sizes[index]


_PARSING = threading.Lock()


def _published_size(message: Any) -> int:
    size = len(message.data) + len(message.ordering_key.encode("utf-8"))
    for key, value in message.attributes.items():
        size += len(key.encode("utf-8")) + len(value.encode("utf-8"))
    return size


Ref = tuple[Batch, int]  # a message: its batch and its index there


@dataclass
class RegionStats:
    """Messages persisted in one region: how many, their bytes, the oldest publish time."""

    count: int = 0
    bytes: int = 0
    oldest_publish_ns: int | None = None

    def add(self, batch: Batch, index: int) -> None:
        self.count += 1
        self.bytes += batch.size(index)
        if self.oldest_publish_ns is None or batch.publish_ns < self.oldest_publish_ns:
            self.oldest_publish_ns = batch.publish_ns

    def merge(self, other: RegionStats) -> None:
        self.count += other.count
        self.bytes += other.bytes
        if other.oldest_publish_ns is not None and (
            self.oldest_publish_ns is None or other.oldest_publish_ns < self.oldest_publish_ns
        ):
            self.oldest_publish_ns = other.oldest_publish_ns


@dataclass
class BacklogStats:
    """Per region: unacknowledged and retained acknowledged messages."""

    unacked: dict[str, RegionStats] = field(default_factory=dict)
    retained_acked: dict[str, RegionStats] = field(default_factory=dict)
    # Every region a message was persisted in since the subscription was created (or
    # the server started), held now or not: a gauge reads 0 there once it empties.
    regions: set[str] = field(default_factory=set)

    def merge(self, other: BacklogStats) -> None:
        self.regions |= other.regions
        pairs = ((self.unacked, other.unacked), (self.retained_acked, other.retained_acked))
        for mine, theirs in pairs:
            for region, stats in theirs.items():
                mine.setdefault(region, RegionStats()).merge(stats)


@dataclass
class Delivered:
    """What one pull hands out: the message, its ack ID and delivery attempt."""

    batch: Batch
    index: int
    ack_id: str
    attempt: int


class Backlog:
    """One subscription's messages (not thread-safe; see the module docstring)."""

    def __init__(
        self, *, cap: int, retention_s: float, retain_acked: bool, ack_prefix: str = ""
    ) -> None:
        self.cap = cap
        self.retention_s = retention_s
        self.retain_acked = retain_acked
        # What the ack IDs this backlog hands out start with (`ackids`): one
        # subscription, one incarnation of it in this server run.
        self.ack_prefix = ack_prefix
        self._pending: deque[list[Any]] = deque()  # [batch, next, end]: never delivered
        self._redeliver: dict[int, tuple[Batch, int, int]] = {}  # id -> (batch, i, attempts)
        # id -> [batch, i, lease, attempts, delivery]: `lease` is the heap entry that
        # holds its deadline now (a deadline change moves it to a new one), `delivery`
        # the pull that handed it out (named by its ack ID; a redelivery gets another)
        self._out: dict[int, list[Any]] = {}
        self._leases: list[tuple[float, int, list[int]]] = []  # (deadline, lease, ids)
        self._acked: deque[tuple[Batch, int, int]] = deque()  # (batch, i, ack time ns)
        # Attempts used up (see the module docstring): id -> (batch, i, attempts)
        self.exhausted: dict[int, tuple[Batch, int, int]] = {}
        self.max_attempts = 0  # 0: no dead-letter policy, attempts not counted
        self._next_lease = 1
        self.regions: set[str] = set()  # see BacklogStats.regions
        self.unacked = 0
        self.dropped = 0  # by the cap or retention, never delivered again

    # ------------------------------------------------------------------ arrivals

    def add(self, batch: Batch) -> None:
        self.regions.add(batch.region)
        self._pending.append([batch, 0, len(batch)])
        self.unacked += len(batch)
        if self.unacked > self.cap:
            self._drop_oldest(self.unacked - self.cap)

    def add_filtered(self, batch: Batch, keep: list[bool]) -> None:
        """An arrival through a subscription filter: the messages `keep` rejects are
        acknowledged on arrival (at their publish time), as the service acknowledges
        what a filter excludes; with retain_acked_messages they are retained acked."""
        self.regions.add(batch.region)
        kept = 0
        run = -1  # start of the current run of kept messages
        for index, wanted in enumerate(keep):
            if wanted:
                kept += 1
                if run < 0:
                    run = index
                continue
            if run >= 0:
                self._pending.append([batch, run, index])
                run = -1
            if self.retain_acked:
                self._acked.append((batch, index, batch.publish_ns))
        if run >= 0:
            self._pending.append([batch, run, len(keep)])
        self.unacked += kept
        if self.unacked > self.cap:
            self._drop_oldest(self.unacked - self.cap)

    def _drop_oldest(self, excess: int) -> None:
        while excess > 0 and self._pending:
            segment = self._pending[0]
            _, start, end = segment
            take = min(excess, end - start)
            segment[1] += take
            if segment[1] >= end:
                self._pending.popleft()
            excess -= take
            self.unacked -= take
            self.dropped += take
        for held in (self._redeliver, self.exhausted):
            while excess > 0 and held:
                del held[next(iter(held))]
                excess -= 1
                self.unacked -= 1
                self.dropped += 1

    def expire(self, now_ns: int) -> None:
        """Drop what fell out of the retention window (measured from publish time)."""
        cutoff = now_ns - int(self.retention_s * NS)
        while self._pending and self._pending[0][0].publish_ns < cutoff:
            _, start, end = self._pending.popleft()
            self.unacked -= end - start
            self.dropped += end - start
        for held in (self._redeliver, self.exhausted):
            for msg_id in [i for i, (b, _, _) in held.items() if b.publish_ns < cutoff]:
                del held[msg_id]
                self.unacked -= 1
                self.dropped += 1
        while self._acked and self._acked[0][0].publish_ns < cutoff:
            self._acked.popleft()

    # ------------------------------------------------------------------- delivery

    def available(self) -> bool:
        return bool(self._redeliver or self._pending)

    def release_expired(self, now: float) -> int:
        """Leases whose deadline passed: their messages are delivered again."""
        released = 0
        leases = self._leases
        while leases and leases[0][0] <= now:
            _, lease, ids = heapq.heappop(leases)
            for msg_id in ids:
                entry = self._out.get(msg_id)
                if entry is not None and entry[2] == lease:
                    del self._out[msg_id]
                    self._hand_back(msg_id, entry[0], entry[1], entry[3])
                    released += 1
        return released

    def _hand_back(self, msg_id: int, batch: Batch, index: int, attempts: int) -> None:
        """A delivery nacked or expired: delivered again, or exhausted when it was the
        last attempt the dead-letter policy allows."""
        if self.max_attempts and attempts >= self.max_attempts:
            self.exhausted[msg_id] = (batch, index, attempts)
        else:
            self._redeliver[msg_id] = (batch, index, attempts)

    def next_deadline(self) -> float | None:
        return self._leases[0][0] if self._leases else None

    def take(self, max_messages: int, deadline: float, max_bytes: int = 0) -> list[Delivered]:
        """Lease up to `max_messages` messages (and about `max_bytes`, when given) until
        `deadline` (a monotonic time): redeliveries first, then new messages in order."""
        lease = self._next_lease
        self._next_lease += 1
        out: list[Delivered] = []
        ids: list[int] = []
        owned = self._out
        prefix = self.ack_prefix
        room = max_bytes or -1
        counted = 1 if self.max_attempts else 0
        redeliver = self._redeliver
        while redeliver and len(out) < max_messages and room != 0:
            msg_id = next(iter(redeliver))
            batch, index, attempts = redeliver.pop(msg_id)
            attempts += counted
            owned[msg_id] = [batch, index, lease, attempts, lease]
            ids.append(msg_id)
            out.append(Delivered(batch, index, f"{prefix}-{msg_id}-{lease}", attempts))
            if max_bytes:
                room = max(0, room - batch.size(index))
        pending = self._pending
        while pending and len(out) < max_messages and room != 0:
            segment = pending[0]
            batch, start, stop_at = segment
            end = min(stop_at, start + max_messages - len(out))
            if max_bytes:
                stop = start
                while stop < end and room != 0:
                    room = max(0, room - batch.size(stop))
                    stop += 1
                end = stop
            first = batch.first_id
            for index in range(start, end):
                msg_id = first + index
                owned[msg_id] = [batch, index, lease, counted, lease]
                ids.append(msg_id)
                out.append(Delivered(batch, index, f"{prefix}-{msg_id}-{lease}", counted))
            segment[1] = end
            if end >= stop_at:
                pending.popleft()
        if ids:
            heapq.heappush(self._leases, (deadline, lease, ids))
        return out

    # ------------------------------------------------------------ acks and deadlines

    def current(self, ids: AckIds, now: float) -> tuple[list[int], list[str]]:
        """Which of these ack IDs name a delivery whose lease still holds (their
        message IDs, each once) and which do not (as sent): another incarnation of
        the subscription (a restart, a deletion), a delivery since redelivered or
        nacked, a lease whose deadline passed, a message acknowledged already, or
        one never handed out."""
        self.release_expired(now)
        entries = list(map(self._out.get, ids.messages))
        delivered = zip(entries, ids.deliveries, strict=True)
        if ids.distinct == {self.ack_prefix}:
            keep = [e is not None and e[4] == d for e, d in delivered]
        else:
            prefix = self.ack_prefix
            keep = [
                p == prefix and e is not None and e[4] == d
                for p, (e, d) in zip(ids.prefixes, delivered, strict=True)
            ]
        valid = list(dict.fromkeys(compress(ids.messages, keep)))
        if all(keep):
            return valid, []
        return valid, [text for text, k in zip(ids.texts, keep, strict=True) if not k]

    def ack(self, ids: list[int], now_ns: int) -> int:
        """Acknowledge messages by ID (leased, waiting for redelivery, or, for an
        export delivering what it held and for a journal replay, never delivered);
        how many were still unacknowledged."""
        done = 0
        never_delivered = []
        for msg_id in ids:
            entry = self._out.pop(msg_id, None)
            if entry is None:
                again = self._redeliver.pop(msg_id, None) or self.exhausted.pop(msg_id, None)
                if again is None:
                    never_delivered.append(msg_id)
                    continue
                batch, index = again[0], again[1]
            else:
                batch, index = entry[0], entry[1]
            done += 1
            if self.retain_acked:
                self._acked.append((batch, index, now_ns))
        self.unacked -= done
        if never_delivered and self._pending:
            done += self._ack_pending(set(never_delivered), now_ns)
        return done

    def _ack_pending(self, ids: set[int], now_ns: int) -> int:
        """Acknowledge messages never delivered (an export delivering what it held)."""
        taken = self._take_pending(ids)
        if self.retain_acked:
            self._acked.extend((batch, index, now_ns) for batch, index in taken)
        self.unacked -= len(taken)
        return len(taken)

    def _take_pending(self, ids: Container[int]) -> list[Ref]:
        """Take these messages out of the never-delivered ones (the segments are
        rebuilt around them, in one pass); the ones found, in order."""
        kept: deque[list[Any]] = deque()
        taken: list[Ref] = []
        for batch, start, end in self._pending:
            run = start
            for index in range(start, end):
                if batch.first_id + index in ids:
                    if index > run:
                        kept.append([batch, run, index])
                    run = index + 1
                    taken.append((batch, index))
            if run < end:
                kept.append([batch, run, end])
        self._pending = kept
        return taken

    def modify(self, ids: list[int], seconds: float, now: float) -> None:
        """A new deadline for leased messages; 0 hands them back at once (a nack)."""
        if seconds <= 0:
            for msg_id in ids:
                entry = self._out.pop(msg_id, None)
                if entry is not None:
                    self._hand_back(msg_id, entry[0], entry[1], entry[3])
            return
        lease = self._next_lease  # a heap entry of its own; the delivery stays
        self._next_lease += 1
        moved = []
        for msg_id in ids:
            entry = self._out.get(msg_id)
            if entry is not None:
                entry[2] = lease
                moved.append(msg_id)
        if moved:
            heapq.heappush(self._leases, (now + seconds, lease, moved))

    # ------------------------------------------------------------ delivery attempts

    def set_max_attempts(self, max_attempts: int) -> None:
        """The dead-letter policy's max_delivery_attempts (0: none). Messages whose
        attempts reach a lowered bound are exhausted at once; without a policy the
        exhausted ones are delivered again."""
        self.max_attempts = max_attempts
        if not max_attempts:
            self._redeliver.update(self.exhausted)
            self.exhausted.clear()
            return
        spent = [i for i, (_, _, n) in self._redeliver.items() if n >= max_attempts]
        for msg_id in spent:
            self.exhausted[msg_id] = self._redeliver.pop(msg_id)

    def unexhaust(self, ids: list[int]) -> None:
        """Deliver these exhausted messages again (their forward was refused): each
        later failure tries the forward anew."""
        for msg_id in ids:
            held = self.exhausted.pop(msg_id, None)
            if held is not None:
                self._redeliver[msg_id] = held

    def attempt_counts(self) -> list[tuple[int, int]]:
        """(message ID, delivery attempts so far) of the unacknowledged messages that
        were delivered while attempts were counted, in ID order."""
        out = [(i, e[3]) for i, e in self._out.items() if e[3]]
        for held in (self._redeliver, self.exhausted):
            out += [(i, n) for i, (_, _, n) in held.items() if n]
        return sorted(out)

    def set_attempts(self, attempts: dict[int, int]) -> None:
        """After a restart: the delivery attempts the state recorded for these
        messages (those no longer unacknowledged are skipped). A message delivered
        before the restart waits for its next attempt, as if its deadline had passed."""
        for msg_id, count in attempts.items():
            held = self._redeliver.get(msg_id)
            if held is not None:
                self._redeliver[msg_id] = (held[0], held[1], max(held[2], count))
        never = {i for i in attempts if i not in self._redeliver}
        if never and self._pending:
            for batch, index in self._take_pending(never):
                msg_id = batch.first_id + index
                self._redeliver[msg_id] = (batch, index, attempts[msg_id])
        self.set_max_attempts(self.max_attempts)

    def is_leased(self, msg_id: int) -> bool:
        return msg_id in self._out

    def purge(self) -> None:
        """Drop everything (a detached subscription retains no backlog)."""
        self._pending.clear()
        self._redeliver.clear()
        self.exhausted.clear()
        self._out.clear()
        self._leases.clear()
        self._acked.clear()
        self.unacked = 0

    # --------------------------------------------------------------------- reading

    def unacked_refs(self) -> Iterator[Ref]:
        for batch, index, *_ in self._out.values():
            yield batch, index
        for batch, index, _ in self._redeliver.values():
            yield batch, index
        for batch, index, _ in self.exhausted.values():
            yield batch, index
        for batch, start, end in self._pending:
            for index in range(start, end):
                yield batch, index

    def acked_refs(self) -> Iterator[tuple[Batch, int, int]]:
        yield from self._acked

    def stats(self) -> BacklogStats:
        out = BacklogStats(regions=set(self.regions))
        for batch, index in self.unacked_refs():
            out.unacked.setdefault(batch.region, RegionStats()).add(batch, index)
        for batch, index, _ in self._acked:
            out.retained_acked.setdefault(batch.region, RegionStats()).add(batch, index)
        return out

    # ------------------------------------------------------------ snapshot / replay

    def restore(self, unacked: list[Ref], acked: list[tuple[Batch, int, int]]) -> None:
        """Refill from a state snapshot or after a Seek: unacknowledged messages (in
        ID order) wait for (re)delivery, the oldest beyond the bound dropped."""
        for batch, index in unacked:
            self._redeliver[batch.first_id + index] = (batch, index, 0)
            self.regions.add(batch.region)
        self.regions.update(batch.region for batch, _, _ in acked)
        self.unacked += len(unacked)
        self._acked.extend(acked)
        if self.unacked > self.cap:  # a Seek may bring back more than the bound
            self._drop_oldest(self.unacked - self.cap)
