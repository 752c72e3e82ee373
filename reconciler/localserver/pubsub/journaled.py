"""How the server state changes: durable before visible, under two locks, with group
commit and compaction; and how it is opened from its journal (replay, recovery). The
state itself (`state.ServerState`) and the rooms it owns (`subscriptions`,
`schemas.registry`) say what they store; this module says how a change is written.

Durable before visible: a change is journaled and fsynced *before* memory changes,
so nothing a reader or a reply has seen can be lost by a crash, and a write that
fails (`StateWriteError`: a full or failing disk) leaves memory as it was; the
caller answers with an error and reads go on.

Two locks. `wlock` orders every change and the journal (held while a change is
decided and written; admin changes also hold it through their fsync, so one admin
change is durable before the next is decided); `lock` guards memory, held briefly
by readers and by each change as it is applied. Publish and Acknowledge, the hot
paths, write under `wlock` but wait for their fsync outside it, sharing one fsync
with every other writer then waiting (group commit), and are applied afterwards;
compaction waits for those in flight. Stored protos are never mutated in place, so
a handler may serialize what it read after letting go of the lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from reconciler.errors import InputError
from reconciler.localserver.api import protos
from reconciler.localserver.api.wellknown import check_times
from reconciler.localserver.persistence import journal as j
from reconciler.localserver.persistence.loading import StateDamaged

log = logging.getLogger(__name__)

UNUSABLE_HINT = (
    "restart with `reconcile local-server --state {dir} --recover`: it keeps every "
    "other record, sets the unusable ones aside in a file beside the state (named in "
    "its report) and writes a fresh snapshot without them"
)


# Records holding a resource a request carried: replayed only if the request's own
# checks of durations and timestamps (`wellknown`, applied to every request) pass.
_CHECKED_ON_REPLAY: dict[int, Any] = {
    j.PUT_TOPIC: protos.Topic,
    j.PUT_SUBSCRIPTION: protos.Subscription,
    j.DETACH_SUBSCRIPTION: protos.Subscription,
    j.PUT_POLICY: protos.Policy,
    j.SNAPSHOT_CONFIG: protos.Snapshot,
    j.PUT_IAM_POLICY: protos.IamPolicy,
    j.PUT_SCHEMA: protos.ListSchemaRevisionsResponse,
}


class Writes(Protocol):
    """What a room of the state needs to change it: the two locks and the journal
    (`JournaledState` gives them). Stated here so that no room imports the state."""

    wlock: threading.RLock
    lock: threading.RLock

    @property
    def durable(self) -> bool: ...
    def commit(self, *records: j.Record) -> None: ...
    def write_grouped(self, records: list[j.Record]) -> int: ...
    def sync_grouped(self, ticket: int, apply: Callable[[], Any]) -> Any: ...
    def settle(self) -> None: ...
    def maybe_compact(self) -> None: ...


class JournaledState:
    """In memory until `_open`; then journaled in a state directory. A subclass says
    how a record changes memory (`_apply`), what a compaction writes
    (`_all_records`) and what follows a replay (`_replayed`)."""

    def __init__(self) -> None:
        self.wlock = threading.RLock()
        self.lock = threading.RLock()
        self._idle = threading.Condition(self.lock)
        self._in_flight = 0  # grouped writes journaled but not yet applied
        self._journal: j.Journal | None = None
        self.loaded: j.Loaded | None = None

    def _apply(self, record: j.Record) -> None:
        raise NotImplementedError

    def _all_records(self) -> Iterator[j.Record]:
        raise NotImplementedError

    def _replayed(self) -> None:
        """After the journal's records are applied, before anything is written."""

    def _open(
        self, state_dir: Path, *, fsync: bool, compact_after_bytes: int, recover: bool
    ) -> None:
        """Load the state directory: replay it (`StateDamaged` if it is damaged, unless
        `recover`), then keep its journal open for every later change. `loaded` says
        what was found (torn tail dropped, migration, what a recovery dropped)."""
        journal = j.Journal(Path(state_dir), fsync=fsync, compact_after_bytes=compact_after_bytes)
        try:
            self.loaded = journal.load(recover=recover)
            for note in self.loaded.notes:
                log.warning("local server: %s", note)
            unusable = self._replay(self.loaded.records)
            self.loaded.records = []  # applied; do not keep a second copy
            self._replayed()
            if unusable:
                self._set_aside(journal, unusable, recover)
            if self.loaded.rewrite or unusable:  # recovery or migration: a fresh snapshot
                journal.compact(self._all_records())
        except BaseException:
            journal.close()
            raise
        self._journal = journal

    @property
    def durable(self) -> bool:
        return self._journal is not None

    def _replay(self, records: list[j.Record]) -> list[tuple[j.Record, str]]:
        """Apply the loaded records; those that cannot be applied (a value an earlier
        version journaled without checking it, such as a push endpoint that is no
        URL or a duration no JSON can hold, or bytes that decode as no record of
        their kind) are returned with the reason, having changed nothing."""
        unusable = []
        with self.lock:  # nobody else yet; the conditions want it held
            for record in records:
                try:
                    checked = _CHECKED_ON_REPLAY.get(record[0])
                    if checked is not None:  # what a request's check would refuse
                        check_times(checked.FromString(record[2]))
                    self._apply(record)
                except InputError:  # a record of a newer writer: its own message
                    raise
                except Exception as exc:  # whatever a reader of the record refuses
                    unusable.append((record, str(exc) or type(exc).__name__))
        return unusable

    def _set_aside(
        self, journal: j.Journal, unusable: list[tuple[j.Record, str]], recover: bool
    ) -> None:
        """Refuse a state holding records it cannot use, naming the first; under
        `recover`, keep them in a file of their own and say so in the recovery's
        report (`Loaded.report`; the caller then writes the state without them)."""
        loaded = self.loaded
        assert loaded is not None
        if not recover:
            record, why = unusable[0]
            more = f" (and {len(unusable) - 1} more)" if len(unusable) > 1 else ""
            raise StateDamaged(
                f"{journal.directory}: the state holds {j.describe(record)}{more}, which "
                f"this local server cannot use: {why}; it refuses to start on it",
                hint=UNUSABLE_HINT.format(dir=journal.directory),
            )
        loaded.unusable_file = journal.set_aside([record for record, _ in unusable])
        loaded.unusable = [(j.describe(record), why) for record, why in unusable]

    def commit(self, *records: j.Record) -> None:
        """Make `records` durable, under `wlock` and before memory changes; raises
        `StateWriteError` (nothing written) when the disk refuses."""
        if self._journal is None or not records:
            return
        self._journal.append(list(records))

    def write_grouped(self, records: list[j.Record]) -> int:
        """Under `wlock`: journal `records` (not yet durable) for a change applied
        after `sync_grouped`; a ticket (0 in memory). Compaction waits for it."""
        if self._journal is None:
            return 0
        ticket = self._journal.write(records)
        with self.lock:
            self._in_flight += 1
        return ticket

    def sync_grouped(self, ticket: int, apply: Callable[[], Any]) -> Any:
        """Outside `wlock`: wait for the shared fsync, then apply under `lock`."""
        try:
            if ticket:
                assert self._journal is not None
                self._journal.sync(ticket)
            with self.lock:
                return apply()
        finally:
            if ticket:
                with self.lock:
                    self._in_flight -= 1
                    self._idle.notify_all()

    def settle(self) -> None:
        """Under `wlock`: wait until every grouped write journaled so far (a Publish,
        an Acknowledge) is applied, so that memory is what replaying the journal up
        to here gives (a snapshot or a Seek computed from it replays the same)."""
        with self.lock:
            while self._in_flight:
                self._idle.wait()

    def maybe_compact(self) -> None:
        """Fold the journal into the snapshot once it has grown enough (under `wlock`,
        after a change is in memory, which the snapshot must hold). A failure is
        logged, not raised: the change is durable in the journal, which stays valid."""
        journal = self._journal
        if journal is None or not journal.should_compact():
            return
        try:
            self._compact(journal)
        except j.StateWriteError as exc:
            journal.compact_after_bytes *= 2  # not on every later write
            log.warning("local server: %s; the journal keeps every change", exc)

    def _compact(self, journal: j.Journal) -> None:
        self.settle()
        with self.lock:
            records = list(self._all_records())
        journal.compact(records)

    def inject_write_failure(self, code: int, *, count: int, at: str) -> None:
        if self._journal is None:
            raise ValueError("an in-memory server writes no state to fail")
        self._journal.inject_failure(code, count=count, at=at)

    def compact(self) -> None:
        """Fold the journal into the snapshot now (also done automatically)."""
        with self.wlock:
            if self._journal is not None:
                self._compact(self._journal)

    def close(self, *, compact: bool = True) -> None:
        """Release the state directory; `compact=False` leaves the journal exactly as
        a crash would. A compaction the disk refuses is skipped with a warning: the
        journal alone holds every acknowledged change."""
        with self.wlock:
            if self._journal is not None:
                if compact and self._journal.broken is None:
                    try:
                        self._compact(self._journal)
                    except j.StateWriteError as exc:
                        log.warning(
                            "local server: not compacted at stop (%s); the journal keeps "
                            "every acknowledged change",
                            exc,
                        )
                self._journal.close()
                self._journal = None
