"""Snapshots and Seek in the server state: each change journaled (durable first) and
replayed, under the state's locks. What a snapshot retains and what a Seek resets
are `snapshots`' rules; the subscriptions (`subscriptions.Subscriptions`, which owns
this store) give the backlogs they read and reset.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from reconciler.localserver.api import protos
from reconciler.localserver.api.paging import page_after
from reconciler.localserver.persistence import journal as j
from reconciler.localserver.pubsub.backlog import Backlog, BacklogStats, Ref
from reconciler.localserver.pubsub.journaled import Writes
from reconciler.localserver.pubsub.snapshots import (
    Held,
    Snapshot,
    SnapshotIndex,
    decode_seek,
    decode_snapshot,
    encode_seek,
    encode_snapshot,
    message_id,
    published_from,
    seek_sets,
)


class State(Writes, Protocol):
    def forget_iam_policy(self, name: str) -> None: ...


class Sources(Protocol):
    """What the store needs of the subscriptions, called under the state's `lock`."""

    max_backlog: int

    def backlog(self, name: str) -> Backlog | None: ...
    def raw(self, name: str) -> Any | None: ...
    def keeps(self, name: str) -> Callable[[Ref], bool]: ...
    def wake(self, name: str) -> None: ...


class SnapshotStore:
    """The server's snapshots (`index`, plain data) and the changes made to them."""

    def __init__(self, state: State, subs: Sources) -> None:
        self.state = state
        self.subs = subs
        self.index = SnapshotIndex(on_drop=state.forget_iam_policy)

    def create(
        self, name: str, source: str, build: Callable[[Any, int | None, int], tuple[Any, int]]
    ) -> Any | None:
        """Make snapshot `name` of subscription `source` (durable first): it retains the
        source's unacknowledged messages and every later one of the topic. `build(source
        config or None, oldest unacked publish ns or None, now ns)` runs under `wlock`,
        returns (the Snapshot proto, its latest expire ns) or raises to refuse; None when
        `name` exists."""
        state = self.state
        with state.wlock:
            state.settle()  # what replaying the journal to here gives
            now_ns = time.time_ns()
            with state.lock:
                self.index.prune(now_ns)
                if self.index.get(name) is not None:
                    return None
                backlog = self.subs.backlog(source)
                refs = sorted(backlog.unacked_refs(), key=message_id) if backlog else []
            oldest = min((batch.publish_ns for batch, _ in refs), default=None)
            config, max_expire_ns = build(self.subs.raw(source), oldest, now_ns)
            snapshot = Snapshot(config, now_ns, max_expire_ns, refs, self.subs.max_backlog)
            state.commit((j.PUT_SNAPSHOT, name, encode_snapshot(snapshot, source)))
            with state.lock:
                self.index.put(snapshot)
            state.maybe_compact()
        return config

    def get(self, name: str) -> Snapshot | None:
        """The snapshot, unless missing or expired."""
        with self.state.lock:
            found = self.index.get(name)
            return found if found is not None and found.expire_ns() > time.time_ns() else None

    def update(self, name: str, change: Callable[[Snapshot], Any]) -> Any | None:
        """Replace the snapshot's config with `change(snapshot)` (run under `wlock`; it
        raises to refuse); None when it does not exist."""
        state = self.state
        with state.wlock:
            with state.lock:
                self.index.prune(time.time_ns())
                found = self.index.get(name)
            if found is None:
                return None
            config = change(found)
            state.commit((j.SNAPSHOT_CONFIG, name, config.SerializeToString()))
            with state.lock:
                self.index.set_config(name, config)
            state.maybe_compact()
        return config

    def delete(self, name: str) -> bool:
        state = self.state
        with state.wlock:
            with state.lock:
                self.index.prune(time.time_ns())
                if self.index.get(name) is None:
                    return False
            state.commit((j.DELETE_SNAPSHOT, name, b""))
            with state.lock:
                self.index.drop(name)
            state.maybe_compact()
        return True

    def page(
        self, names: Callable[[SnapshotIndex], list[str]], after: str, limit: int
    ) -> tuple[list[Snapshot], str]:
        """A page of the unexpired snapshots `names(index)` lists (called under the
        lock), and the last name returned when more follow (else "")."""
        with self.state.lock:
            now_ns = time.time_ns()
            live: dict[str, Snapshot] = {}
            for name in names(self.index):
                found = self.index.get(name)
                if found is not None and found.expire_ns() > now_ns:
                    live[name] = found
            page, last = page_after(list(live), after, limit)
            return [live[n] for n in page], last

    def live(self, now_ns: int) -> list[Snapshot]:
        """Under `lock`: the snapshots not expired at `now_ns`."""
        return [s for s in self.index.all() if s.expire_ns() > now_ns]

    def stats(self, project: str, only: Any = None) -> list[tuple[str, BacklogStats]]:
        """(snapshot ID, what it retains per region) of the project's unexpired
        snapshots, in name order; `only`: none but these IDs."""
        prefix = f"projects/{project}/snapshots/"
        out = []
        with self.state.lock:
            now_ns = time.time_ns()
            names = self.index.in_project(project) if only is None else sorted(
                prefix + i for i in only
            )
            for name in names:
                found = self.index.get(name)
                if found is not None and found.expire_ns() > now_ns:
                    out.append((name[len(prefix):], found.stats()))
        return out

    def topic_deleted(self, topic: str, deleted: str) -> None:
        """Under `lock`: the topic's snapshots name `deleted` (_deleted-topic_) now."""

        def orphaned(config: Any) -> Any:
            out = protos.Snapshot()
            out.CopyFrom(config)
            out.topic = deleted
            return out

        self.index.topic_deleted(topic, deleted, orphaned)

    # ------------------------------------------------------------------------ Seek

    def seek(
        self,
        name: str,
        time_ns: int | None,
        snapshot: str | None,
        check: Callable[[Any | None, Snapshot | None], None],
    ) -> None:
        """Seek subscription `name` to a time or to a snapshot (durable first).
        `check(subscription config or None, snapshot or None)` runs under `wlock` and
        raises to refuse."""
        state = self.state
        with state.wlock:
            state.settle()
            now_ns = time.time_ns()
            with state.lock:
                self.index.prune(now_ns)
                target = self.index.get(snapshot) if snapshot is not None else None
            check(self.subs.raw(name), target)
            state.commit((j.SEEK, name, encode_seek(now_ns, time_ns, snapshot)))
            with state.lock:
                self._seek(name, now_ns, time_ns, snapshot)
            state.maybe_compact()

    def _seek(self, name: str, now_ns: int, time_ns: int | None, snapshot: str | None) -> None:
        """Under `lock`: reset the subscription's acknowledgement state (`snapshots`)."""
        backlog = self.subs.backlog(name)
        if backlog is None:
            return
        held: list[Held] = [(b, i, None) for b, i in backlog.unacked_refs()]
        held += backlog.acked_refs()
        if snapshot is None:
            assert time_ns is not None
            target: Any = published_from(held, time_ns)
        else:
            found = self.index.get(snapshot)
            if found is None:
                return
            target = found.refs()
        unacked, acked = seek_sets(held, target, now_ns, self.subs.keeps(name))
        backlog.purge()
        backlog.restore(unacked, acked if backlog.retain_acked else [])
        self.subs.wake(name)

    # -------------------------------------------------------------- journal replay

    def apply(self, record: j.Record, loaded: Callable[[int], Ref | None]) -> None:
        """Replay a PUT_SNAPSHOT, SNAPSHOT_CONFIG, DELETE_SNAPSHOT or SEEK record;
        `loaded` finds a message of a compacted state's batches by ID."""
        kind, key, value = record
        if kind == j.PUT_SNAPSHOT:
            self._restore(key, value, loaded)
        elif kind == j.SNAPSHOT_CONFIG:
            self.index.set_config(key, protos.Snapshot.FromString(value))
        elif kind == j.DELETE_SNAPSHOT:
            self.index.drop(key)
        elif kind == j.SEEK:
            now_ns, time_ns, snapshot = decode_seek(value)
            self._seek(key, now_ns, time_ns, snapshot)

    def _restore(self, name: str, value: bytes, loaded: Callable[[int], Ref | None]) -> None:
        """Its messages are found in the source subscription (a snapshot made while the
        journal ran) or in a compacted state's batches."""
        created_ns, max_expire_ns, source, ids, raw = decode_snapshot(value)
        known: dict[int, Ref] = {}
        backlog = self.subs.backlog(source)
        if backlog is not None:
            known = {message_id(ref): ref for ref in backlog.unacked_refs()}
        refs = [r for r in (known.get(i) or loaded(i) for i in ids) if r is not None]
        config = protos.Snapshot.FromString(raw)
        self.index.put(
            Snapshot(config, created_ns, max_expire_ns, refs, self.subs.max_backlog)
        )

    def records(self, kept: list[Snapshot]) -> list[j.Record]:
        """The PUT_SNAPSHOT records of a compaction (after the batches they hold)."""
        return [(j.PUT_SNAPSHOT, s.name, encode_snapshot(s, "")) for s in kept]
