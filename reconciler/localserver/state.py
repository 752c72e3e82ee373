"""Server state: topics, published messages, org policies and the resource ancestry.

Durable before visible: a mutation is journaled and fsynced under the state lock
*before* memory changes, so nothing a reader or a reply has seen can be lost by a
crash, and a write that fails (`StateWriteError`: a full or failing disk) leaves
memory as it was; the caller answers with an error and reads go on. Stored protos
are never mutated in place, so a handler may serialize what it read after letting go
of the lock. Published messages live in memory only, bounded (`messages`).
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from reconciler.localserver import journal as j
from reconciler.localserver import protos
from reconciler.localserver.messages import DEFAULT_KEEP_MESSAGES, MessageLog
from reconciler.names import project_of
from reconciler.orgpolicy.model import Policy
from reconciler.orgpolicy.store import PolicyStore

log = logging.getLogger(__name__)


def policy_from_proto(pb: Any) -> Policy:
    """The evaluator's dataclass for a stored `google.cloud.orgpolicy.v2.Policy`."""
    return Policy.from_dict(json_format.MessageToDict(pb))


def policy_to_proto(policy: Policy) -> Any:
    """A `google.cloud.orgpolicy.v2.Policy` proto for the evaluator's dataclass."""
    return json_format.ParseDict(policy.to_dict(), protos.Policy(), ignore_unknown_fields=True)


