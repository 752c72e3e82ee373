"""A per-project token bucket on Pub/Sub administrator calls.

Pub/Sub meters topic admin calls (CreateTopic, GetTopic, UpdateTopic, DeleteTopic,
ListTopics...) as "Administrator operations", each call one operation, charged to the
project of the caller's credentials (https://cloud.google.com/pubsub/quotas, "Quota
usage attribution").

The figure: the current quotas table, as we know it, gives a default of 6,000
operations per minute (100 ops/s) per project. Caveat, unverified: the only copy of the
table we could retrieve while writing this is an older edition of the same page, which
lists "Administrative operations" at a default of 1,000 per 100 seconds (10 ops/s),
maximum 10,000 per 100 s (= 100 ops/s). We size for 100 ops/s and keep 20% headroom
for other admin traffic in the project (consoles, other pipelines); a
RESOURCE_EXHAUSTED answer is retried with backoff anyway. `--rate-limit` changes it:
lower it for projects still on the older default, or when one credential applies to
several projects (they share its quota); raise it for projects granted more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

ADMIN_OPS_QUOTA_PER_SECOND = 100.0  # 6,000 per minute, see the module docstring
DEFAULT_HEADROOM = 0.8
DEFAULT_RATE = DEFAULT_HEADROOM * ADMIN_OPS_QUOTA_PER_SECOND


class RateLimiter:
    """Tokens refill at `rate` per second up to `burst`; a call takes one.

    `reserve()` takes a token even when none is left (the balance goes negative) and
    returns how long the caller must wait for it: callers are served in arrival order,
    and the lock is never held while sleeping.
    """

    def __init__(self, rate: float, burst: float, clock: Callable[[], float]) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = burst
        self._stamp = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


class ProjectRateLimiter:
    """One bucket per project; `rate=None` disables limiting (benchmarks, tests)."""

    def __init__(
        self,
        rate: float | None = DEFAULT_RATE,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate or 1.0)
        self._clock = clock
        self._sleep = sleep
        self._buckets: dict[str, RateLimiter] = {}
        self._lock = threading.Lock()

    def bucket(self, project: str) -> RateLimiter | None:
        if self.rate is None:
            return None
        with self._lock:
            found = self._buckets.get(project)
            if found is None:
                found = RateLimiter(self.rate, self.burst, self._clock)
                self._buckets[project] = found
            return found

    def acquire(self, project: str) -> float:
        """Block until `project` may make one more admin call; returns the wait."""
        bucket = self.bucket(project)
        if bucket is None:
            return 0.0
        delay = bucket.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay
