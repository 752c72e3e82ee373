"""Crash-safe persistence: a snapshot file plus an append-only journal of records
(format in `frames`).

A write is acknowledged only after write + flush + fsync, so a restart sees every
acknowledged change. On open every byte is checked: an incomplete last journal record
(a crash mid-write) is dropped and reported; any other damage refuses the open
(`StateDamaged`, naming file and offset) rather than serve, truncate or compact a
state known to be incomplete. `load(recover=True)` keeps every intact record instead
and says what it dropped; the caller then writes a fresh snapshot with `compact`,
which first moves the damaged files aside (never deleting them). Compaction writes
the whole state to a temp file, fsyncs it, renames it over the snapshot, fsyncs the
directory, then empties the journal; replaying records already in the snapshot is
harmless because every record is a full put or delete. Concurrent writers share one
fsync (group commit).

A write that fails (ENOSPC, EIO) raises `StateWriteError` and is cut back off the
journal, so the caller changes nothing and answers with an error; a failed fsync
leaves the file in an unknown state, so the journal then refuses every later write
(`StateWriteError`, until a restart) while the server keeps serving reads.
`Journal.inject_failure` makes the next writes or fsyncs fail (tests run it
everywhere, where no small file system can be mounted).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from reconciler.errors import UsageError
from reconciler.localserver.persistence import frames as f
from reconciler.localserver.persistence.loading import Loaded, StateDamaged, load_state

# Record kinds.
PUT_TOPIC = 1
DELETE_TOPIC = 2
PUT_POLICY = 3
DELETE_POLICY = 4
SET_ANCESTRY = 5
DELETE_ANCESTRY = 6
# Format 3: subscriptions and messages (`pubsub.subscriptions` encodes their values).
PUT_SUBSCRIPTION = 7
DELETE_SUBSCRIPTION = 8
DETACH_SUBSCRIPTION = 9
PUBLISH = 10  # a Publish request as received, with its IDs, time, region, receivers
ACK = 11
NEXT_MESSAGE_ID = 12  # in a snapshot; live after a Publish whose topic transforms filtered some
BACKLOG = 13  # snapshot only: a subscription's unacked and retained acked messages
# Schemas (`schemas.registry` encodes their values: every revision of one schema).
PUT_SCHEMA = 14
DELETE_SCHEMA = 15
# Pub/Sub snapshots and Seek (`pubsub.snapshots` encodes their values).
PUT_SNAPSHOT = 16  # a snapshot made: its config and the IDs of the messages it retains
SNAPSHOT_CONFIG = 17  # its labels or expire time changed
DELETE_SNAPSHOT = 18
SEEK = 19  # a subscription sought to a time or a snapshot
PUT_IAM_POLICY = 20  # a resource's IAM policy (dropped with the resource, not journaled apart)
# Org Policy custom constraints (`pubsub.state` encodes their values: JSON).
PUT_CUSTOM_CONSTRAINT = 21
DELETE_CUSTOM_CONSTRAINT = 22
# Resource Manager: a project's or folder's own fields (the proto, its parent cleared:
# where it sits is the SET_ANCESTRY record journaled with it).
PUT_RESOURCE = 23
# Dead-letter policies (`pubsub.deadletter` encodes their values).
DELIVERY_ATTEMPTS = 24  # the delivery attempts of messages a pull handed out
DEAD_LETTERED = 25  # messages forwarded to a dead-letter topic and acknowledged at the source
KINDS = frozenset(range(1, 26))
KIND_NAMES = {
    PUT_TOPIC: "topic",
    DELETE_TOPIC: "topic deletion",
    PUT_POLICY: "org policy",
    DELETE_POLICY: "org policy deletion",
    SET_ANCESTRY: "ancestry link",
    DELETE_ANCESTRY: "ancestry link deletion",
    PUT_SUBSCRIPTION: "subscription",
    DELETE_SUBSCRIPTION: "subscription deletion",
    DETACH_SUBSCRIPTION: "subscription detachment",
    PUBLISH: "Publish request",
    ACK: "Acknowledge",
    NEXT_MESSAGE_ID: "next message ID",
    BACKLOG: "subscription backlog",
    PUT_SCHEMA: "schema",
    DELETE_SCHEMA: "schema deletion",
    PUT_SNAPSHOT: "snapshot",
    SNAPSHOT_CONFIG: "snapshot change",
    DELETE_SNAPSHOT: "snapshot deletion",
    SEEK: "Seek",
    PUT_IAM_POLICY: "IAM policy",
    PUT_CUSTOM_CONSTRAINT: "custom constraint",
    DELETE_CUSTOM_CONSTRAINT: "custom constraint deletion",
    PUT_RESOURCE: "Resource Manager resource",
    DELIVERY_ATTEMPTS: "delivery attempts",
    DEAD_LETTERED: "dead-letter forward",
}

Record = f.Record
__all__ = ["Journal", "Loaded", "StateDamaged", "StateInUse", "StateWriteError"]


def describe(record: Record) -> str:
    """A record as a message names it: "the subscription record of projects/p/..."."""
    kind, key, _ = record
    what = KIND_NAMES.get(kind, f"kind-{kind}")
    return f"the {what} record of {key}" if key else f"the {what} record"


# Errors that say "the disk is full" rather than "the disk is failing".
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


class StateWriteError(Exception):
    """A change could not be made durable: it was not made (nothing in memory, the
    journal cut back), and the caller answers the request with an error."""

    def __init__(self, path: Path, cause: OSError, *, broken: bool = False) -> None:
        self.path = path
        self.errno = cause.errno
        self.broken = broken
        reason = cause.strerror or str(cause)
        super().__init__(f"cannot write the local server's state {path}: {reason}")

    @property
    def no_space(self) -> bool:
        return self.errno in NO_SPACE


class StateInUse(UsageError):
    """Another local server (e.g. `reconcile local-server --state` or a running
    `--local` command) holds the state directory."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """Owns `snapshot.bin` and `journal.log` in one directory (locked against a second
    server on the same directory). `load` first, then `write` / `sync` / `compact`."""

    SNAPSHOT = "snapshot.bin"
    LOG = "journal.log"

    def __init__(
        self, directory: Path, *, fsync: bool = True, compact_after_bytes: int = 4 * 1024 * 1024
    ) -> None:
        self.directory = directory
        self.fsync = fsync
        self.compact_after_bytes = compact_after_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = self._take_lock()
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._written = 0
        self._synced = 0
        self._seq = 0
        self.records_since_compaction = 0
        self.bytes_since_compaction = 0
        self.snapshot_bytes = 0
        self._fd = -1
        self._end = 0  # bytes of the journal that hold whole, written records
        self._synced_end = 0
        self.broken: StateWriteError | None = None
        self._inject: list[tuple[str, int]] = []  # (where, errno), consumed in order
        self.loaded: Loaded | None = None

    def _take_lock(self) -> int:
        import fcntl

        fd = os.open(self.directory / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StateInUse(
                f"state directory {self.directory} is in use by another local server",
                hint="stop the other server, or point --emulator at it instead of --local",
            ) from None
        return fd

    @property
    def snapshot_path(self) -> Path:
        return self.directory / self.SNAPSHOT

    @property
    def log_path(self) -> Path:
        return self.directory / self.LOG

    def load(self, *, recover: bool = False) -> Loaded:
        """Read and check both files (raises `StateDamaged` unless `recover`); opens
        the journal for appending unless the caller must rewrite the state first
        (`Loaded.rewrite`: a recovery or a format-1 migration, done by `compact`)."""
        loaded = load_state(self.snapshot_path, self.log_path, recover=recover)
        self.loaded = loaded
        self.snapshot_bytes = loaded.snapshot_bytes
        if loaded.rewrite:
            return loaded
        if loaded.journal_end is None:  # missing, empty or a header cut short
            self._new_journal(self.log_path)
        else:
            if loaded.journal_end < self.log_path.stat().st_size:
                os.truncate(self.log_path, loaded.journal_end)  # the torn tail only
            self._open_journal()
            self._seq = loaded.journal_seq
            self.records_since_compaction = loaded.journal_records
            self.bytes_since_compaction = loaded.journal_end - f.HEADER_SIZE
        return loaded

    def _new_journal(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(f.header(f.JOURNAL_MAGIC))
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if self.fsync:
            _fsync_dir(self.directory)
        self._open_journal()
        self._seq = 0
        self.records_since_compaction = 0
        self.bytes_since_compaction = 0

    def _open_journal(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND)
        self._end = self._synced_end = os.fstat(self._fd).st_size

    # ------------------------------------------------------------- failure injection

    def inject_failure(
        self, code: int = errno.ENOSPC, *, count: int = 1, at: str = "write"
    ) -> None:
        """Make the next `count` journal writes (`at="write"`) or fsyncs (`at="fsync"`)
        fail with OSError(`code`), as a full or failing disk would."""
        if at not in ("write", "fsync"):
            raise ValueError("at must be 'write' or 'fsync'")
        with self._write_lock:
            self._inject.extend([(at, code)] * count)

    def _injected(self, where: str) -> None:
        if self._inject and self._inject[0][0] == where:
            code = self._inject.pop(0)[1]
            raise OSError(code, os.strerror(code))

    # ------------------------------------------------------------------------ writes

    def write(self, records: list[Record]) -> int:
        """Append records (not yet durable); returns a ticket for `sync`. On failure
        (`StateWriteError`) the journal is as before the call."""
        with self._write_lock:
            if self.broken is not None:
                raise self.broken
            data, count = f.encode_all(records, self._seq + 1)
            fd = self._handle()
            start = self._end
            try:
                self._injected("write")
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                self._cut_back(fd, start)
                raise StateWriteError(self.log_path, exc) from None
            self._end = start + len(data)
            self._seq += count
            self._written += 1
            self.records_since_compaction += count
            self.bytes_since_compaction += len(data)
            return self._written

    def _cut_back(self, fd: int, end: int) -> None:
        """Drop a partly written record (so no later record follows a torn one); if
        even that fails, the journal refuses every later write."""
        try:
            os.ftruncate(fd, end)
        except OSError as again:
            self.broken = StateWriteError(self.log_path, again, broken=True)

    def _handle(self) -> int:
        if self._fd < 0:
            raise RuntimeError("journal is not open (load it first)")
        return self._fd

    def sync(self, ticket: int) -> None:
        """Return once the write with this ticket is on disk (one fsync serves many).
        A failed fsync fails every write not yet synced and breaks the journal."""
        if not self.fsync:
            return
        with self._sync_lock:
            if self._synced >= ticket:
                return
            if self.broken is not None:
                raise self.broken
            with self._write_lock:
                target, end = self._written, self._end
                fd = self._handle()
            try:
                self._injected_sync()
                os.fsync(fd)
            except OSError as exc:
                self._broken_by_fsync(fd, exc)
                assert self.broken is not None
                raise self.broken from None
            self._synced = target
            self._synced_end = end

    def _injected_sync(self) -> None:
        with self._write_lock:
            self._injected("fsync")

    def _broken_by_fsync(self, fd: int, exc: OSError) -> None:
        """After a failed fsync what reached the disk is unknown (the kernel may have
        dropped the dirty pages): cut the unsynced records off, best effort, and
        refuse further writes until a restart reads the journal again."""
        with self._write_lock:
            self.broken = StateWriteError(self.log_path, exc, broken=True)
            try:
                os.ftruncate(fd, self._synced_end)
                self._end = self._synced_end
            except OSError:
                pass

    def append(self, records: list[Record]) -> None:
        """Write and make durable (the caller serialises appends)."""
        self.sync(self.write(records))

    def should_compact(self) -> bool:
        """Compaction rewrites everything, so only once the journal has grown past a
        fixed size plus twice the snapshot: amortised O(1) per mutation."""
        return self.bytes_since_compaction > self.compact_after_bytes + 2 * self.snapshot_bytes

    def compact(self, records: Iterable[Record]) -> None:
        """Replace the snapshot with `records` (the whole state) and empty the journal.
        The caller holds the state lock so that no write happens meanwhile. After a
        recovery or migration, the files it replaces are first kept aside."""
        tmp = self.directory / (self.SNAPSHOT + ".tmp")
        try:
            size = self._write_snapshot(tmp, records)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StateWriteError(tmp, exc) from None
        aside = self._aside_names()
        if self.SNAPSHOT in aside and self.snapshot_path.exists():
            os.link(self.snapshot_path, self.directory / aside[self.SNAPSHOT])
        os.replace(tmp, self.snapshot_path)
        _fsync_dir(self.directory)
        if self._fd < 0:  # recovery / migration: the old journal goes aside whole
            if self.LOG in aside and self.log_path.exists():
                os.rename(self.log_path, self.directory / aside[self.LOG])
            self._new_journal(self.log_path)
            if self.loaded is not None:
                self.loaded.rewrite = False
        else:
            with self._write_lock:
                fd = self._handle()
                # Shrinking needs no space; a failure here leaves a journal whose
                # records the new snapshot already holds (replaying them is harmless).
                os.ftruncate(fd, f.HEADER_SIZE)
                os.fsync(fd)
                self._end = self._synced_end = f.HEADER_SIZE
                self._synced = self._written
                self._seq = 0
                self.records_since_compaction = 0
                self.bytes_since_compaction = 0
        self.snapshot_bytes = size

    def _write_snapshot(self, tmp: Path, records: Iterable[Record]) -> int:
        """Write and fsync the whole state to `tmp`; its size."""
        count = 0
        size = f.HEADER_SIZE
        with open(tmp, "wb") as fh:
            fh.write(f.header(f.SNAPSHOT_MAGIC))
            for count, record in enumerate(records, 1):
                frame = f.encode(count, record)
                fh.write(frame)
                size += len(frame)
            fh.seek(0)
            fh.write(f.header(f.SNAPSHOT_MAGIC, count, size - f.HEADER_SIZE))
            fh.flush()
            with self._write_lock:
                self._injected("write")
            os.fsync(fh.fileno())
        return size

    def _aside_names(self) -> dict[str, str]:
        """File name -> the name it is kept under, for the files a rewrite replaces."""
        loaded = self.loaded
        if loaded is None or not loaded.rewrite:
            return {}
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        out = {}
        for name in (self.SNAPSHOT, self.LOG):
            suffix = loaded.aside.get(name)
            if suffix is None:
                continue
            target = f"{name}.{suffix}-{stamp}"
            n = 1
            while (self.directory / target).exists():
                n += 1
                target = f"{name}.{suffix}-{stamp}.{n}"
            out[name] = target
        loaded.kept_aside = [out[n] for n in sorted(out)]
        return out

    def set_aside(self, records: list[Record]) -> str:
        """Keep records the state cannot use (written by an earlier version, before
        their values were checked) in a file of their own beside the state, in the
        snapshot's framing, fsynced; its name. The state is then rewritten without
        them (`compact`), so nothing is lost and nothing unusable is replayed."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        name = f"unusable-records-{stamp}.bin"
        n = 1
        while (self.directory / name).exists():
            n += 1
            name = f"unusable-records-{stamp}.{n}.bin"
        path = self.directory / name
        try:
            self._write_snapshot(path, records)
            _fsync_dir(self.directory)
        except OSError as exc:
            raise StateWriteError(path, exc) from None
        return name

    def close(self) -> None:
        with self._write_lock:
            if self._fd >= 0:
                if self.fsync and self.broken is None:
                    # Every acknowledged write was synced before its reply.
                    with contextlib.suppress(OSError):
                        os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