class ServerState:
    """In memory when `state_dir` is None; otherwise journaled under `state_dir`.

    Opening a damaged state raises `StateDamaged` unless `recover`; `loaded` then
    says what was found (torn tail dropped, migration, what a recovery dropped).
    Published messages: a count per topic and the last `keep_messages` of them.
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        fsync: bool = True,
        compact_after_bytes: int = 4 * 1024 * 1024,
        recover: bool = False,
        keep_messages: int = DEFAULT_KEEP_MESSAGES,
    ) -> None:
        if keep_messages < 0:
            raise ValueError("keep_messages must not be negative")
        self._lock = threading.RLock()
        self._topics: dict[str, Any] = {}
        self._by_project: dict[str, list[str]] = {}
        self._messages: dict[str, MessageLog] = {}
        self.keep_messages = keep_messages
        self._next_message_id = 1
        self._policies: dict[str, Any] = {}
        self.policy_store = PolicyStore()
        self._journal: j.Journal | None = None
        self.loaded: j.Loaded | None = None
        if state_dir is not None:
            journal = j.Journal(
                Path(state_dir), fsync=fsync, compact_after_bytes=compact_after_bytes
            )
            try:
                self.loaded = journal.load(recover=recover)
                for note in self.loaded.notes:
                    log.warning("local server: %s", note)
                for record in self.loaded.records:
                    self._apply(record)
                self.loaded.records = []  # applied; do not keep a second copy
                if self.loaded.rewrite:  # recovery or migration: a fresh snapshot now
                    journal.compact(self._all_records())
            except BaseException:
                journal.close()
                raise
            self._journal = journal

    # ----------------------------------------------------------------- journal plumbing

    def _apply(self, record: j.Record) -> None:
        kind, key, value = record
        if kind == j.PUT_TOPIC:
            self._put_topic(protos.Topic.FromString(value))
        elif kind == j.DELETE_TOPIC:
            self._drop_topic(key)
        elif kind == j.PUT_POLICY:
            self._put_policy(protos.Policy.FromString(value))
        elif kind == j.DELETE_POLICY:
            self._drop_policy(key)
        elif kind == j.SET_ANCESTRY:
            self.policy_store.ancestry[key] = value.decode("utf-8")
        elif kind == j.DELETE_ANCESTRY:
            self.policy_store.ancestry.pop(key, None)

    def _commit(self, *records: j.Record) -> None:
        """Make `records` durable, under the state lock and before memory changes;
        raises `StateWriteError` (nothing written) when the disk refuses."""
        if self._journal is None or not records:
            return
        self._journal.append(list(records))

    def _maybe_compact(self) -> None:
        """Fold the journal into the snapshot once it has grown enough (after a change
        is in memory, which the snapshot must hold). A failure is logged, not
        raised: the change is durable in the journal, which stays valid."""
        journal = self._journal
        if journal is None or not journal.should_compact():
            return
        try:
            journal.compact(self._all_records())
        except j.StateWriteError as exc:
            journal.compact_after_bytes *= 2  # not on every later write
            log.warning("local server: %s; the journal keeps every change", exc)

    def _all_records(self) -> Iterator[j.Record]:
        for child, parent in self.policy_store.ancestry.items():
            yield j.SET_ANCESTRY, child, parent.encode("utf-8")
        for name, policy in self._policies.items():
            yield j.PUT_POLICY, name, policy.SerializeToString()
        for name, topic in self._topics.items():
            yield j.PUT_TOPIC, name, topic.SerializeToString()

    def inject_write_failure(self, code: int, *, count: int, at: str) -> None:
        if self._journal is None:
            raise ValueError("an in-memory server writes no state to fail")
        self._journal.inject_failure(code, count=count, at=at)

    def compact(self) -> None:
        """Fold the journal into the snapshot now (also done automatically)."""
        with self._lock:
            if self._journal is not None:
                self._journal.compact(self._all_records())

    def close(self, *, compact: bool = True) -> None:
        """Release the state directory; `compact=False` leaves the journal exactly as
        a crash would. A compaction the disk refuses is skipped with a warning: the
        journal alone holds every acknowledged change."""
        with self._lock:
            if self._journal is not None:
                if compact and self._journal.broken is None:
                    try:
                        self._journal.compact(self._all_records())
                    except j.StateWriteError as exc:
                        log.warning(
                            "local server: not compacted at stop (%s); the journal keeps "
                            "every acknowledged change",
                            exc,
                        )
                self._journal.close()
                self._journal = None

    # ------------------------------------------------------------------------ topics

    def _put_topic(self, topic: Any) -> None:
        name = topic.name
        if name not in self._topics:
            project = project_of(name)
            bisect.insort(self._by_project.setdefault(project, []), name)
        self._topics[name] = topic

    def _drop_topic(self, name: str) -> bool:
        if self._topics.pop(name, None) is None:
            return False
        names = self._by_project.get(project_of(name), [])
        i = bisect.bisect_left(names, name)
        if i < len(names) and names[i] == name:
            del names[i]
        self._messages.pop(name, None)
        return True

    def get_topic(self, name: str) -> Any | None:
        with self._lock:
            return self._topics.get(name)

    def topic_count(self) -> int:
        with self._lock:
            return len(self._topics)

    def create_topic(self, name: str, build: Callable[[], Any]) -> Any | None:
        """Store what `build()` returns unless `name` exists (then None). `build` runs
        under the lock so that validation sees the same org policy as the insert."""
        with self._lock:
            if name in self._topics:
                return None
            topic = build()
            self._commit((j.PUT_TOPIC, name, topic.SerializeToString()))
            self._put_topic(topic)
            self._maybe_compact()
        return topic

    def create_topics(self, topics: Iterable[Any]) -> int:
        """Bulk seeding (tests, benchmarks): one journal write for all; skips existing."""
        with self._lock:
            new = {t.name: t for t in topics if t.name not in self._topics}
            self._commit(*((j.PUT_TOPIC, n, t.SerializeToString()) for n, t in new.items()))
            for topic in new.values():
                self._put_topic(topic)
            self._maybe_compact()
        return len(new)

    def update_topic(self, name: str, change: Callable[[Any], Any]) -> Any | None:
        """Replace the topic with `change(current)` (a new proto); None if missing."""
        with self._lock:
            current = self._topics.get(name)
            if current is None:
                return None
            topic = change(current)
            self._commit((j.PUT_TOPIC, name, topic.SerializeToString()))
            self._topics[name] = topic
            self._maybe_compact()
        return topic

    def delete_topic(self, name: str) -> bool:
        with self._lock:
            if name not in self._topics:
                return False
            self._commit((j.DELETE_TOPIC, name, b""))
            self._drop_topic(name)
            self._maybe_compact()
        return True

    def list_topics(self, project: str, after: str, limit: int) -> tuple[list[Any], str]:
        """Up to `limit` topics of `project` named after `after`, in name order, and the
        last name returned when more follow (else "")."""
        with self._lock:
            names = self._by_project.get(project, [])
            start = bisect.bisect_right(names, after) if after else 0
            page = names[start : start + limit]
            more = start + limit < len(names)
            return [self._topics[n] for n in page], (page[-1] if more and page else "")

    def add_messages(self, name: str, messages: Any) -> list[str] | None:
        """Count and keep published messages (the request's own repeated field, not a
        copy: the cheap path); their IDs, or None when the topic is gone."""
        with self._lock:
            if name not in self._topics:
                return None
            log = self._messages.get(name)
            if log is None:
                log = self._messages[name] = MessageLog(self.keep_messages)
            first = self._next_message_id
            self._next_message_id += len(messages)
            log.add(first, time.time_ns(), messages)
        return list(map(str, range(first, first + len(messages))))

    def messages(self, name: str) -> list[Any]:
        """The last `keep_messages` messages of a topic, as stored `PubsubMessage`s."""
        with self._lock:
            log = self._messages.get(name)
            return log.stored() if log is not None else []

    def message_count(self, name: str) -> int:
        """How many messages were ever published to the topic (kept or not)."""
        with self._lock:
            log = self._messages.get(name)
            return log.count if log is not None else 0

    # ---------------------------------------------------------------------- policies

    def _put_policy(self, pb: Any) -> None:
        self._policies[pb.name] = pb
        self.policy_store.policies[pb.name] = policy_from_proto(pb)

    def _drop_policy(self, name: str) -> bool:
        self.policy_store.policies.pop(name, None)
        return self._policies.pop(name, None) is not None

    def get_policy(self, name: str) -> Any | None:
        with self._lock:
            return self._policies.get(name)

    def list_policies(self, parent: str) -> list[Any]:
        prefix = parent + "/policies/"
        with self._lock:
            return [p for n, p in sorted(self._policies.items()) if n.startswith(prefix)]

    def write_policy(
        self, name: str, change: Callable[[Any | None], Any | None]
    ) -> tuple[Any | None, Any | None]:
        """Atomically replace policy `name` by `change(current)` (None deletes it);
        returns (before, after)."""
        with self._lock:
            before = self._policies.get(name)
            after = change(before)
            if after is None:
                if before is None:
                    return None, None
                self._commit((j.DELETE_POLICY, name, b""))
                self._drop_policy(name)
            else:
                self._commit((j.PUT_POLICY, name, after.SerializeToString()))
                self._put_policy(after)
            self._maybe_compact()
        return before, after

    def set_ancestry(self, child: str, parent: str | None) -> None:
        with self._lock:
            if parent is None:
                self._commit((j.DELETE_ANCESTRY, child, b""))
                self.policy_store.ancestry.pop(child, None)
            else:
                self._commit((j.SET_ANCESTRY, child, parent.encode("utf-8")))
                self.policy_store.ancestry[child] = parent
            self._maybe_compact()

    def locked(self) -> threading.RLock:
        """The state lock, for evaluating the org policy consistently with a write."""
        return self._lock
