"""Transient-vs-permanent classification and a bounded retry loop with jittered backoff.

Why our own loop and not google-api-core's: the client defaults retry only UNAVAILABLE,
for up to 600 s per call, and know nothing about Ctrl-C. Apply needs every transient
code of the issue retried, permanent ones never, a bound on attempts *and* time, and a
sleep that a stop request cuts short. Calls through the backend are therefore made
with the client's own retry disabled where the backend allows it (see executor).

A third kind sits between the two: a project whose org policy has not reached Pub/Sub
yet (a project created minutes ago) answers FAILED_PRECONDITION or INVALID_ARGUMENT
with a message saying the project "was recently created" or asking to "retry this
operation". Terraform retries exactly those (matching the message) for up to its
create timeout; we retry them too, with a longer backoff and their own time budget
(`AdminRetry.propagation_wait`, `reconcile apply --propagation-wait`). Every other
FAILED_PRECONDITION stays permanent.

Everything here is pure: clock, sleep and randomness are injected, so tests need no
wall clock and no Google library mocks.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from reconciler.errors import is_propagation_message

T = TypeVar("T")

TRANSIENT_CODES = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "ABORTED", "RESOURCE_EXHAUSTED", "INTERNAL"}
)
# Everything else is permanent; these are the ones the service answers in practice.
PERMANENT_CODES = frozenset(
    {
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "UNAUTHENTICATED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "CANCELLED",
        "UNKNOWN",
        "DATA_LOSS",
    }
)

# The service's words for "the org policy has not propagated to this project yet".
PROPAGATION_CODES = frozenset({"FAILED_PRECONDITION", "INVALID_ARGUMENT"})

Kind = Literal["transient", "propagation", "permanent"]


def error_status_name(exc: BaseException) -> str | None:
    """The gRPC status name behind an error, following `raise ... from` chains.

    Understands google-api-core errors (`grpc_status_code`), grpc.RpcError (`code()`)
    and any error carrying a `status`/`code_name` string (our own BackendError may).
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        name = _code_name(cur)
        if name:
            return name
        cur = cur.__cause__ or cur.__context__
    return None


