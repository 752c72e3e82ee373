"""Latency and error injection per RPC method, so tests and benchmarks can play a slow
or failing Google backend (latency tails for hedging, transient UNAVAILABLE for retries,
PERMISSION_DENIED on one topic for partial-apply handling).

A rule matches a method (short name, or "*") and optionally one resource name. For each
call every matching rule contributes its delay; the first matching rule that fires an
error decides the status. Delays sleep on the handler's own worker thread, so a slow
call never blocks the others.

Holds (`Faults.hold`, see `holds`) park calls until a test answers them. Rules name
methods the server answers; a misspelt one is refused with the valid names (the
command-line form is parsed by `faultspec`).
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

import grpc

from reconciler.localserver.api.status import ServiceError, grpc_status_from_name, suggestion
from reconciler.localserver.faults.holds import MAX_HOLD_SECONDS, HeldCall, Hold

log = logging.getLogger(__name__)

__all__ = ["MAX_HOLD_SECONDS", "FaultRule", "Faults", "HeldCall", "Hold"]


@dataclass
class FaultRule:
    """One injected behaviour; see `Faults.add` for the meaning of each field."""

    method: str = "*"
    delay: float = 0.0
    delay_max: float | None = None
    tail_fraction: float = 0.0
    tail_delay: float = 0.0
    error: grpc.StatusCode | None = None
    error_fraction: float | None = None
    error_next: int | None = None
    resource: str | None = None
    message: str | None = None
    fired: int = field(default=0)
    matched: int = field(default=0)

    def describe(self) -> str:
        """The rule in `--fault` syntax, for the log line of its first match."""
        parts = [
            f"{name}={value:g}s"
            for name, value in (
                ("delay", self.delay),
                ("delay_max", self.delay_max),
                ("tail_delay", self.tail_delay),
            )
            if value
        ]
        if self.tail_fraction:
            parts.append(f"tail_fraction={self.tail_fraction:g}")
        if self.error is not None:
            parts.append(f"error={self.error.name}")
        if self.error_fraction is not None:
            parts.append(f"error_fraction={self.error_fraction:g}")
        if self.error_next is not None:
            parts.append(f"error_next={self.error_next}")
        if self.resource is not None:
            parts.append(f"resource={self.resource}")
        return f"{self.method}:{','.join(parts)}" if parts else self.method

    def matches(self, method: str, resource: str | None) -> bool:
        if self.method not in ("*", method):
            return False
        if self.resource is None or self.resource == resource:
            return True
        # A project names everything under it: "projects/p" matches its topics too.
        return resource is not None and resource.startswith(self.resource.rstrip("/") + "/")


MAX_DELAY_SECONDS = 3600.0
STOPPING = "local server is stopping"
RESOURCE_PREFIXES = ("projects/", "folders/", "organizations/")


def check_method(method: str, methods: Iterable[str] | None) -> None:
    """ValueError unless `method` is "*" or one of `methods` (any when None)."""
    if methods is None or method == "*" or method in methods:
        return
    known = sorted(methods)
    raise ValueError(
        f"unknown method {method!r}{suggestion(method, known)} (the local server "
        f"answers: {', '.join(known)}; or '*' for all)"
    )


class RuleOptions(TypedDict, total=False):
    """What a rule may say beyond its method: `Faults.add` takes these as keywords."""

    delay: float
    delay_max: float | None
    tail_fraction: float
    tail_delay: float
    error: str | grpc.StatusCode | None
    error_fraction: float | None
    error_next: int | None
    resource: str | None
    message: str | None


def make_rule(
    method: str = "*",
    *,
    delay: float = 0.0,
    delay_max: float | None = None,
    tail_fraction: float = 0.0,
    tail_delay: float = 0.0,
    error: str | grpc.StatusCode | None = None,
    error_fraction: float | None = None,
    error_next: int | None = None,
    resource: str | None = None,
    message: str | None = None,
    methods: Iterable[str] | None = None,
) -> FaultRule:
    """A checked rule (see `Faults.add`); ValueError for anything that could never
    fire as written, so that a typo is refused instead of silently doing nothing."""
    check_method(method, methods)
    code = grpc_status_from_name(error) if isinstance(error, str) else error
    if code is grpc.StatusCode.OK:
        raise ValueError("error=OK injects nothing; leave error unset")
    for label, value in (("delay", delay), ("tail_delay", tail_delay), ("delay_max", delay_max)):
        if value is not None and not 0 <= value <= MAX_DELAY_SECONDS:
            raise ValueError(f"{label} must be between 0 and {MAX_DELAY_SECONDS:g} s")
    if delay_max is not None and delay_max < delay:
        raise ValueError("delay_max must be at least delay")
    for label, frac in (("tail_fraction", tail_fraction), ("error_fraction", error_fraction)):
        if frac is not None and not 0.0 <= frac <= 1.0:
            raise ValueError(f"{label} must be between 0 and 1")
    if bool(tail_fraction) != bool(tail_delay):
        raise ValueError("tail_fraction and tail_delay go together (one alone adds no delay)")
    if error_next is not None and error_next < 1:
        raise ValueError("error_next must be at least 1 (the number of calls to fail)")
    if error_fraction is not None and error_next is not None:
        raise ValueError("give error_fraction or error_next, not both")
    if (error_fraction is not None or error_next is not None or message) and code is None:
        raise ValueError("error_fraction, error_next and message need error=CODE")
    if resource is not None and not resource.startswith(RESOURCE_PREFIXES):
        raise ValueError(
            f"resource {resource!r} is not a resource name (projects/P/topics/T, "
            "projects/P, folders/F or organizations/O, or their policies)"
        )
    return FaultRule(
        method=method,
        delay=delay,
        delay_max=delay_max,
        tail_fraction=tail_fraction,
        tail_delay=tail_delay,
        error=code,
        error_fraction=error_fraction,
        error_next=error_next,
        resource=resource,
        message=message,
    )


class Faults:
    """The rule set of one server; safe to change while requests are in flight."""

    def __init__(self, seed: int | None = None, methods: Iterable[str] | None = None) -> None:
        # The methods rules may name (None: any, for a Faults used on its own).
        self.methods = tuple(methods) if methods is not None else None
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._holds: list[Hold] = []
        self._random = random.Random(seed)
        self._stopping = threading.Event()
        self._parked = 0  # calls held or in a delay now (under _waking)
        self._waking = threading.Condition()

    def stop(self) -> None:
        """The server is stopping: injected delays end now and their calls answer
        UNAVAILABLE, so no handler thread outlives the stop (a handler still asleep
        in its delay would keep the process from exiting)."""
        self._stopping.set()
        self.end_holds("UNAVAILABLE", STOPPING)

    def wait_woken(self, timeout: float) -> bool:
        """After `stop`: wait up to `timeout` seconds until every call it woke has left
        its hold or delay (on its way to answer). The server waits for this before
        gRPC's own shutdown begins, so that those answers go out on a serving
        connection instead of racing the shutdown's GOAWAY. True when none is left."""
        with self._waking:
            return self._waking.wait_for(lambda: self._parked == 0, timeout)

    def add(self, method: str = "*", **options: Unpack[RuleOptions]) -> FaultRule:
        """Add a rule (checked by `make_rule`).

        delay: seconds every matching call waits (uniform in [delay, delay_max] when
        delay_max is given). tail_fraction/tail_delay: that fraction of calls waits
        tail_delay more. error: status code name; with error_fraction only that
        fraction of calls fails, with error_next only the next N calls fail, with
        neither every call fails. resource: only calls on that topic/policy/project (a
        project also matches the calls on its topics and policies).
        """
        rule = make_rule(method, methods=self.methods, **options)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules = [r for r in self._rules if r is not rule]

    def clear(self) -> None:
        """Remove every rule and end every hold (held calls go on to the handler)."""
        with self._lock:
            self._rules.clear()
        self.end_holds()

    def hold(
        self,
        method: str = "*",
        *,
        count: int = 1,
        resource: str | None = None,
        max_hold: float = MAX_HOLD_SECONDS,
    ) -> Hold:
        """Park the next `count` calls of `method` (on `resource`, if given) until the
        test answers each one; see `Hold` and `HeldCall`.

        Why: a delay only makes an attempt race likely; a hold decides it, which
        lets tests of the hedged publisher choose which attempt wins while every
        byte still goes through the real client library and real gRPC. A held call
        is parked before the fault rules and the handler run; once released it goes
        through both. A call left unanswered runs anyway after `max_hold` seconds,
        so a forgotten hold never wedges the server.
        """
        check_method(method, self.methods)
        if count < 1:
            raise ValueError("count must be at least 1")
        if max_hold <= 0:
            raise ValueError("max_hold must be positive")
        held = Hold(method, resource, count, max_hold)
        with self._lock:
            self._holds.append(held)
        return held

    def end_holds(
        self, error: str | grpc.StatusCode | None = None, message: str | None = None
    ) -> int:
        """End every hold; calls still waiting are released, or failed with `error`
        (the server answers UNAVAILABLE this way when it stops, so no handler runs
        against closed state). How many calls were answered."""
        with self._lock:
            holds, self._holds = self._holds, []
        if error is None:
            return sum(h.release_all() for h in holds)
        return sum(h.fail_all(error, message) for h in holds)

    def holds(self) -> list[Hold]:
        """The holds that may still catch calls or have calls waiting."""
        with self._lock:
            return [h for h in self._holds if not h.spent]

    def _catch(self, method: str, resource: str | None) -> tuple[HeldCall, float] | None:
        with self._lock:
            # Spent holds go; full ones stay until answered, so that clear() and the
            # server's stop still reach their waiting calls.
            self._holds = [h for h in self._holds if not h.spent]
            for held in self._holds:
                call = held._catch(method, resource)
                if call is not None:
                    return call, held.max_hold
        return None

    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def decide(self, method: str, resource: str | None) -> tuple[float, ServiceError | None]:
        """The delay and the error (if any) for one call; consumes error_next budgets."""
        total = 0.0
        failure: ServiceError | None = None
        first: list[str] = []  # described before error_next is spent
        with self._lock:
            for rule in self._rules:
                if not rule.matches(method, resource):
                    continue
                rule.matched += 1
                if rule.matched == 1:
                    first.append(rule.describe())
                if rule.delay_max is not None:
                    total += self._random.uniform(rule.delay, rule.delay_max)
                else:
                    total += rule.delay
                if rule.tail_fraction and self._random.random() < rule.tail_fraction:
                    total += rule.tail_delay
                if failure is None and rule.error is not None and self._fires(rule):
                    rule.fired += 1
                    text = rule.message or f"injected fault: {method} fails with {rule.error.name}"
                    failure = ServiceError(rule.error, text)
        for described in first:
            # Once a rule: says that it matches what it was meant to (a resource typo
            # would match nothing), and when, without a line per call.
            log.warning(
                "local server: fault %s matched its first call (%s on %s); later ones "
                "are not logged",
                described,
                method,
                resource or "no resource",
            )
        return total, failure

    def _fires(self, rule: FaultRule) -> bool:
        if rule.error_next is not None:
            if rule.error_next <= 0:
                return False
            rule.error_next -= 1
            return True
        if rule.error_fraction is not None:
            return self._random.random() < rule.error_fraction
        return True

    def apply(self, method: str, resource: str | None) -> None:
        """Wait while held, then sleep and/or raise as the rules say; called on the
        handler's thread before the real handler runs."""
        if not self._rules and not self._holds:
            return  # the common case, without taking the lock
        caught = self._catch(method, resource)
        if caught is not None:
            call, cap = caught
            with self._parking():
                answer = call._wait(cap)
            if answer is not None:
                raise answer
        delay, failure = self.decide(method, resource)
        if delay > 0:
            with self._parking():
                stopping = self._stopping.wait(delay)
            if stopping:
                raise ServiceError(grpc.StatusCode.UNAVAILABLE, STOPPING)
        if failure is not None:
            raise failure

    @contextlib.contextmanager
    def _parking(self) -> Iterator[None]:
        """Count the calling handler as parked (held or delayed) while inside."""
        with self._waking:
            self._parked += 1
        try:
            yield
        finally:
            with self._waking:
                self._parked -= 1
                self._waking.notify_all()
