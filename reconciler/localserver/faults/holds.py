"""Held calls: a hold parks the next N matching calls until the test releases each
one (it then runs the real handler) or answers it with a status.

Delays can only make a race likely; holds decide it, so attempt races of the hedged
publisher are exercised through real gRPC and the real client library without
depending on timing. Made by `Faults.hold`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import grpc

from reconciler.localserver.api.status import ServiceError, grpc_status_from_name

log = logging.getLogger(__name__)

# How long a held call waits for the test at most before it runs anyway, so that a
# forgotten hold slows a server down but never wedges it.
MAX_HOLD_SECONDS = 60.0


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
