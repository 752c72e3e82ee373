"""Reading each topic's labels without ever holding up `publish()`.

One asynchronous GetTopic per topic (a gRPC future: no thread, no retries), cached:
read again `REFRESH` seconds after an answer (so a profile `apply` changed reaches
running publishers), and after a failure with a backoff that doubles from
`BACKOFF_INITIAL` to `BACKOFF_MAX`. A new lookup is only ever started from a publish
that finds one due, so an idle topic costs nothing. Damaged labels are an answer:
they are read again after `REFRESH`, not on every publish.

`PublisherClient` (client.py) decides what the labels mean; this module only fetches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from google.pubsub_v1.types import pubsub

from reconciler.hedging.transport import Call

LOOKUP_WAIT = 1.0  # s: how long a topic's first batches wait for its labels
LOOKUP_TIMEOUT = 10.0  # s: one GetTopic's deadline
REFRESH = 300.0  # s: labels are read again this long after an answer
BACKOFF_INITIAL = 1.0  # s: the first wait after a failed lookup
BACKOFF_MAX = 300.0  # s: the longest

# (topic, labels or None, error or None): called once per lookup, on a gRPC thread.
OnResult = Callable[[str, "Mapping[str, str] | None", "BaseException | None"], None]


def backoff(failures: int) -> float:
    """Seconds to wait after the `failures`-th failure in a row (1-based)."""
    return float(min(BACKOFF_MAX, BACKOFF_INITIAL * 2 ** max(0, failures - 1)))


class _Entry:
    __slots__ = ("answered", "due", "failures", "inflight")

    def __init__(self) -> None:
        self.due = 0.0  # monotonic time from which a publish starts a new lookup
        self.inflight = False
        self.failures = 0
        self.answered = threading.Event()  # set by the first answer


class LabelReader:
    def __init__(self, get_topic: Any, on_result: OnResult) -> None:
        self._rpc = get_topic  # the transport's GetTopic stub (has .future)
        self._on_result = on_result
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._closed = False

    def ensure(self, topic: str) -> bool:
        """Start a lookup of `topic` if one is due; True if one was started. Cheap when
        none is: the publish path calls it for every message."""
        entry = self._entries.get(topic)
        if entry is not None and (entry.inflight or time.monotonic() < entry.due):
            return False
        with self._lock:
            entry = self._entries.setdefault(topic, _Entry())
            if self._closed or entry.inflight or time.monotonic() < entry.due:
                return False
            entry.inflight = True
        metadata = (("x-goog-request-params", "topic=" + quote(topic, safe="")),)
        try:
            call = self._rpc.future(
                pubsub.GetTopicRequest(topic=topic), timeout=LOOKUP_TIMEOUT, metadata=metadata
            )
        except Exception as exc:  # the channel is closed
            self._answer(topic, entry, None, exc)
            return True
        call.add_done_callback(lambda c: self._done(topic, entry, c))
        return True

    def wait(self, topic: str, timeout: float) -> bool:
        """Block until the topic's first lookup has answered (for `endpoint_for`)."""
        entry = self._entries.get(topic)
        return entry is not None and entry.answered.wait(timeout)

    def close(self) -> None:
        """Start no more lookups (those in flight still answer)."""
        with self._lock:
            self._closed = True

    def _done(self, topic: str, entry: _Entry, call: Call) -> None:
        error = call.exception()
        labels = None if error is not None else dict(call.result().labels)
        self._answer(topic, entry, labels, error)

    def _answer(
        self,
        topic: str,
        entry: _Entry,
        labels: Mapping[str, str] | None,
        error: BaseException | None,
    ) -> None:
        with self._lock:
            entry.inflight = False
            entry.failures = entry.failures + 1 if error is not None else 0
            wait = backoff(entry.failures) if error is not None else REFRESH
            entry.due = time.monotonic() + wait
        try:
            self._on_result(topic, labels, error)
        finally:
            entry.answered.set()
