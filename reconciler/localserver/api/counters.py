"""RPC counters per method, read by tests and benchmarks ("UpdateTopic" -> 12), and per
method and project (which projects a command read: `for_project("ListTopics", "p")`)."""

from __future__ import annotations

import threading
from collections import Counter


class RpcCounters:
    """Thread-safe: handlers run on up to 64 threads at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._projects: Counter[tuple[str, str]] = Counter()

    def incr(self, method: str, project: str | None = None, *, amount: int = 1) -> None:
        with self._lock:
            self._counts[method] += amount
            if project:
                self._projects[(method, project)] += amount

    def for_project(self, method: str, project: str) -> int:
        with self._lock:
            return self._projects[(method, project)]

    def projects(self, method: str) -> set[str]:
        """Every project `method` was called for."""
        with self._lock:
            return {p for (m, p), n in self._projects.items() if m == method and n}

    def get(self, method: str) -> int:
        with self._lock:
            return self._counts[method]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._projects.clear()

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())
