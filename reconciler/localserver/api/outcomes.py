"""Per-Publish outcomes, bounded: what a Monitoring face needs for the service's
`topic/send_request_count` (by response code) and `topic/send_request_latencies`
(server-side latency, injected delay included, up to the client's cancel or
deadline when the face can tell), and which hedged attempt each call said it was
(`x-goog-pubsub-client-telemetry`, `api.telemetry`).

The last `keep` outcomes are kept one by one (a deque: memory is bounded whatever
the publish rate); totals per (topic, response code) are kept for the server's life.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from typing import NamedTuple

DEFAULT_KEEP = 10_000


class PublishOutcome(NamedTuple):
    """One per Publish call (a tuple: made on every call, and much cheaper to make
    than a frozen dataclass)."""

    end_ns: int  # wall-clock time the reply was sent (time.time_ns())
    topic: str
    code: str  # gRPC status name: "OK", "INVALID_ARGUMENT", ...
    latency_s: float  # from the request reaching the handler to the reply
    messages: int
    has_ordering: bool
    # The call's telemetry header: 0 the original request, N the N-th hedge; None
    # when it sent none (or one that could not be read).
    attempt: int | None = None


class PublishOutcomes:
    """Thread-safe: every handler thread records into it."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self._lock = threading.Lock()
        self._recent: deque[PublishOutcome] = deque(maxlen=keep)
        self._totals: Counter[tuple[str, str]] = Counter()
        self._attempts: Counter[tuple[str, int | None]] = Counter()

    def record(self, outcome: PublishOutcome) -> None:
        with self._lock:
            self._recent.append(outcome)
            self._totals[(outcome.topic, outcome.code)] += 1
            self._attempts[(outcome.topic, outcome.attempt)] += 1

    def recent(self, since_ns: int = 0, topic: str | None = None) -> list[PublishOutcome]:
        """Kept outcomes that ended at or after `since_ns` (of one topic, if given)."""
        with self._lock:
            return [
                o
                for o in self._recent
                if o.end_ns >= since_ns and (topic is None or o.topic == topic)
            ]

    def totals(self) -> dict[tuple[str, str], int]:
        """(topic, response code) -> how many Publish calls ended so, ever."""
        with self._lock:
            return dict(self._totals)

    def attempts(self, topic: str) -> dict[int | None, int]:
        """Attempt number -> how many Publish calls to `topic` said they were it, ever
        (None: calls without a telemetry header). Hedges are the numbers above 0."""
        with self._lock:
            return {a: n for (t, a), n in self._attempts.items() if t == topic}