def _code_name(exc: BaseException) -> str | None:
    for attr in ("status", "code_name"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and value.isupper():
            return value
    grpc_code = getattr(exc, "grpc_status_code", None)
    if grpc_code is not None and hasattr(grpc_code, "name"):
        return str(grpc_code.name)
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            value = code()
        except Exception:  # a broken code() just means "unknown"
            return None
        if hasattr(value, "name"):
            return str(value.name)
    return None


def classify(exc: BaseException) -> Kind:
    """Transient errors are worth another attempt; propagation errors are worth waiting
    for (longer); anything else fails the topic now."""
    code = error_status_name(exc)
    if code in TRANSIENT_CODES:
        return "transient"
    if code in PROPAGATION_CODES and is_propagation_message(_service_text(exc)):
        return "propagation"
    return "permanent"


def error_message(exc: BaseException) -> str:
    """The service's own message, prefixed by its status code when known."""
    code = error_status_name(exc)
    text = _service_text(exc)
    if code and not text.startswith(code):
        return f"{code}: {text}" if text else code
    return text or type(exc).__name__


def _service_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    details = getattr(exc, "details", None)
    if callable(details):
        try:
            value = details()
        except Exception:
            value = None
        if isinstance(value, str) and value:
            return value
    return str(exc)


# Seconds to keep retrying what a recently created project refuses (apply --propagation-wait).
DEFAULT_PROPAGATION_WAIT = 300.0


@dataclass(frozen=True)
class AdminRetry:
    """How apply retries an admin call (not the publisher's retry, which is
    hedging/batching.py's): capped exponential backoff with full jitter, bounded by
    attempts and by time.

    delay(n) = uniform(0, min(maximum, initial * multiplier**n)) — "full jitter", which
    spreads a burst of failed calls out instead of retrying them in lock-step.
    """

    initial: float = 0.2
    maximum: float = 5.0
    multiplier: float = 2.0
    max_attempts: int = 8
    deadline: float = 60.0  # seconds from the first attempt; no new attempt after it
    # Org-policy propagation (see the module docstring): its own, longer budget.
    propagation_wait: float = DEFAULT_PROPAGATION_WAIT
    propagation_initial: float = 1.0
    propagation_maximum: float = 15.0

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        cap = min(self.maximum, self.initial * self.multiplier**retry_number)
        return rng.uniform(0.0, cap)

    def propagation_backoff(self, retry_number: int, rng: random.Random) -> float:
        """Half fixed, half jittered: waiting for propagation gains nothing from a
        near-zero delay, and a burst of topics still spreads out."""
        cap = min(self.propagation_maximum, self.propagation_initial * 2.0**retry_number)
        return cap / 2 + rng.uniform(0.0, cap / 2)


class Stopped(Exception):
    """A stop was requested while waiting to retry; carries the last error."""

    def __init__(self, last: BaseException) -> None:
        super().__init__(f"stopped before retrying: {error_message(last)}")
        self.last = last


class PropagationTimeout(Exception):
    """Still refused as "recently created" after the whole propagation wait; keeps the
    service's status and message and says how long we waited."""

    def __init__(self, last: BaseException, waited: float) -> None:
        self.status = error_status_name(last)
        self.message = (
            f"{_service_text(last)} [still refused after waiting {waited:.0f} s for the "
            "project's organization policy to propagate; run apply again later, or give "
            "it longer with --propagation-wait]"
        )
        super().__init__(self.message)
        self.last = last


@dataclass
class Attempts:
    """What happened while retrying one call, for the per-topic result."""

    count: int = 0
    transient_errors: int = 0
    propagation_errors: int = 0


def call_with_retry(
    fn: Callable[[], T],
    policy: AdminRetry,
    *,
    clock: Callable[[], float],
    wait: Callable[[float], bool],
    rng: random.Random,
    attempts: Attempts | None = None,
    before_attempt: Callable[[], None] | None = None,
    on_propagation: Callable[[BaseException], None] | None = None,
) -> T:
    """Run `fn` until it succeeds, fails permanently, or the policy is exhausted.

    `wait(seconds)` sleeps and returns True when a stop was requested meanwhile (e.g.
    `threading.Event.wait`); then `Stopped` is raised instead of another attempt.
    `before_attempt` runs before every attempt (the rate limiter hooks in there, so a
    retry also pays for its quota). The last error is re-raised when exhausted.

    Propagation errors are retried for up to `policy.propagation_wait` seconds from the
    first of them (`on_propagation(error)` is called then, for a progress line), and
    then raise `PropagationTimeout`; they do not use up the transient budget, which
    starts afresh after them.
    """
    stats = attempts if attempts is not None else Attempts()
    start = clock()
    tries = 0
    retry_number = 0
    waiting_since: float | None = None
    while True:
        if before_attempt is not None:
            before_attempt()
        stats.count += 1
        tries += 1
        try:
            return fn()
        except Exception as exc:
            kind = classify(exc)
            if kind == "permanent":
                raise
            if kind == "propagation":
                stats.propagation_errors += 1
                now = clock()
                if waiting_since is None:
                    waiting_since = now
                    if on_propagation is not None:
                        on_propagation(exc)
                delay = policy.propagation_backoff(stats.propagation_errors - 1, rng)
                waited = now - waiting_since
                if waited + delay > policy.propagation_wait:
                    raise PropagationTimeout(exc, waited) from exc
                if wait(delay):
                    raise Stopped(exc) from exc
                start, tries, retry_number = clock(), 0, 0
                continue
            stats.transient_errors += 1
            if tries >= policy.max_attempts:
                raise
            delay = policy.backoff(retry_number, rng)
            retry_number += 1
            if clock() - start + delay > policy.deadline:
                raise
            if wait(delay):
                raise Stopped(exc) from exc
