"""Protobuf wire-format pieces the hot paths write and read themselves: a varint, a
length-delimited field (a ListSubscriptions page of kept serialized views), the head
of a PubsubMessage that holds its data alone, and the
serialized PublishResponse of consecutive message IDs (built from the first ID and
the count, without a message object or 100 string fields)."""

from __future__ import annotations

from functools import lru_cache


def varint(value: int) -> bytes:
    """`value` as a protobuf base-128 varint."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@lru_cache(maxsize=4096)
def data_only_head(size: int) -> bytes | None:
    """The head (tag 1, length) of a serialized PubsubMessage of `size` bytes that
    holds non-empty data and nothing else; None when no such message has that size."""
    for width in range(1, 6):
        length = size - 1 - width
        if length > 0 and len(varint(length)) == width:
            return b"\n" + varint(length)
    return None


def length_delimited(field: int, data: bytes) -> bytes:
    """`data` as field number `field` of wire type 2 (bytes, string, message): a
    message's fields may be written in any order, and its serialized parts joined."""
    return varint(field << 3 | 2) + varint(len(data)) + data


# The last two digits of an ID: an ID of 3 digits or more is its ID // 100 (the
# same for up to 100 consecutive IDs) followed by one of these.
_LAST_TWO = tuple(f"{i:02d}" for i in range(100))


def publish_response(first: int, count: int) -> bytes:
    """The serialized PublishResponse whose message_ids (field 1) are the decimal
    IDs first .. first + count - 1. Consecutive IDs share all but their last two
    digits, so each run of 100 is one join of precomputed endings, not 100 int to
    str conversions."""
    parts: list[str] = []
    i, end = first, first + count
    while i < end:
        if i < 100:  # one or two digits: no shared head
            stop = min(end, 100)
            parts.extend(f"\n{chr(len(s))}{s}" for s in map(str, range(i, stop)))
            i = stop
            continue
        high, low = divmod(i, 100)
        stop = min(end, i - low + 100)
        head = str(high)
        field = f"\n{chr(len(head) + 2)}{head}"  # field 1, length-delimited, the ID's head
        parts.append(field + field.join(_LAST_TWO[low : low + stop - i]))
        i = stop
    return "".join(parts).encode("ascii")
