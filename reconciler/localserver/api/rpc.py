"""What one RPC method is, independent of the faces that serve it (`transport/`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc

from reconciler.localserver.api.status import ServiceError
from reconciler.localserver.api.telemetry import PublishAttempt
from reconciler.localserver.identity import CAPABILITIES_METHOD as CAPABILITIES_METHOD
from reconciler.localserver.identity import CLIENT_REGION_KEY as CLIENT_REGION_KEY
from reconciler.localserver.identity import SERVER_NAME as SERVER_NAME


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Per-call facts a handler may need: the region the request 'comes from', and
    for a `raw` RPC the request's own bytes (its size is a limit; journaling them
    costs no second serialization). `gone`, when the face can tell, says how the
    call ended on the client's side once the client stopped waiting for it
    ("CANCELLED", "DEADLINE_EXCEEDED"; None while it waits): a Publish answered
    after that is recorded so, as the service's send_request_count counts it.
    `serialized_reply`: the face sends a handler's `bytes` answer as the serialized
    response (gRPC); without it a handler answers a message (REST renders JSON).
    `payload`: the request's size as it travelled where that is not its serialized
    size (a REST call's JSON body); 0 when the serialized request is what travelled.
    `ended`: when the face can tell, the `time.perf_counter()` at which the call ended
    on the client's side (its cancel or deadline arrived; None while it waits): a
    Publish's recorded latency stops there, as the call's own life does.
    `attempt`: what the call's `x-goog-pubsub-client-telemetry` header said (None:
    no header, or one that could not be read)."""

    client_region: str | None
    raw: bytes = b""
    notes: dict[str, Any] = field(default_factory=dict)  # what a handler tells the dispatcher
    gone: Callable[[], str | None] | None = None
    serialized_reply: bool = False
    payload: int = 0
    ended: Callable[[], float | None] | None = None
    attempt: PublishAttempt | None = None


@dataclass(frozen=True)
class Rpc:
    name: str  # short method name: "UpdateTopic"
    handler: Callable[[Any, CallInfo], Any]
    request_type: Any
    response_type: Any
    resource: Callable[[Any], str]  # the resource a fault rule may target
    raw: bool = False  # the handler also gets the request bytes (CallInfo.raw)
    # For a raw RPC, what the gRPC face parses its bytes into (default request_type;
    # REST always parses request_type, from JSON).
    wire_type: Any = None
    stream: bool = False  # bidirectional streaming: the handler opens a stream object
    # The handler may answer the serialized response (`bytes`) where the face sends it
    # as it is (gRPC: CallInfo.serialized_reply); a raw RPC always may.
    serialized_reply: bool = False
    # Served on REST only: a method Google publishes as a REST binding but not in a
    # public proto, so no gRPC client can call it (the transform RPCs).
    rest_only: bool = False


class Stream(Protocol):
    """What the handler of a `stream` RPC opens (StreamingPull's `PullStream`): the
    face feeds it the client's later requests and sends what it yields until
    `active()` turns false or the stream ends; `fail` ends it with an error (a
    request the face could not read)."""

    def receive(self, request: Any) -> None: ...
    def fail(self, error: ServiceError) -> None: ...
    def end(self) -> None: ...
    def responses(self, active: Callable[[], bool]) -> Iterator[Any]: ...


# Methods of the served services that this server does not implement, by service:
# both faces answer them UNIMPLEMENTED with the same words (`unserved`). A REST route
# to a method no room serves (Org Policy's ListConstraints) answers the same.
UNSERVED_METHODS: dict[str, tuple[str, ...]] = {}


def unserved(full_name: str) -> ServiceError:
    """What a method this server does not implement answers ("google.pubsub.v1.X.Y")."""
    return ServiceError(
        grpc.StatusCode.UNIMPLEMENTED,
        f"Method {full_name} is not served by the local server.",
    )
