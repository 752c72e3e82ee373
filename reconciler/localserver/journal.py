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
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from reconciler.errors import UsageError
from reconciler.localserver import frames as f
from reconciler.localserver.loading import Loaded, StateDamaged, load_state

# Record kinds.
PUT_TOPIC = 1
DELETE_TOPIC = 2
PUT_POLICY = 3
DELETE_POLICY = 4
SET_ANCESTRY = 5
DELETE_ANCESTRY = 6

Record = f.Record
__all__ = ["Journal", "Loaded", "StateDamaged", "StateInUse"]


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
        self._fh: BinaryIO | None = None
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
        self._fh = open(self.log_path, "ab")  # noqa: SIM115 - lives with the journal

    def write(self, records: list[Record]) -> int:
        """Append records (not yet durable); returns a ticket for `sync`."""
        with self._write_lock:
            data, count = f.encode_all(records, self._seq + 1)
            fh = self._handle()
            fh.write(data)
            fh.flush()
            self._seq += count
            self._written += 1
            self.records_since_compaction += count
            self.bytes_since_compaction += len(data)
            return self._written

    def _handle(self) -> BinaryIO:
        if self._fh is None:
            raise RuntimeError("journal is not open (load it first)")
        return self._fh

    def sync(self, ticket: int) -> None:
        """Return once the write with this ticket is on disk (one fsync serves many)."""
        if not self.fsync:
            return
        with self._sync_lock:
            if self._synced >= ticket:
                return
            with self._write_lock:
                target = self._written
                fileno = self._handle().fileno()
            os.fsync(fileno)
            self._synced = target

    def should_compact(self) -> bool:
        """Compaction rewrites everything, so only once the journal has grown past a
        fixed size plus twice the snapshot: amortised O(1) per mutation."""
        return self.bytes_since_compaction > self.compact_after_bytes + 2 * self.snapshot_bytes

    def compact(self, records: Iterable[Record]) -> None:
        """Replace the snapshot with `records` (the whole state) and empty the journal.
        The caller holds the state lock so that no write happens meanwhile. After a
        recovery or migration, the files it replaces are first kept aside."""
        tmp = self.directory / (self.SNAPSHOT + ".tmp")
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
            os.fsync(fh.fileno())
        aside = self._aside_names()
        if self.SNAPSHOT in aside and self.snapshot_path.exists():
            os.link(self.snapshot_path, self.directory / aside[self.SNAPSHOT])
        os.replace(tmp, self.snapshot_path)
        _fsync_dir(self.directory)
        if self._fh is None:  # recovery / migration: the old journal goes aside whole
            if self.LOG in aside and self.log_path.exists():
                os.rename(self.log_path, self.directory / aside[self.LOG])
            self._new_journal(self.log_path)
            if self.loaded is not None:
                self.loaded.rewrite = False
        else:
            with self._write_lock:
                log = self._handle()
                log.flush()
                log.truncate(f.HEADER_SIZE)
                os.fsync(log.fileno())
                self._synced = self._written
                self._seq = 0
                self.records_since_compaction = 0
                self.bytes_since_compaction = 0
        self.snapshot_bytes = size

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

    def close(self) -> None:
        with self._write_lock:
            if self._fh is not None:
                fh = self._handle()
                if not fh.closed:
                    fh.flush()
                    if self.fsync:
                        os.fsync(fh.fileno())
                    fh.close()
                self._fh = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
