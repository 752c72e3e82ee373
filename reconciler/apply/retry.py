"""Transient-vs-permanent classification and a bounded retry loop with jittered backoff.

Why our own loop and not google-api-core's: the client defaults retry only UNAVAILABLE,
for up to 600 s per call, and know nothing about Ctrl-C. Apply needs every transient
code of the issue retried, permanent ones never, a bound on attempts *and* time, and a
sleep that a stop request cuts short. Calls through the backend are therefore made
with the client's own retry disabled where the backend allows it (see executor).

Everything here is pure: clock, sleep and randomness are injected, so tests need no
wall clock and no Google library mocks.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

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

Kind = Literal["transient", "permanent"]


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
    """Transient errors are worth another attempt; anything else fails the topic now."""
    return "transient" if error_status_name(exc) in TRANSIENT_CODES else "permanent"


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


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter, bounded by attempts and by time.

    delay(n) = uniform(0, min(maximum, initial * multiplier**n)) — "full jitter", which
    spreads a burst of failed calls out instead of retrying them in lock-step.
    """

    initial: float = 0.2
    maximum: float = 5.0
    multiplier: float = 2.0
    max_attempts: int = 8
    deadline: float = 60.0  # seconds from the first attempt; no new attempt after it

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        cap = min(self.maximum, self.initial * self.multiplier**retry_number)
        return rng.uniform(0.0, cap)


class Stopped(Exception):
    """A stop was requested while waiting to retry; carries the last error."""

    def __init__(self, last: BaseException) -> None:
        super().__init__(f"stopped before retrying: {error_message(last)}")
        self.last = last


@dataclass
class Attempts:
    """What happened while retrying one call, for the per-topic result."""

    count: int = 0
    transient_errors: int = 0


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    clock: Callable[[], float],
    wait: Callable[[float], bool],
    rng: random.Random,
    attempts: Attempts | None = None,
    before_attempt: Callable[[], None] | None = None,
) -> T:
    """Run `fn` until it succeeds, fails permanently, or the policy is exhausted.

    `wait(seconds)` sleeps and returns True when a stop was requested meanwhile (e.g.
    `threading.Event.wait`); then `Stopped` is raised instead of another attempt.
    `before_attempt` runs before every attempt (the rate limiter hooks in there, so a
    retry also pays for its quota). The last error is re-raised when exhausted.
    """
    stats = attempts if attempts is not None else Attempts()
    start = clock()
    retry_number = 0
    while True:
        if before_attempt is not None:
            before_attempt()
        stats.count += 1
        try:
            return fn()
        except Exception as exc:
            if classify(exc) == "permanent":
                raise
            stats.transient_errors += 1
            if stats.count >= policy.max_attempts:
                raise
            delay = policy.backoff(retry_number, rng)
            retry_number += 1
            if clock() - start + delay > policy.deadline:
                raise
            if wait(delay):
                raise Stopped(exc) from exc
