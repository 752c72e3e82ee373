"""On-disk format of the local server's state (format version 3): headers, framed
records, and a scanner that tells intact records from damage.

Version 3 frames records exactly as version 2 did and adds record kinds
(subscriptions, published messages, acknowledgements: see `journal`). The version
is bumped all the same so that an older reconcile refuses a newer state instead of
skipping records it does not know and compacting them away; version 2 files are
read as they are and rewritten as version 3 on open (the old files kept aside).

Both state files start with a 32-byte header, checksummed so that damage to it is
seen rather than mistaken for "no snapshot":

    magic (8) | format version u32 | record count u64 | body bytes u64 | crc32 u32

(the journal's header has count and body 0: it only grows). Every record is framed

    MARK (4) | sequence u64 | length u32 | crc32(payload) u32 | crc32(header) u32 | payload

with payload `kind u8 | key length u16 | key | value`. The checksum is zlib's CRC-32
(ISO-HDLC polynomial; the standard library has no CRC32C). The header checksum lets
a damaged length be told from a torn write; the marker and the full checks let a
scan find the next intact record after damage, and the sequence numbers (1, 2, ...
per file) count the records lost in between.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

FORMAT_VERSION = 3
READABLE_VERSIONS = (2, 3)  # same framing; 2 has only the topic and policy kinds
SNAPSHOT_MAGIC = b"RCLSNAP2"
JOURNAL_MAGIC = b"RCLJRNL2"
V1_SNAPSHOT_MAGIC = b"RCLSNAP1"
MARK = b"\xd1\x7eRC"
MAX_RECORD = 64 * 1024 * 1024

_HEADER = struct.Struct("<8sIQQ")
HEADER_SIZE = _HEADER.size + 4
_FRAME = struct.Struct("<4sQII")  # mark, seq, length, payload crc (then header crc)
FRAME_SIZE = _FRAME.size + 4
_PAYLOAD = struct.Struct("<BH")
_CRC = struct.Struct("<I")
_V1_FRAME = struct.Struct("<II")

# (kind, key, value); kinds are defined in `journal`.
Record = tuple[int, str, bytes]


def header(magic: bytes, count: int = 0, body: int = 0) -> bytes:
    head = _HEADER.pack(magic, FORMAT_VERSION, count, body)
    return head + _CRC.pack(zlib.crc32(head))


@dataclass(frozen=True)
class Header:
    magic: bytes
    version: int
    count: int
    body: int


def read_header(data: bytes) -> Header | None:
    """The header at the start of `data`, or None when it is short or fails its CRC."""
    if len(data) < HEADER_SIZE:
        return None
    head = data[: _HEADER.size]
    (crc,) = _CRC.unpack_from(data, _HEADER.size)
    if zlib.crc32(head) != crc:
        return None
    magic, version, count, body = _HEADER.unpack(head)
    return Header(magic, version, count, body)


def encode(seq: int, record: Record) -> bytes:
    """One framed record with sequence number `seq`."""
    kind, key, value = record
    k = key.encode("utf-8")
    payload = _PAYLOAD.pack(kind, len(k)) + k + value
    head = _FRAME.pack(MARK, seq, len(payload), zlib.crc32(payload))
    return head + _CRC.pack(zlib.crc32(head)) + payload


def encode_all(records: Iterable[Record], first_seq: int = 1) -> tuple[bytes, int]:
    """Frames for `records` numbered from `first_seq`; (bytes, how many)."""
    frames = [encode(seq, r) for seq, r in enumerate(records, first_seq)]
    return b"".join(frames), len(frames)


def _payload(payload: bytes) -> Record | None:
    if len(payload) < _PAYLOAD.size:
        return None
    kind, klen = _PAYLOAD.unpack_from(payload, 0)
    if _PAYLOAD.size + klen > len(payload):
        return None
    try:
        key = payload[_PAYLOAD.size : _PAYLOAD.size + klen].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return kind, key, payload[_PAYLOAD.size + klen :]


@dataclass
class Damage:
    """Bytes [start, end) of a file that hold no intact record."""

    start: int
    end: int
    reason: str
    records: int = 1  # how many records were lost there (from sequence gaps; estimate)


@dataclass
class Scan:
    """What a scan of one file found."""

    records: list[Record] = field(default_factory=list)
    last_seq: int = 0
    end: int = 0  # where the last intact record ends
    damage: list[Damage] = field(default_factory=list)
    torn: Damage | None = None  # an incomplete last record (a crash mid-write)


def _frame_at(data: bytes, pos: int) -> tuple[str, int, int, Record | None]:
    """("ok", seq, end, record), ("torn", ...) for a record cut short by the end of
    the file, or ("bad", ...) with the reason in place of nothing."""
    left = len(data) - pos
    if left < FRAME_SIZE:
        piece = data[pos:]
        if MARK.startswith(piece[: len(MARK)]):
            return "torn", 0, len(data), None
        return "bad", 0, pos, None
    mark, seq, length, crc = _FRAME.unpack_from(data, pos)
    (hcrc,) = _CRC.unpack_from(data, pos + _FRAME.size)
    if mark != MARK or zlib.crc32(data[pos : pos + _FRAME.size]) != hcrc:
        return "bad", 0, pos, None
    body = pos + FRAME_SIZE
    if length > MAX_RECORD:
        return "bad", seq, pos, None
    if body + length > len(data):
        return "torn", seq, len(data), None
    payload = data[body : body + length]
    record = _payload(payload) if zlib.crc32(payload) == crc else None
    if record is None:
        return "bad", seq, pos, None
    return "ok", seq, body + length, record


def _resync(data: bytes, pos: int) -> tuple[int, int] | None:
    """(offset, seq) of the next intact record at or after `pos`."""
    while True:
        pos = data.find(MARK, pos)
        if pos < 0:
            return None
        status, seq, _, _ = _frame_at(data, pos)
        if status == "ok":
            return pos, seq
        pos += 1


def scan(data: bytes, start: int) -> Scan:
    """Every intact record from `start` on, with the damage in between. Damage that
    runs to the end of the file is "torn" when it is an incomplete last record (or
    zeros, as a file system may leave after a crash); any other is real damage."""
    out = Scan(end=start)
    pos = start
    while pos < len(data):
        status, seq, end, record = _frame_at(data, pos)
        if status == "ok" and record is not None:
            out.records.append(record)
            out.last_seq = seq
            out.end = pos = end
            continue
        if status == "torn":
            out.torn = Damage(pos, len(data), "incomplete last record (torn write)")
            break
        nxt = _resync(data, pos + 1)
        if nxt is None:
            if not data[pos:].strip(b"\0"):
                out.torn = Damage(pos, len(data), "zero-filled tail")
            else:
                found = max(1, data.count(MARK, pos))
                out.damage.append(Damage(pos, len(data), "damaged record", found))
            break
        nxt_pos, nxt_seq = nxt
        lost = nxt_seq - out.last_seq - 1 if nxt_seq > out.last_seq else 1
        out.damage.append(Damage(pos, nxt_pos, "damaged record", max(1, lost)))
        pos = nxt_pos
    return out


# --------------------------------------------------------------- format version 1


def looks_like_v1_journal(data: bytes) -> bool:
    """True when `data` starts with an intact record of the version-1 journal."""
    status, _, _ = _v1_frame_at(data, 0)
    return status == "ok"


def _v1_frame_at(data: bytes, pos: int) -> tuple[str, int, Record | None]:
    if len(data) - pos < _V1_FRAME.size:
        return "torn", len(data), None
    length, crc = _V1_FRAME.unpack_from(data, pos)
    body = pos + _V1_FRAME.size
    if length < _PAYLOAD.size or length > MAX_RECORD:
        return "bad", pos, None
    if body + length > len(data):
        return "torn", len(data), None
    payload = data[body : body + length]
    record = _payload(payload) if zlib.crc32(payload) == crc else None
    if record is None:
        return "bad", pos, None
    return "ok", body + length, record


def scan_v1(data: bytes, start: int) -> Scan:
    """Like `scan` for the version-1 format (`length u32 | crc32 u32 | payload`, no
    marker): after damage every later offset is tried."""
    out = Scan(end=start)
    pos = start
    while pos < len(data):
        status, end, record = _v1_frame_at(data, pos)
        if status == "ok" and record is not None:
            out.records.append(record)
            out.end = pos = end
            continue
        nxt = next((p for p in range(pos + 1, len(data)) if _v1_frame_at(data, p)[0] == "ok"), None)
        if nxt is None:
            if status == "torn" or not data[pos:].strip(b"\0"):
                out.torn = Damage(pos, len(data), "incomplete last record (torn write)")
            else:
                out.damage.append(Damage(pos, len(data), "damaged record"))
            break
        out.damage.append(Damage(pos, nxt, "damaged record"))
        pos = nxt
    return out
