"""Published messages of one topic, bounded: a count of every message ever published
(in this server run) and the last N themselves (`--keep-messages`), so a long
publish soak keeps the server's memory flat. What subscriptions hold is in
`backlog`; this log is what `LocalServer.messages` shows.

Publish is the hot path, so a batch is kept as the `backlog.Batch` of the request
(its bytes with its first ID and publish time), parsed into stored
`PubsubMessage`s (ID and time set) only when someone reads them.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.localserver.pubsub.backlog import Batch

DEFAULT_KEEP_MESSAGES = 10_000
# Unacknowledged messages one subscription holds at most (`--max-backlog`).
DEFAULT_MAX_BACKLOG = 100_000


class MessageLog:
    """Not thread-safe: the state lock guards it."""

    __slots__ = ("_batches", "_held", "count", "keep")

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.count = 0
        self._held = 0  # messages in _batches (may exceed keep by part of one batch)
        self._batches: deque[Batch] = deque()

    def add(self, batch: Batch) -> None:
        n = len(batch)
        self.count += n
        if self.keep == 0:
            return
        self._batches.append(batch)
        self._held += n
        # Drop whole batches that lie entirely beyond the last `keep` messages.
        while self._batches and self._held - len(self._batches[0]) >= self.keep:
            self._held -= len(self._batches.popleft())

    def stored(self) -> list[Any]:
        """The kept messages, oldest first, with message_id and publish_time set."""
        from reconciler.localserver.api import protos  # lazy: the CLI imports this module

        out = []
        for batch in self._batches:
            for message in batch.stamped():
                stored = protos.PubsubMessage()
                stored.CopyFrom(message)
                out.append(stored)
        return out[-self.keep :] if self.keep else []
