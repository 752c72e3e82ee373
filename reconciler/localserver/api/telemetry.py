"""The `x-goog-pubsub-client-telemetry` request header, as the server reads it.

The Go (`pubsub/v2`), Java and Rust clients send it on each Publish attempt of a
hedging publisher: standard base64 of a serialized
`google.pubsub.v1.PubsubClientTelemetry` whose `publish_operation` holds
`hedged_attempt_count` (0 for the original request, 1 for the first hedge, ...)
and `publish_start_time` (when the publish began, the same on every attempt).
A header that is not that (bad base64, not the message, no publish operation) is
ignored: telemetry never fails a call.
"""

from __future__ import annotations

import base64
import binascii
from typing import NamedTuple

from google.protobuf.message import DecodeError

from reconciler.localserver.api.protos import PubsubClientTelemetry

TELEMETRY_HEADER = "x-goog-pubsub-client-telemetry"
MAX_HEADER_CHARS = 1024  # far beyond the two fields; anything longer is not ours to parse


class PublishAttempt(NamedTuple):
    """What one Publish call said about itself."""

    number: int  # 0: the original request; N >= 1: the N-th hedge
    start_ns: int | None  # the publish's start (ns since the epoch), shared by its attempts

    @property
    def hedged(self) -> bool:
        return self.number > 0


def parse(value: str | bytes) -> PublishAttempt | None:
    """The attempt the header describes, or None when it describes none."""
    if not value or len(value) > MAX_HEADER_CHARS:
        return None
    try:
        raw = base64.b64decode(value, validate=True)
        message = PubsubClientTelemetry.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    if not message.HasField("publish_operation"):
        return None
    op = message.publish_operation
    if op.hedged_attempt_count < 0:
        return None
    start = None
    if op.HasField("publish_start_time"):
        start = op.publish_start_time.seconds * 1_000_000_000 + op.publish_start_time.nanos
    return PublishAttempt(op.hedged_attempt_count, start)
