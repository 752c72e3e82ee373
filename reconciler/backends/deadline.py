"""Deadlines: every call to the service ends within `--timeout` seconds, whatever the
client library would otherwise retry (its defaults retry UNAVAILABLE for up to 600 s a
call, so without a deadline an unreachable Google Cloud looks like a hang).

    DEFAULT_TIMEOUT                          the --timeout default, seconds
    call_options(timeout, client_retry)      `timeout=` and a bounded `retry=` for a GAPIC call
    Deadline(seconds, endpoint)              tells our own deadline from the service's answer
    wait_ready(channels, seconds)            connect first; the endpoints that did not answer
    ConnectFirst(client, endpoint, seconds)  a Google Cloud client that connects on first use
    endpoint_of(client, default)             the address to name in a deadline message

A deadline we hit ourselves becomes a BackendError with status `TIMEOUT` (not a gRPC
code): apply does not retry it, because every retry would wait the whole deadline again.
A DEADLINE_EXCEEDED the service answers before our deadline keeps its code (transient).
Google imports happen on call: `reconcile validate` imports this module's constant only.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from reconciler.errors import BackendError

DEFAULT_TIMEOUT = 60.0
TIMEOUT_STATUS = "TIMEOUT"
# gRPC fires the deadline from the call's start, a moment after ours: allow for that.
_SLACK = 0.98
DEADLINE_HINT = (
    "check the address, and the network, proxy (HTTPS_PROXY) and firewall on the way "
    "to it; --timeout SECONDS sets the deadline"
)


def seconds_text(seconds: float) -> str:
    """2.0 -> "2 s", 0.5 -> "0.5 s"."""
    return f"{seconds:g} s"


def call_options(timeout: float, client_retry: bool) -> dict[str, Any]:
    """Per-call options for a GAPIC method: the library's retry, if kept, retries only
    UNAVAILABLE (like its defaults for topic admin) and gives up with the deadline;
    `timeout` bounds every attempt by the time left of the same deadline."""
    if not client_retry:
        return {"timeout": timeout, "retry": None}
    from google.api_core import exceptions as gexc
    from google.api_core import retry as gretry

    retry = gretry.Retry(
        predicate=gretry.if_exception_type(gexc.ServiceUnavailable),
        initial=0.1,
        maximum=min(5.0, timeout),
        multiplier=1.3,
        timeout=timeout,
    )
    return {"timeout": timeout, "retry": retry}


@dataclass(frozen=True)
class Deadline:
    """The --timeout of one backend, and the endpoint to name when it passes."""

    seconds: float
    endpoint: str

    def expired(self, exc: BaseException, started: float) -> bool:
        """True when `exc` is our deadline passing (the library's retry giving up, or
        gRPC's DEADLINE_EXCEEDED at the deadline), not an answer of the service."""
        from google.api_core import exceptions as gexc

        if isinstance(exc, gexc.RetryError):
            return True
        elapsed = time.monotonic() - started
        return isinstance(exc, gexc.DeadlineExceeded) and elapsed >= self.seconds * _SLACK

    def error(self, exc: BaseException, action: str, resource: str) -> BackendError:
        """What the user reads: who did not answer, for how long, doing what."""
        last = getattr(exc, "cause", None)
        code = getattr(getattr(last, "grpc_status_code", None), "name", None)
        detail = getattr(last, "message", None)
        tail = f" (last error: {code}: {detail})" if code and detail else ""
        return BackendError(
            f"no answer from {self.endpoint} within {seconds_text(self.seconds)} while "
            f"trying to {action} for {resource}{tail}",
            hint=DEADLINE_HINT,
            status=TIMEOUT_STATUS,
        )


def wait_ready(channels: dict[str, Any], seconds: float) -> list[str]:
    """Connect every gRPC channel (endpoint -> channel) within `seconds`, together;
    the endpoints that did not become ready. A listener that accepts and never
    completes the TLS or HTTP/2 handshake is caught here, before any call."""
    import grpc

    end = time.monotonic() + seconds
    futures = {endpoint: grpc.channel_ready_future(ch) for endpoint, ch in channels.items()}
    late = []
    for endpoint, future in futures.items():
        try:
            future.result(timeout=max(0.0, end - time.monotonic()))
        except grpc.FutureTimeoutError:
            late.append(endpoint)
            future.cancel()
    return late


class ConnectFirst:
    """A Google Cloud client whose channel is connected, within the deadline, before
    its first call; an endpoint that never answers fails naming it. On first use, so
    that only the services a command calls are dialled (import never needs the Org
    Policy API, policy pull never Pub/Sub). Thread-safe: one attempt, shared outcome."""

    def __init__(self, client: Any, endpoint: str, seconds: float) -> None:
        self._client = client
        self.endpoint = endpoint
        self._seconds = seconds
        self._lock = threading.Lock()
        self._outcome: BackendError | bool | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if callable(attr) and not name.startswith("_"):
            self.connect()
        return attr

    def connect(self) -> None:
        with self._lock:
            if self._outcome is None:
                late = wait_ready(
                    {self.endpoint: self._client.transport.grpc_channel}, self._seconds
                )
                self._outcome = (
                    BackendError(
                        f"cannot reach Google Cloud at {self.endpoint} (no connection "
                        f"within {seconds_text(self._seconds)})",
                        hint=DEADLINE_HINT,
                        status=TIMEOUT_STATUS,
                    )
                    if late
                    else True
                )
            outcome = self._outcome
        if isinstance(outcome, BackendError):
            raise BackendError(outcome.message, hint=outcome.hint, status=outcome.status)


def endpoint_of(client: Any, default: str) -> str:
    """A Google Cloud client's endpoint (host:port); `default` (the target, e.g.
    "emulator HOST:PORT") for the others."""
    return client.endpoint if isinstance(client, ConnectFirst) else default
