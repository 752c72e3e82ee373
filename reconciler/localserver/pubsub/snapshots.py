"""Snapshots and Seek in the server state: what a snapshot retains, when it expires,
how a Seek resets a subscription's acknowledgement state, and their journal values.
Plain data: the state lock guards it, `snapshotstore.SnapshotStore` journals the
changes (durable before visible) and replays them here.

The service's rules (docs/local-server.md cites where each comes from):

- A snapshot retains the messages unacknowledged in its source subscription when it
  is made, and every message published to the topic after it.
- It expires 7 days after the publish time of the oldest of those unacknowledged
  messages (7 days after it is made when there are none); one that would expire
  within an hour of being made is refused (FAILED_PRECONDITION).
- Seek to a time: the subscription's retained messages (unacknowledged, and the
  acknowledged ones retain_acked_messages keeps) published before it become
  acknowledged, those published at or after it unacknowledged; messages no longer
  retained are not brought back.
- Seek to a snapshot (of the same topic): its messages become unacknowledged, and
  every other message the subscription retains acknowledged.

A subscription's filter still applies: a message it excludes stays acknowledged.
Bounds: a snapshot holds at most `cap` messages (the subscription bound,
`--max-backlog`), dropping the oldest beyond it, and is dropped at its expire time.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from reconciler.localserver.pubsub.backlog import BacklogStats, Batch, Ref, RegionStats
from reconciler.names import project_of

NS = 1_000_000_000
LIFETIME_NS = 7 * 24 * 3600 * NS  # a snapshot lives at most 7 days
MIN_LIFETIME_NS = 3600 * NS  # and is refused if it would expire within an hour

Acked = tuple[Batch, int, int]  # a message and when it was acknowledged (ns)
Held = tuple[Batch, int, int | None]  # a retained message; None: unacknowledged


def message_id(ref: Ref) -> int:
    return ref[0].first_id + ref[1]


def clamp_ns(ns: int) -> int:
    """A time within what 64 bits of nanoseconds hold (years 1677 to 2262): a Seek
    to a time beyond is one to the last (or first) of them, with the same effect."""
    return max(-(2**63), min(ns, 2**63 - 1))


def expire_time_ns(oldest_unacked_ns: int | None, now_ns: int) -> int:
    """When a snapshot made now expires: 7 days after the oldest unacknowledged
    message it retains was published (after now when there is none)."""
    start = now_ns if oldest_unacked_ns is None else min(oldest_unacked_ns, now_ns)
    return start + LIFETIME_NS


class Snapshot:
    """One snapshot: its config (the `Snapshot` proto the RPCs answer, replaced, never
    changed in place), the latest expire time it may be given, and the messages it
    retains, oldest first, as runs of one batch."""

    __slots__ = ("_runs", "cap", "config", "count", "created_ns", "max_expire_ns", "regions")

    def __init__(
        self, config: Any, created_ns: int, max_expire_ns: int, refs: Iterable[Ref], cap: int
    ) -> None:
        self.config = config
        self.created_ns = created_ns
        self.max_expire_ns = max_expire_ns
        self.cap = cap
        self.count = 0
        self.regions: set[str] = set()
        self._runs: deque[tuple[Batch, int, int]] = deque()
        for batch, index in refs:
            last = self._runs[-1] if self._runs else None
            if last is not None and last[0] is batch and last[2] == index:
                self._runs[-1] = (batch, last[1], index + 1)
            else:
                self._runs.append((batch, index, index + 1))
            self.regions.add(batch.region)
            self.count += 1
        self._bound()

    @property
    def name(self) -> str:
        return str(self.config.name)

    @property
    def topic(self) -> str:
        return str(self.config.topic)

    def expire_ns(self) -> int:
        return int(self.config.expire_time.ToNanoseconds())

    def receive(self, batch: Batch) -> None:
        """A batch published to the topic after the snapshot was made."""
        self._runs.append((batch, 0, len(batch)))
        self.regions.add(batch.region)
        self.count += len(batch)
        self._bound()

    def _bound(self) -> None:
        while self.count > self.cap and self._runs:
            batch, start, end = self._runs.popleft()
            drop = min(end - start, self.count - self.cap)
            if start + drop < end:
                self._runs.appendleft((batch, start + drop, end))
            self.count -= drop

    def refs(self) -> Iterator[Ref]:
        for batch, start, end in self._runs:
            for index in range(start, end):
                yield batch, index

    def stats(self) -> BacklogStats:
        """The messages it retains, per region, as the `unacked` figures (what the
        `snapshot/*_by_region` gauges read)."""
        out = BacklogStats(regions=set(self.regions))
        for batch, index in self.refs():
            out.unacked.setdefault(batch.region, RegionStats()).add(batch, index)
        return out


class SnapshotIndex:
    """The snapshots by name, with sorted names per project and per topic."""

    def __init__(self, on_drop: Callable[[str], None] = lambda name: None) -> None:
        self._by_name: dict[str, Snapshot] = {}
        self._by_project: dict[str, list[str]] = {}
        self._by_topic: dict[str, list[str]] = {}
        self._on_drop = on_drop  # told the name of each snapshot deleted or expired

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Snapshot | None:
        return self._by_name.get(name)

    def all(self) -> list[Snapshot]:
        return list(self._by_name.values())

    def put(self, snapshot: Snapshot) -> None:
        """Add, or replace one of the same name (its messages too)."""
        if snapshot.name in self._by_name:
            self._unlink(snapshot.name)
        self._by_name[snapshot.name] = snapshot
        bisect.insort(self._by_project.setdefault(project_of(snapshot.name), []), snapshot.name)
        bisect.insort(self._by_topic.setdefault(snapshot.topic, []), snapshot.name)

    def set_config(self, name: str, config: Any) -> None:
        """A new config (labels, expire time) for a snapshot; the topic never changes
        this way."""
        snapshot = self._by_name.get(name)
        if snapshot is not None:
            snapshot.config = config

    def drop(self, name: str) -> bool:
        """The snapshot is gone (deleted, or expired): with its IAM policy (`on_drop`)."""
        if not self._unlink(name):
            return False
        self._on_drop(name)
        return True

    def _unlink(self, name: str) -> bool:
        snapshot = self._by_name.pop(name, None)
        if snapshot is None:
            return False
        _remove(self._by_project, project_of(name), name)
        _remove(self._by_topic, snapshot.topic, name)
        return True

    def prune(self, now_ns: int) -> None:
        """Drop the snapshots whose expire time has passed."""
        for snapshot in [s for s in self._by_name.values() if s.expire_ns() <= now_ns]:
            self.drop(snapshot.name)

    def receive(self, batch: Batch) -> None:
        for name in self._by_topic.get(batch.topic, ()):
            self._by_name[name].receive(batch)

    def topic_deleted(self, topic: str, deleted: str, make_config: Callable[[Any], Any]) -> None:
        """The topic's snapshots now name `deleted` (a topic made again with the same
        name is another topic); they keep what they retain until they expire."""
        for name in list(self._by_topic.get(topic, ())):
            snapshot = self._by_name[name]
            _remove(self._by_topic, topic, name)
            snapshot.config = make_config(snapshot.config)
            assert snapshot.topic == deleted
            bisect.insort(self._by_topic.setdefault(deleted, []), name)

    def in_project(self, project: str) -> list[str]:
        return self._by_project.get(project, [])

    def of_topic(self, topic: str) -> list[str]:
        return self._by_topic.get(topic, [])


def _remove(index: dict[str, list[str]], key: str, name: str) -> None:
    names = index.get(key, [])
    i = bisect.bisect_left(names, name)
    if i < len(names) and names[i] == name:
        del names[i]
    if not names:
        index.pop(key, None)


# ------------------------------------------------------------------------------ Seek


def seek_sets(
    held: Iterable[Held],
    target: Iterable[Ref],
    now_ns: int,
    keep: Callable[[Ref], bool],
) -> tuple[list[Ref], list[Acked]]:
    """The subscription's state after a Seek: the `target` messages unacknowledged
    (in ID order, those `keep` (its filter) accepts), every other message it retains
    (`held`) acknowledged, keeping its ack time (now for one that was unacknowledged);
    a target message the filter excludes is acknowledged at its publish time."""
    unacked: dict[int, Ref] = {}
    acked: dict[int, Acked] = {}
    for ref in target:
        if keep(ref):
            unacked[message_id(ref)] = ref
        else:
            acked[message_id(ref)] = (ref[0], ref[1], ref[0].publish_ns)
    for batch, index, ack_ns in held:
        msg_id = batch.first_id + index
        if msg_id not in unacked and msg_id not in acked:
            acked[msg_id] = (batch, index, now_ns if ack_ns is None else ack_ns)
    return [unacked[i] for i in sorted(unacked)], [acked[i] for i in sorted(acked)]


def published_from(held: Iterable[Held], time_ns: int) -> list[Ref]:
    """Seek to a time: the retained messages published at or after it."""
    return [(batch, index) for batch, index, _ in held if batch.publish_ns >= time_ns]


# ------------------------------------------------------------------- journal values

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HEAD = struct.Struct("<QQ")
_SEEK = struct.Struct("<QBq")
SEEK_TIME = 0
SEEK_SNAPSHOT = 1


def encode_snapshot(snapshot: Snapshot, source: str) -> bytes:
    """A PUT_SNAPSHOT value: when it was made, its latest expire time, the
    subscription it was made from ("" in a compacted state), the IDs of the messages
    it retains, then its config."""
    ids = [message_id(ref) for ref in snapshot.refs()]
    s = source.encode("utf-8")
    parts = [_HEAD.pack(snapshot.created_ns, snapshot.max_expire_ns), _U16.pack(len(s)), s]
    parts += [_U32.pack(len(ids)), struct.pack(f"<{len(ids)}Q", *ids)]
    parts.append(snapshot.config.SerializeToString())
    return b"".join(parts)


def decode_snapshot(value: bytes) -> tuple[int, int, str, list[int], bytes]:
    """(made ns, latest expire ns, source subscription, message IDs, config bytes)."""
    created_ns, max_expire_ns = _HEAD.unpack_from(value, 0)
    pos = _HEAD.size
    (n,) = _U16.unpack_from(value, pos)
    pos += 2
    source = value[pos : pos + n].decode("utf-8")
    pos += n
    (count,) = _U32.unpack_from(value, pos)
    pos += 4
    ids = list(struct.unpack_from(f"<{count}Q", value, pos))
    pos += 8 * count
    return created_ns, max_expire_ns, source, ids, value[pos:]


def encode_seek(now_ns: int, time_ns: int | None, snapshot: str | None) -> bytes:
    """A SEEK value: when, and the target (a time, or a snapshot's name)."""
    if snapshot is not None:
        return _SEEK.pack(now_ns, SEEK_SNAPSHOT, 0) + snapshot.encode("utf-8")
    assert time_ns is not None
    return _SEEK.pack(now_ns, SEEK_TIME, time_ns)


def decode_seek(value: bytes) -> tuple[int, int | None, str | None]:
    now_ns, kind, time_ns = _SEEK.unpack_from(value, 0)
    if kind == SEEK_SNAPSHOT:
        return now_ns, None, value[_SEEK.size :].decode("utf-8")
    return now_ns, time_ns, None
