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
from typing import NamedTuple

_ONE = re.compile(r"([0-9a-f]{24})-(\d{1,19})-(\d{1,19})")
_ALL = re.compile(r"[0-9a-f]{24}-\d{1,19}-\d{1,19}(?: [0-9a-f]{24}-\d{1,19}-\d{1,19})*")


class AckRef(NamedTuple):
    """One ack ID as sent (`text`) and what it names."""

    text: str
    prefix: str  # tag + incarnation
    message: int
    delivery: int

    @property
    def tag(self) -> str:
        return self.prefix[:16]


def subscription_tag(name: str) -> str:
    """The tag the ack IDs of subscription `name` start with."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def new_prefix(name: str) -> str:
    """The prefix of the ack IDs a new backlog of `name` hands out."""
    return f"{subscription_tag(name)}{secrets.randbits(32):08x}"


def parse(ack_ids: list[str]) -> list[AckRef] | str:
    """The ack IDs parsed, or the first one that is not an ack ID of this server.
    One regular expression over all of them first: a call carries up to thousands,
    and a Python step per ID would cost more than the rest of the call."""
    joined = " ".join(ack_ids)
    if _ALL.fullmatch(joined):
        found = _ONE.findall(joined)
        if len(found) == len(ack_ids):
            return [
                AckRef(text, prefix, int(message), int(delivery))
                for text, (prefix, message, delivery) in zip(ack_ids, found, strict=True)
            ]
    out = []
    for text in ack_ids:
        match = _ONE.fullmatch(text)
        if match is None:
            return text
        prefix, message, delivery = match.groups()
        out.append(AckRef(text, prefix, int(message), int(delivery)))
    return out
