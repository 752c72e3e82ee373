"""Helpers for apply's tests: the backend, guard and plans that `reconcile apply`
builds, pointed at the local server, and its mutating-call counts. (The CLI runner is
tests/cli_support.py; the spec `Tree` is tests/specs_support.py.)"""

from __future__ import annotations

import time
from typing import Any

from google.api_core import exceptions as gexc

from reconciler.apply.guard import Guard, GuardedBackend
from reconciler.apply.retry import AdminRetry
from reconciler.backends.base import TargetOptions
from reconciler.commands.apply import open_guarded
from reconciler.plan.make import PlanOptions, make_plan
from reconciler.plan.model import Plan
from reconciler.plan.observe import observe
from reconciler.spec.desired import DesiredState, DesiredTopic

MUTATING = ("CreateTopic", "UpdateTopic", "DeleteTopic")


def mutating_calls(local_server: Any) -> dict[str, int]:
    return {m: local_server.counters.get(m) for m in MUTATING}


def wait_for_topics(client: Any, names: list[str], timeout: float = 60.0) -> None:
    """Block until every topic in `names` can be read: the sync point for calls the
    server runs on its own (e.g. those a killed client left in flight). `timeout` is a
    guard against a call that never lands, not a latency expectation."""
    deadline = time.monotonic() + timeout
    missing = list(names)
    while missing:
        try:
            client.get_topic(request={"topic": missing[0]})
        except gexc.NotFound:
            if time.monotonic() > deadline:
                raise AssertionError(f"never landed on the server: {missing}") from None
            time.sleep(0.01)  # polling the condition; the topic read is the sync point
            continue
        missing.pop(0)


# --- the executor and the freshness check over the real clients ---------------------

PROJECT = "apply-unit"  # the server checks project IDs like Pub/Sub does (6-30 chars)


def quick_guard() -> Guard:
    """No rate limit, tiny backoffs: transient faults are retried without real waits.
    The deadline only bounds a retry loop that keeps failing; it is no test timeout."""
    policy = AdminRetry(initial=0.001, maximum=0.002, max_attempts=5, deadline=60.0)
    return Guard(None, policy)


def apply_backend(address: str, guard: Guard) -> GuardedBackend:
    """The backend `reconcile apply --emulator ADDRESS` runs with: the real Pub/Sub and
    Org Policy clients (their own retry disabled) behind the apply guard."""
    return open_guarded(TargetOptions(emulator=address), guard)


def make(
    backend: GuardedBackend,
    topics: dict[str, dict[str, str]],
    *,
    prune: bool = False,
    project: str = PROJECT,
) -> Plan:
    """A real plan for `topics` ({name: labels}, storage unmanaged) in `project`."""
    desired = DesiredState(
        [DesiredTopic(project, name, labels=labels) for name, labels in topics.items()]
    )
    return make_plan(desired, observe(backend, desired, prune), PlanOptions(prune=prune))
