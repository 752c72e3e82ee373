"""The `x-goog-pubsub-client-telemetry` header a hedging publisher sends, as the Go
(`pubsub/v2`), Java and Rust clients do: on every Publish attempt of a hedged batch,
standard base64 of a serialized `google.pubsub.v1.PubsubClientTelemetry` whose
`publish_operation` carries the attempt's number (`hedged_attempt_count`: 0 the
original request, N the N-th hedge) and the batch's start (`publish_start_time`,
the same on all its attempts), so that the service can tell hedges from originals
and group them. Unhedged batches send no header, as those clients do.

The batch's start is encoded once; each attempt then only varies its number.
"""

from __future__ import annotations

import base64
from typing import Any

from google.pubsub_v1.types import pubsub

HEADER = "x-goog-pubsub-client-telemetry"

_Telemetry: Any = pubsub.PubsubClientTelemetry.pb()


class BatchTelemetry:
    """The header values of one batch's attempts."""

    __slots__ = ("_start",)

    def __init__(self, start_ns: int) -> None:
        self._start = divmod(start_ns, 1_000_000_000)

    def header(self, attempt: int) -> tuple[str, str]:
        message = _Telemetry()
        op = message.publish_operation
        op.hedged_attempt_count = attempt
        op.publish_start_time.seconds, op.publish_start_time.nanos = self._start
        return HEADER, base64.b64encode(message.SerializeToString()).decode("ascii")
