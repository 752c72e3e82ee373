"""Every admin call apply makes goes through one Guard: rate limit, stop check, retry.

`GuardedBackend` puts the same guard in front of the read paths (planning, the saved
plan's freshness check), so that they are rate limited and retried like the writes.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from reconciler.apply.events import EventSink, Notice, ignore
from reconciler.apply.ratelimit import ProjectRateLimiter
from reconciler.apply.retry import AdminRetry, Attempts, call_with_retry, error_message
from reconciler.backends.base import Backend, ObservedTopic, OrgInputs
from reconciler.names import project_of

T = TypeVar("T")


class StopRequested(Exception):
    """A stop (Ctrl-C) arrived before this call started: the call was not made."""


class Guard:
    def __init__(
        self,
        limiter: ProjectRateLimiter | None = None,
        policy: AdminRetry | None = None,
        stop: threading.Event | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.limiter = limiter or ProjectRateLimiter(None)
        self.policy = policy or AdminRetry()
        self.stop = stop or threading.Event()
        self.clock = clock
        self.rng = rng or random.Random()
        # Where "waiting for the org policy to propagate" notices go (apply's events);
        # said once per project.
        self.events: EventSink = ignore
        self._waiting: set[str] = set()
        self._waiting_lock = threading.Lock()

    def _propagating(self, project: str, exc: BaseException) -> None:
        with self._waiting_lock:
            if project in self._waiting:
                return
            self._waiting.add(project)
        self.events(Notice(
            f"projects/{project}: waiting up to {self.policy.propagation_wait:g} s for the "
            "project's organization policy to reach Pub/Sub (the service says the project "
            f"was recently created: {error_message(exc)}); retrying with backoff"
        ))

    def run(self, project: str, fn: Callable[[], T], attempts: Attempts | None = None) -> T:
        """Call `fn` under the project's rate limit, retrying transient errors; raises
        StopRequested instead of starting a first attempt after a stop request."""

        def before() -> None:
            self.limiter.acquire(project)
            if self.stop.is_set():
                raise StopRequested()

        return call_with_retry(
            fn,
            self.policy,
            clock=self.clock,
            wait=self.stop.wait,
            rng=self.rng,
            attempts=attempts,
            before_attempt=before,
            on_propagation=lambda exc: self._propagating(project, exc),
        )


class GuardedBackend:
    """A Backend whose Pub/Sub calls are rate limited and retried (org inputs are a
    different API and quota: retried only)."""

    def __init__(self, inner: Backend, guard: Guard) -> None:
        self.inner = inner
        self.guard = guard
        self.info = inner.info

    def list_topics(self, project: str) -> list[ObservedTopic]:
        return self.guard.run(project, lambda: self.inner.list_topics(project))

    def get_topic(self, name: str) -> ObservedTopic | None:
        return self.guard.run(project_of(name), lambda: self.inner.get_topic(name))

    def effective_policy(self, project: str) -> OrgInputs:
        return call_with_retry(
            lambda: self.inner.effective_policy(project),
            self.guard.policy,
            clock=self.guard.clock,
            wait=self.guard.stop.wait,
            rng=self.guard.rng,
        )

    def create_topic(self, body: dict[str, Any]) -> ObservedTopic:
        return self.guard.run(project_of(body["name"]), lambda: self.inner.create_topic(body))

    def update_topic(self, body: dict[str, Any], update_mask: list[str]) -> ObservedTopic:
        return self.guard.run(
            project_of(body["name"]), lambda: self.inner.update_topic(body, update_mask)
        )

    def delete_topic(self, name: str) -> None:
        self.guard.run(project_of(name), lambda: self.inner.delete_topic(name))

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
