"""One call of one RPC, independent of the transport: count it, inject faults, check
the request's durations and timestamps (`wellknown`: every method, so no handler can
store or format one out of range), run the handler, record Publish outcomes, and turn
every failure into a `ServiceError` (the status a client sees). The gRPC face
(`grpc_face`) and the REST face (`rest`) are thin layers over this, calling
`Dispatcher.call` with the same request messages.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import grpc
from google.protobuf.message import Message

from reconciler.localserver.api.counters import RpcCounters
from reconciler.localserver.api.outcomes import PublishOutcome, PublishOutcomes
from reconciler.localserver.api.rpc import CallInfo, Rpc
from reconciler.localserver.api.status import ServiceError
from reconciler.localserver.api.wellknown import check_times
from reconciler.localserver.faults.injection import Faults
from reconciler.localserver.persistence.journal import StateWriteError

log = logging.getLogger(__name__)

# How a client ends a call it stops waiting for.
ABANDONED = frozenset({"CANCELLED", "DEADLINE_EXCEEDED"})


def state_write_status(exc: StateWriteError) -> ServiceError:
    """What a client sees when its change could not be made durable: RESOURCE_EXHAUSTED
    for a full disk (the GAPIC clients do not retry it blindly; `reconcile apply`
    retries it a bounded number of times), UNAVAILABLE when the disk failed."""
    if exc.no_space:
        return ServiceError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"{exc}: the change was not made. Free space on that file system and retry.",
        )
    hint = (
        "restart the local server (it refuses further writes after a failed fsync)"
        if exc.broken
        else "retry"
    )
    return ServiceError(grpc.StatusCode.UNAVAILABLE, f"{exc}: the change was not made; {hint}.")


def project_of_resource(resource: str | None) -> str | None:
    """P of "projects/P/..." (what a per-project counter is keyed by)."""
    if not resource or not resource.startswith("projects/"):
        return None
    return resource.split("/")[1] or None


class Dispatcher:
    def __init__(self, counters: RpcCounters, faults: Faults, outcomes: PublishOutcomes) -> None:
        self.counters = counters
        self.faults = faults
        self.outcomes = outcomes
        self._last_write_failure = ("", 0.0)
        self._hedged_topics: set[str] = set()  # topics whose first hedge was logged

    def resource(self, rpc: Rpc, request: Any) -> str | None:
        try:
            return rpc.resource(request)
        except Exception:
            return None

    def call(self, rpc: Rpc, request: Any, call: CallInfo) -> Any:
        """The handler's response, or `ServiceError`. Anything unexpected is INTERNAL
        (never UNKNOWN: some clients retry UNKNOWN for minutes)."""
        resource = self.resource(rpc, request)
        self.counters.incr(rpc.name, project_of_resource(resource))
        if rpc.name != "Publish":
            return self._run(rpc, request, call, resource)
        start = time.perf_counter()
        try:
            response = self._run(rpc, request, call, resource)
        except ServiceError as err:
            self._record(call, resource, err.code.name, start, request)
            raise
        except BaseException:
            self._record(call, resource, "OK", start, request)
            raise
        self._record(call, resource, "OK", start, request)
        return response

    def _record(
        self, call: CallInfo, resource: str | None, code: str, start: float, request: Any
    ) -> None:
        """One Publish outcome. A call the client gave up on is recorded as it ended
        on the client's side: its code, and its latency up to the cancel or deadline
        where the face knows when that came (the service records an RPC's life, and
        a cancelled hedging loser's life ends at the cancel: the advisor reads such
        calls as observations cut short there, not as complete ones)."""
        end = time.perf_counter()
        if code == "OK" and call.gone is not None:
            code = call.gone() or code
        if code in ABANDONED and call.ended is not None:
            end = min(end, call.ended() or end)
        attempt = call.attempt.number if call.attempt is not None else None
        self.outcomes.record(
            PublishOutcome(
                time.time_ns(),
                resource or "",
                code,
                max(0.0, end - start),
                len(request.messages),
                bool(call.notes.get("has_ordering")),
                attempt,
            )
        )
        if attempt and resource and resource not in self._hedged_topics:
            self._hedged_topics.add(resource)
            log.info(
                "local server: %s receives hedged Publish attempts (attempt %d, told by "
                "its x-goog-pubsub-client-telemetry header); counted per attempt number",
                resource,
                attempt,
            )

    def _run(self, rpc: Rpc, request: Any, call: CallInfo, resource: str | None) -> Any:
        try:
            self.faults.apply(rpc.name, resource)
            if not rpc.raw and isinstance(request, Message):  # (Publish's bytes carry
                check_times(request)  # no time the server reads; PromQL's is no proto)
            return rpc.handler(request, call)
        except ServiceError:
            raise
        except StateWriteError as exc:
            self._log_write_failure(rpc.name, exc)
            raise state_write_status(exc) from None
        except Exception as exc:
            log.exception("local server: %s failed", rpc.name)
            raise ServiceError(grpc.StatusCode.INTERNAL, f"local server bug: {exc!r}") from None

    def _log_write_failure(self, method: str, exc: StateWriteError) -> None:
        """Once per kind of failure and minute: a full disk fails every write."""
        now = time.monotonic()
        key = str(exc)
        if self._last_write_failure[0] == key and now - self._last_write_failure[1] < 60:
            return
        self._last_write_failure = (key, now)
        log.error("local server: %s failed: %s (changes are refused meanwhile)", method, exc)
