"""Latency and error injection per RPC method, so tests and benchmarks can play a slow
or failing Google backend (latency tails for hedging, transient UNAVAILABLE for retries,
PERMISSION_DENIED on one topic for partial-apply handling).

A rule matches a method (short name, or "*") and optionally one resource name. For each
call every matching rule contributes its delay; the first matching rule that fires an
error decides the status. Delays sleep on the handler's own worker thread, so a slow
call never blocks the others.

A hold (`Faults.hold`) parks the next N matching calls until the test releases each
one (it then runs the real handler) or answers it with a status. Delays can only
make a race likely; holds decide it, so attempt races of the hedged publisher are
exercised through real gRPC and the real client library without depending on timing.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from reconciler.localserver.status import ServiceError, grpc_status_from_name

log = logging.getLogger(__name__)

# How long a held call waits for the test at most before it runs anyway, so that a
# forgotten hold slows a server down but never wedges it.
MAX_HOLD_SECONDS = 60.0


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

    def matches(self, method: str, resource: str | None) -> bool:
        if self.method not in ("*", method):
            return False
        if self.resource is None or self.resource == resource:
            return True
        # A project names everything under it: "projects/p" matches its topics too.
        return resource is not None and resource.startswith(self.resource.rstrip("/") + "/")


class HeldCall:
    """One call parked by a `Hold`: its handler thread waits until the test answers it.

    `release()` lets it go on (through the fault rules) to the real handler, so the
    message is stored and the IDs returned; `fail(code, message)` answers it with
    that status instead. The first answer counts; later ones return False.
    """

    def __init__(self, method: str, resource: str | None, number: int) -> None:
        self.method = method
        self.resource = resource
        self.number = number  # arrival order within its hold, from 1
        self._lock = threading.Lock()
        self._answered = threading.Event()
        self._outcome: str | None = None
        self._failure: ServiceError | None = None

    def __repr__(self) -> str:
        return (
            f"HeldCall({self.method} #{self.number}, resource={self.resource!r}, "
            f"outcome={self.outcome!r})"
        )

    @property
    def outcome(self) -> str | None:
        """None while held; then "released", "expired" (the safety cap passed) or the
        name of the status it was failed with."""
        with self._lock:
            return self._outcome

    def release(self) -> bool:
        """Let the call run the real handler. False if it was already answered."""
        return self._answer("released", None)

    def fail(self, code: str | grpc.StatusCode, message: str | None = None) -> bool:
        """Answer the call with `code` (a status name or `grpc.StatusCode`) and
        `message`. False if it was already answered."""
        status = grpc_status_from_name(code) if isinstance(code, str) else code
        if status is grpc.StatusCode.OK:
            raise ValueError("fail(OK) is not a failure; use release()")
        text = message or f"injected fault: {self.method} fails with {status.name}"
        return self._answer(status.name, ServiceError(status, text))

    def _answer(self, outcome: str, failure: ServiceError | None) -> bool:
        with self._lock:
            if self._outcome is not None:
                return False
            self._outcome = outcome
            self._failure = failure
        self._answered.set()
        return True

    def _wait(self, cap: float) -> ServiceError | None:
        """On the handler's thread: block until answered or `cap` seconds passed; the
        error to answer with, None to go on."""
        if not self._answered.wait(cap) and self._answer("expired", None):
            log.warning(
                "local server: held %s call #%d was never answered; running it after %.0f s",
                self.method,
                self.number,
                cap,
            )
        with self._lock:
            return self._failure


class Hold:
    """Parks the next `count` calls matching a method (and optionally a resource);
    made by `Faults.hold`. Thread-safe."""

    def __init__(self, method: str, resource: str | None, count: int, max_hold: float) -> None:
        self.method = method
        self.resource = resource
        self.count = count
        self.max_hold = max_hold
        self._cond = threading.Condition()
        self._arrived: list[HeldCall] = []
        self._ended = False

    def __repr__(self) -> str:
        return (
            f"Hold({self.method}, resource={self.resource!r}, "
            f"{len(self.arrived())}/{self.count} arrived)"
        )

    @property
    def active(self) -> bool:
        """True while the hold may still catch calls."""
        with self._cond:
            return not self._ended and len(self._arrived) < self.count

    @property
    def spent(self) -> bool:
        """True once the hold can catch no more calls and none is left waiting."""
        with self._cond:
            full = self._ended or len(self._arrived) >= self.count
            return full and all(call.outcome is not None for call in self._arrived)

    def arrived(self) -> list[HeldCall]:
        """The calls caught so far, in arrival order (answered ones included)."""
        with self._cond:
            return list(self._arrived)

    def wait_arrived(self, n: int, timeout: float = 10.0) -> list[HeldCall]:
        """Block until at least `n` calls have been caught; all caught so far, in
        arrival order. `timeout` is a safety net against a test that waits for a call
        that never comes (TimeoutError), not a latency expectation."""
        if not 1 <= n <= self.count:
            raise ValueError(f"a hold of {self.count} calls cannot catch {n}")
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._arrived) >= n, timeout):
                raise TimeoutError(
                    f"only {len(self._arrived)} of {n} held {self.method} calls "
                    f"arrived within {timeout:g} s"
                )
            return list(self._arrived)

    def release_all(self) -> int:
        """End the hold: later calls pass untouched and every call still waiting is
        released to the real handler. How many were released."""
        return self._end(lambda call: call.release())

    def fail_all(self, code: str | grpc.StatusCode, message: str | None = None) -> int:
        """End the hold, answering every call still waiting with `code`."""
        if isinstance(code, str):
            code = grpc_status_from_name(code)  # check before ending anything
        status = code
        return self._end(lambda call: call.fail(status, message))

    def _end(self, answer: Callable[[HeldCall], bool]) -> int:
        with self._cond:
            self._ended = True
            waiting = list(self._arrived)
        return sum(1 for call in waiting if answer(call))

    def _catch(self, method: str, resource: str | None) -> HeldCall | None:
        if self.method not in ("*", method):
            return None
        if self.resource is not None and self.resource != resource:
            return None
        with self._cond:
            if self._ended or len(self._arrived) >= self.count:
                return None
            call = HeldCall(method, resource, len(self._arrived) + 1)
            self._arrived.append(call)
            self._cond.notify_all()
            return call


class Faults:
    """The rule set of one server; safe to change while requests are in flight."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._holds: list[Hold] = []
        self._random = random.Random(seed)

    def add(
        self,
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
    ) -> FaultRule:
        """Add a rule.

        delay: seconds every matching call waits (uniform in [delay, delay_max] when
        delay_max is given). tail_fraction/tail_delay: that fraction of calls waits
        tail_delay more. error: status code name; with error_fraction only that
        fraction of calls fails, with error_next only the next N calls fail, with
        neither every call fails. resource: only calls on that topic/policy/project (a
        project also matches the calls on its topics and policies).
        """
        code = grpc_status_from_name(error) if isinstance(error, str) else error
        if code is grpc.StatusCode.OK:
            raise ValueError("error=OK injects nothing; leave error unset")
        for label, value in (("delay", delay), ("tail_delay", tail_delay)):
            if value < 0:
                raise ValueError(f"{label} must not be negative")
        if delay_max is not None and delay_max < delay:
            raise ValueError("delay_max must be at least delay")
        for label, frac in (("tail_fraction", tail_fraction), ("error_fraction", error_fraction)):
            if frac is not None and not 0.0 <= frac <= 1.0:
                raise ValueError(f"{label} must be between 0 and 1")
        if error_next is not None and error_next < 0:
            raise ValueError("error_next must not be negative")
        if (error_fraction is not None or error_next is not None) and code is None:
            raise ValueError("error_fraction and error_next need error=CODE")
        rule = FaultRule(
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
        with self._lock:
            for rule in self._rules:
                if not rule.matches(method, resource):
                    continue
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
        caught = self._catch(method, resource)
        if caught is not None:
            call, cap = caught
            answer = call._wait(cap)
            if answer is not None:
                raise answer
        delay, failure = self.decide(method, resource)
        if delay > 0:
            time.sleep(delay)
        if failure is not None:
            raise failure


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|us)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds from "0.5", "500ms", "2s"."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (use e.g. 2s, 500ms or 0.5)")
    value = float(m.group(1))
    unit = m.group(2) or "s"
    return value / {"s": 1.0, "ms": 1000.0, "us": 1_000_000.0}[unit]


