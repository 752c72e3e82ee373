"""Crash-safe persistence: a snapshot file plus an append-only journal of records.

Every record is framed as `length (u32) | crc32 (u32) | payload`. A write is
acknowledged only after write + flush + fsync, so a restart sees every acknowledged
change; a torn last record (killed mid-write) fails its length or CRC check and is cut
off on open. Compaction writes the whole state to a temp file, fsyncs it, renames it
over the snapshot (atomic), fsyncs the directory, then empties the journal; replaying
records already contained in the snapshot is harmless because every record is a full
put or delete. Concurrent writers share one fsync (group commit).
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from reconciler.errors import UsageError

_FRAME = struct.Struct("<II")
_RECORD = struct.Struct("<BH")
MAGIC = b"RCLSNAP1"
MAX_RECORD = 64 * 1024 * 1024

# Record kinds.
PUT_TOPIC = 1
DELETE_TOPIC = 2
PUT_POLICY = 3
DELETE_POLICY = 4
SET_ANCESTRY = 5
DELETE_ANCESTRY = 6

Record = tuple[int, str, bytes]


class StateInUse(UsageError):
    """Another local server (e.g. `reconcile local-server --state` or a running
    `--local` command) holds the state directory."""


def encode(kind: int, key: str, value: bytes = b"") -> bytes:
    """One framed record."""
    k = key.encode("utf-8")
    payload = _RECORD.pack(kind, len(k)) + k + value
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def decode_stream(data: bytes, start: int = 0) -> tuple[list[Record], int]:
    """Records up to the first damaged one, and the offset where the good part ends."""
    records: list[Record] = []
    pos = start
    end = len(data)
    while pos + _FRAME.size <= end:
        length, crc = _FRAME.unpack_from(data, pos)
        body = pos + _FRAME.size
        if length < _RECORD.size or length > MAX_RECORD or body + length > end:
            break
        payload = data[body : body + length]
        if zlib.crc32(payload) != crc:
            break
        kind, klen = _RECORD.unpack_from(payload, 0)
        if _RECORD.size + klen > length:
            break
        key = payload[_RECORD.size : _RECORD.size + klen].decode("utf-8", "replace")
        records.append((kind, key, payload[_RECORD.size + klen :]))
        pos = body + length
    return records, pos


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """Owns `snapshot.bin` and `journal.log` in one directory (locked against a second
    server on the same directory)."""

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
        self.records_since_compaction = 0
        self.bytes_since_compaction = 0
        self.snapshot_bytes = 0
        created = not (directory / self.LOG).exists()
        self._fh = open(directory / self.LOG, "ab")  # noqa: SIM115 - lives with the journal
        if created and fsync:
            _fsync_dir(directory)  # the new file's directory entry must survive a crash

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

    def replay(self) -> Iterator[Record]:
        """Snapshot records, then journal records; cuts a torn journal tail off."""
        snap = self.directory / self.SNAPSHOT
        if snap.exists():
            data = snap.read_bytes()
            self.snapshot_bytes = len(data)
            if data[: len(MAGIC)] == MAGIC:
                # A snapshot is renamed into place only when complete; stop at damage anyway.
                records, _ = decode_stream(data, len(MAGIC))
                yield from records
        log = self.directory / self.LOG
        data = log.read_bytes() if log.exists() else b""
        records, good = decode_stream(data)
        if good < len(data):
            self._fh.flush()
            os.truncate(log, good)
            if self.fsync:
                os.fsync(self._fh.fileno())
        self.records_since_compaction = len(records)
        self.bytes_since_compaction = good
        yield from records

    def write(self, frames: bytes, count: int = 1) -> int:
        """Append framed records (not yet durable); returns a ticket for `sync`."""
        with self._write_lock:
            self._fh.write(frames)
            self._fh.flush()
            self._written += 1
            self.records_since_compaction += count
            self.bytes_since_compaction += len(frames)
            return self._written

    def sync(self, ticket: int) -> None:
        """Return once the write with this ticket is on disk (one fsync serves many)."""
        if not self.fsync:
            return
        with self._sync_lock:
            if self._synced >= ticket:
                return
            with self._write_lock:
                target = self._written
            os.fsync(self._fh.fileno())
            self._synced = target

    def should_compact(self) -> bool:
        """Compaction rewrites everything, so only once the journal has grown past a
        fixed size plus twice the snapshot: amortised O(1) per mutation."""
        return self.bytes_since_compaction > self.compact_after_bytes + 2 * self.snapshot_bytes

    def compact(self, records: Iterable[bytes]) -> None:
        """Replace the snapshot with `records` (the whole state) and empty the journal.
        The caller holds the state lock so that no write happens meanwhile."""
        tmp = self.directory / (self.SNAPSHOT + ".tmp")
        size = 0
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            size += len(MAGIC)
            for frame in records:
                fh.write(frame)
                size += len(frame)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.directory / self.SNAPSHOT)
        _fsync_dir(self.directory)
        with self._write_lock:
            self._fh.flush()
            self._fh.truncate(0)
            self._fh.seek(0)
            os.fsync(self._fh.fileno())
            self._synced = self._written
            self.records_since_compaction = 0
            self.bytes_since_compaction = 0
            self.snapshot_bytes = size

    def close(self) -> None:
        with self._write_lock:
            if not self._fh.closed:
                self._fh.flush()
                if self.fsync:
                    os.fsync(self._fh.fileno())
                self._fh.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
