"""Ack IDs: what one delivery of one message to one subscription is called.

An ack ID names its subscription and its delivery, so that an acknowledgement can
only ever settle the delivery it was handed out with:

    {tag}{incarnation}-{message id}-{delivery}

`tag` is 16 hex digits of the SHA-256 of the subscription's name (the same for every
server run, so an ID for another subscription is told apart from a stale one of this
subscription whatever happened in between); `incarnation` is 8 random hex digits
drawn when the subscription's backlog is made in memory (a new server run, or the
subscription deleted and created again under the same name: IDs handed out before
name a delivery that no longer exists); `delivery` is the number of the pull (or
stream response) that leased the message, so a redelivered message has a new ID and
the old one is stale.

Leases are not durable (a restarted server delivers every unacknowledged message
again), so neither is an ack ID: one from before a restart is stale, answered as an
expired one (`docs/local-server.md`, "Acknowledgements and leases").
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from operator import itemgetter

_ONE = re.compile(r"([0-9a-f]{24})-(\d{1,19})-(\d{1,19})")
_FIRST, _SECOND, _THIRD = itemgetter(0), itemgetter(1), itemgetter(2)
_TOKENS = re.compile(r"(?<![^ ])([0-9a-f]{24})-(\d{1,19})-(\d{1,19})(?![^ ])")


class AckIds:
    """The ack IDs of one request, parsed: as sent (`texts`), and column by column
    what they name (`prefixes[i]`, `messages[i]`, `deliveries[i]`), with the distinct
    prefixes apart (almost always one). Columns rather than an object per ID: a call
    carries up to thousands, and a Python step per ID costs more than the rest of it."""

    __slots__ = ("deliveries", "distinct", "messages", "prefixes", "texts")

    def __init__(self, texts: list[str], found: Sequence[Sequence[str]]) -> None:
        self.texts = texts
        self.prefixes: list[str] = list(map(_FIRST, found))
        self.messages: list[int] = list(map(int, map(_SECOND, found)))
        self.deliveries: list[int] = list(map(int, map(_THIRD, found)))
        self.distinct = set(self.prefixes)

    def tags(self) -> set[str]:
        """The subscription tags these IDs carry."""
        return {prefix[:16] for prefix in self.distinct}

    def only(self, indexes: list[int]) -> AckIds:
        """The IDs at these positions."""
        return AckIds(
            [self.texts[i] for i in indexes],
            [(self.prefixes[i], str(self.messages[i]), str(self.deliveries[i])) for i in indexes],
        )


def subscription_tag(name: str) -> str:
    """The tag the ack IDs of subscription `name` start with."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def new_prefix(name: str) -> str:
    """The prefix of the ack IDs a new backlog of `name` hands out."""
    return f"{subscription_tag(name)}{secrets.randbits(32):08x}"


def parse(ack_ids: list[str]) -> AckIds | str:
    """The ack IDs parsed, or the first one that is not an ack ID of this server (one
    regular expression over all of them; per ID only when that fails)."""
    joined = " ".join(ack_ids)
    # Each match is a whole space-separated token; with no space inside an ID, as
    # many matches as IDs means every ID is one.
    if joined.count(" ") == len(ack_ids) - 1:
        found = _TOKENS.findall(joined)
        if len(found) == len(ack_ids):
            return AckIds(ack_ids, found)
    groups = []
    for text in ack_ids:
        match = _ONE.fullmatch(text)
        if match is None:
            return text
        groups.append(match.groups())
    return AckIds(ack_ids, groups)
