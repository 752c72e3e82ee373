"""The values of the journal records of subscriptions and messages (`persistence`
frames them; `subscriptions` writes and replays them): little-endian binary, IDs as
u64, times as u64 nanoseconds since the epoch, names as UTF-8 with their length.

- PUBLISH: first message ID, publish time, region, the subscriptions receiving it,
  then the Publish request's bytes as received (or as the topic's message transforms
  made them: a replay never runs a transform);
- ACK: when, then the message IDs acknowledged;
- BACKLOG (snapshot only): a subscription's unacknowledged message IDs, then its
  retained acknowledged ones with their ack times;
- NEXT_MESSAGE_ID (in a snapshot, and after a Publish whose topic's transforms
  filtered messages: the IDs they were given are never reused): the next message ID
  to number;
- DELIVERY_ATTEMPTS: (message ID, attempts so far as u32) pairs;
- DEAD_LETTERED: when the source acknowledged which IDs, the dead-letter topic's
  name, then its PUBLISH value.
"""

from __future__ import annotations

import struct

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_PUBLISH = struct.Struct("<QQB")
_ACKED = struct.Struct("<QQ")
_ATTEMPT = struct.Struct("<QI")


def encode_publish(first_id: int, publish_ns: int, region: str, receivers: list[str]) -> bytes:
    """The head of a PUBLISH record's value; the request's bytes follow it."""
    r = region.encode("utf-8")
    parts = [_PUBLISH.pack(first_id, publish_ns, len(r)), r, _U16.pack(len(receivers))]
    for name in receivers:
        n = name.encode("utf-8")
        parts += [_U16.pack(len(n)), n]
    return b"".join(parts)


def decode_publish(value: bytes) -> tuple[int, int, str, list[str], bytes]:
    first_id, publish_ns, rlen = _PUBLISH.unpack_from(value, 0)
    pos = _PUBLISH.size
    region = value[pos : pos + rlen].decode("utf-8")
    pos += rlen
    (count,) = _U16.unpack_from(value, pos)
    pos += 2
    receivers = []
    for _ in range(count):
        (n,) = _U16.unpack_from(value, pos)
        pos += 2
        receivers.append(value[pos : pos + n].decode("utf-8"))
        pos += n
    return first_id, publish_ns, region, receivers, value[pos:]


def encode_ack(now_ns: int, ids: list[int]) -> bytes:
    return _U64.pack(now_ns) + struct.pack(f"<{len(ids)}Q", *ids)


def decode_ack(value: bytes) -> tuple[int, list[int]]:
    (now_ns,) = _U64.unpack_from(value, 0)
    count = (len(value) - 8) // 8
    return now_ns, list(struct.unpack_from(f"<{count}Q", value, 8))


def encode_backlog(unacked: list[int], acked: list[tuple[int, int]]) -> bytes:
    parts = [_U32.pack(len(unacked)), *map(_U64.pack, unacked), _U32.pack(len(acked))]
    parts += [_ACKED.pack(i, ns) for i, ns in acked]
    return b"".join(parts)


def decode_backlog(value: bytes) -> tuple[list[int], list[tuple[int, int]]]:
    """(unacknowledged IDs, (retained acknowledged ID, ack time) pairs)."""
    (count,) = _U32.unpack_from(value, 0)
    unacked = list(struct.unpack_from(f"<{count}Q", value, 4))
    pos = 4 + 8 * count
    (count,) = _U32.unpack_from(value, pos)
    pos += 4
    acked = [_ACKED.unpack_from(value, pos + i * _ACKED.size) for i in range(count)]
    return unacked, acked


def encode_next_id(next_id: int) -> bytes:
    return _U64.pack(next_id)


def decode_next_id(value: bytes) -> int:
    return int(_U64.unpack(value)[0])


def encode_attempts(pairs: list[tuple[int, int]]) -> bytes:
    return b"".join(_ATTEMPT.pack(msg_id, count) for msg_id, count in pairs)


def decode_attempts(value: bytes) -> list[tuple[int, int]]:
    if len(value) % _ATTEMPT.size:
        raise ValueError(f"a delivery-attempts record of {len(value)} bytes")
    return [_ATTEMPT.unpack_from(value, pos) for pos in range(0, len(value), _ATTEMPT.size)]


def encode_forward(ack_ns: int, ids: list[int], topic: str, publish: bytes) -> bytes:
    name = topic.encode("utf-8")
    head = [_U64.pack(ack_ns), _U32.pack(len(ids)), *map(_U64.pack, ids)]
    return b"".join([*head, _U32.pack(len(name)), name, publish])


def decode_forward(value: bytes) -> tuple[int, list[int], str, bytes]:
    """(ack time, source message IDs, dead-letter topic, its PUBLISH value)."""
    (ack_ns,) = _U64.unpack_from(value, 0)
    (count,) = _U32.unpack_from(value, 8)
    pos = 12
    ids = list(struct.unpack_from(f"<{count}Q", value, pos))
    pos += 8 * count
    (size,) = _U32.unpack_from(value, pos)
    pos += 4
    if pos + size > len(value):
        raise ValueError("a dead-letter forward record cut short")
    topic = value[pos : pos + size].decode("utf-8")
    return ack_ns, ids, topic, value[pos + size :]
