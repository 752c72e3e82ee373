"""Every call apply makes goes through one guarded backend: rate limit, stop check,
retry.

`GuardedBackend` is the backend `apply` plans, checks a saved plan and executes
through: each call of the `Backend` protocol is written out here with its guard
(nothing is passed through unnamed), and the executor counts a change's attempts by
passing `attempts`. Pub/Sub's calls are rate limited per project (the administrator
operation quota) and retried; the Org Policy API's are retried only (another API and
quota); the by-region gauges are read as they are (Cloud Monitoring: another quota,
and a read that fails is a reason in the answer, not an error to retry).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from reconciler.apply.events import EventSink, Notice, ignore
from reconciler.apply.ratelimit import ProjectRateLimiter
from reconciler.apply.retry import AdminRetry, Attempts, call_with_retry, error_message
from reconciler.backends.base import (
    Ancestry,
    Backend,
    CustomConstraints,
    GaugeQuery,
    ObservedTopic,
    OrgInputs,
    StoredMessages,
    SubscriptionListing,
)
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

    def run(
        self, project: str, fn: Callable[[], T], attempts: Attempts | None = None,
        *, rate_limited: bool = True,
    ) -> T:
        """Call `fn` under the project's rate limit (unless not `rate_limited`),
        retrying transient errors; raises StopRequested instead of starting a first
        attempt after a stop request."""

        def before() -> None:
            if rate_limited:
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
    """A Backend whose every call goes through `guard`; `attempts`, where given,
    counts the attempts of one planned change (apply's results)."""

    def __init__(self, inner: Backend, guard: Guard) -> None:
        self.inner = inner
        self.guard = guard
        self.info = inner.info

    # -- what a plan reads
    def list_topics(self, project: str) -> list[ObservedTopic]:
        return self.guard.run(project, lambda: self.inner.list_topics(project))

    def effective_policy(self, project: str) -> OrgInputs:
        return self.guard.run(
            project, lambda: self.inner.effective_policy(project), rate_limited=False
        )

    def ancestry(self, project: str) -> Ancestry:
        return self.guard.run(
            project, lambda: self.inner.ancestry(project), rate_limited=False
        )

    def custom_constraints(self, project: str, organization: str | None) -> CustomConstraints:
        return self.guard.run(
            project, lambda: self.inner.custom_constraints(project, organization),
            rate_limited=False,
        )

    def list_subscriptions(self, project: str) -> SubscriptionListing:
        return self.guard.run(project, lambda: self.inner.list_subscriptions(project))

    def tag_bindings(self, names: Sequence[str]) -> dict[str, frozenset[str] | str]:
        return self.inner.tag_bindings(names)  # read only, each failure a value

    def stored(self, queries: Sequence[GaugeQuery]) -> list[StoredMessages]:
        return self.inner.stored(queries)  # Cloud Monitoring: see the module's docstring

    # -- what apply calls
    def get_topic(self, name: str, attempts: Attempts | None = None) -> ObservedTopic | None:
        return self.guard.run(project_of(name), lambda: self.inner.get_topic(name), attempts)

    def create_topic(
        self, body: dict[str, Any], attempts: Attempts | None = None
    ) -> ObservedTopic:
        return self.guard.run(
            project_of(body["name"]), lambda: self.inner.create_topic(body), attempts
        )

    def update_topic(
        self, body: dict[str, Any], update_mask: list[str], attempts: Attempts | None = None
    ) -> ObservedTopic:
        return self.guard.run(
            project_of(body["name"]), lambda: self.inner.update_topic(body, update_mask),
            attempts,
        )

    def delete_topic(self, name: str, attempts: Attempts | None = None) -> None:
        self.guard.run(project_of(name), lambda: self.inner.delete_topic(name), attempts)

    def list_topic_subscriptions(
        self, name: str, attempts: Attempts | None = None
    ) -> list[str]:
        return self.guard.run(
            project_of(name), lambda: self.inner.list_topic_subscriptions(name), attempts
        )

    def close(self) -> None:
        self.inner.close()