_SPEC_KEYS = {
    "delay",
    "delay_max",
    "tail_fraction",
    "tail_delay",
    "error",
    "error_fraction",
    "error_next",
    "resource",
    "message",
}


def parse_fault_spec(spec: str) -> dict[str, object]:
    """Keyword arguments for `Faults.add` from the command-line form

        METHOD[:key=value,key=value...]

    e.g. "Publish:delay=5ms,tail_fraction=0.02,tail_delay=2s",
    "UpdateTopic:error=PERMISSION_DENIED,resource=projects/p/topics/t",
    "*:delay=20ms", "GetTopic:error=NOT_FOUND,error_next=1".
    """
    method, _, rest = spec.partition(":")
    method = method.strip()
    if not method:
        raise ValueError(f"fault {spec!r} needs a method name before ':' (or '*')")
    kwargs: dict[str, object] = {"method": method}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in _SPEC_KEYS:
            raise ValueError(
                f"fault {spec!r}: {item!r} is not key=value with key one of "
                + ", ".join(sorted(_SPEC_KEYS))
            )
        value = value.strip()
        if key in ("delay", "delay_max", "tail_delay"):
            kwargs[key] = parse_duration(value)
        elif key in ("tail_fraction", "error_fraction"):
            try:
                kwargs[key] = float(value)
            except ValueError:
                raise ValueError(f"fault {spec!r}: {key} must be a number") from None
        elif key == "error_next":
            if not value.isdigit():
                raise ValueError(f"fault {spec!r}: error_next must be a whole number")
            kwargs[key] = int(value)
        else:
            kwargs[key] = value
    return kwargs
