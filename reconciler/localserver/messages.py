"""Published messages of one topic, bounded: a count of every message ever published
and the last N themselves (`--keep-messages`), so a long publish soak keeps the
server's memory flat.

Publish is the hot path, so a batch is kept as the request's own repeated field
with its first ID and publish time, and turned into stored `PubsubMessage`s (ID and
time set) only when someone reads them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

DEFAULT_KEEP_MESSAGES = 10_000


class MessageLog:
    """Not thread-safe: the state lock guards it."""

    __slots__ = ("_batches", "_held", "count", "keep")

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.count = 0
        self._held = 0  # messages in _batches (may exceed keep by part of one batch)
        self._batches: deque[tuple[int, int, Any]] = deque()

    def add(self, first_id: int, publish_ns: int, messages: Any) -> None:
        n = len(messages)
        self.count += n
        if self.keep == 0:
            return
        self._batches.append((first_id, publish_ns, messages))
        self._held += n
        # Drop whole batches that lie entirely beyond the last `keep` messages.
        while self._batches and self._held - len(self._batches[0][2]) >= self.keep:
            self._held -= len(self._batches.popleft()[2])

    def stored(self) -> list[Any]:
        """The kept messages, oldest first, with message_id and publish_time set."""
        from reconciler.localserver import protos  # lazy: the CLI imports this module

        out = []
        for first_id, publish_ns, messages in self._batches:
            for i, message in enumerate(messages):
                stored = protos.PubsubMessage()
                stored.CopyFrom(message)
                stored.message_id = str(first_id + i)
                stored.publish_time.FromNanoseconds(publish_ns)
                out.append(stored)
        return out[-self.keep :] if self.keep else []
