"""RPC counters per method, read by tests and benchmarks ("UpdateTopic" -> 12)."""

from __future__ import annotations

import threading
from collections import Counter


class RpcCounters:
    """Thread-safe: handlers run on up to 64 threads at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def incr(self, method: str) -> None:
        with self._lock:
            self._counts[method] += 1

    def get(self, method: str) -> int:
        with self._lock:
            return self._counts[method]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())
