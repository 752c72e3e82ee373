"""The gRPC face: a grpcio server whose method handlers are the services' `Rpc`s,
each call sent through `dispatch.Dispatcher` (counted, faults applied, failures
turned into the status the client sees), plus the methods named but not served
(`rpc.UNSERVED_METHODS`) and the server's own `GetCapabilities`.

The face knows a service only by its name and its list of `Rpc`s; the server
assembly (`server.py`) hands them over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any, NoReturn

import grpc

from reconciler.localserver.api.counters import RpcCounters
from reconciler.localserver.api.rpc import (
    CAPABILITIES_METHOD,
    CLIENT_REGION_KEY,
    UNSERVED_METHODS,
    CallInfo,
    Rpc,
    Stream,
    unserved,
)
from reconciler.localserver.api.status import ServiceError
from reconciler.localserver.api.telemetry import TELEMETRY_HEADER, PublishAttempt
from reconciler.localserver.api.telemetry import parse as parse_telemetry
from reconciler.localserver.transport.dispatch import Dispatcher

# Above the service's 10 MiB request payload limit, so that a larger request reaches the
# limit check and gets the service's INVALID_ARGUMENT rather than gRPC's own refusal.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024


def new_server(max_workers: int, handshake_timeout_s: float) -> grpc.Server:
    """A grpcio server with the local server's bounds (not started, no port)."""
    return grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="localserver"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
            # A connection that starts HTTP/2 but stalls is dropped as the front
            # drops one that sends nothing.
            ("grpc.server_handshake_timeout_ms", int(handshake_timeout_s * 1000)),
        ],
        maximum_concurrent_rpcs=None,
    )


class GrpcFace:
    """Method handlers over `dispatcher`. `client_region` gives the region of a call
    that declares none in its metadata (`CLIENT_REGION_KEY`).

    A streaming call holds a worker thread of the server's pool while it is open, so
    streams have a budget of their own (`max_streams`): the server's pool is the
    unary calls' workers plus that many (`new_server`), and a stream opened beyond
    it is answered at once with RESOURCE_EXHAUSTED, as the service answers a project
    over its quota of open StreamingPull connections (clients retry it). Open
    streams never take the workers unary calls need."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        counters: RpcCounters,
        client_region: Callable[[], str | None],
        max_streams: int,
    ) -> None:
        self.dispatcher = dispatcher
        self.counters = counters
        self.client_region = client_region
        self.max_streams = max_streams
        self._streams = threading.BoundedSemaphore(max_streams)

    def handlers(
        self, services: dict[str, list[Rpc]], capabilities: Callable[[], bytes]
    ) -> tuple[grpc.GenericRpcHandler, ...]:
        """Every handler the server adds: `services` maps "google.pubsub.v1.Publisher"
        to its `Rpc`s; `capabilities` answers GetCapabilities."""
        capabilities_service, method = CAPABILITIES_METHOD.lstrip("/").split("/")

        def answer_capabilities(request: bytes, context: grpc.ServicerContext) -> bytes:
            return capabilities()

        return (
            *(self._service(name, rpcs) for name, rpcs in services.items()),
            *(_unserved_handler(service, names) for service, names in UNSERVED_METHODS.items()),
            grpc.method_handlers_generic_handler(
                capabilities_service,
                {method: grpc.unary_unary_rpc_method_handler(answer_capabilities)},
            ),
        )

    def _service(self, service: str, rpcs: list[Rpc]) -> grpc.GenericRpcHandler:
        """Handlers that take the request's bytes and parse them themselves: a request
        that is no protobuf of its type answers INVALID_ARGUMENT (grpcio's own
        deserializer would answer INTERNAL and log a traceback for the client's bytes)."""
        handlers = {}
        for rpc in rpcs:
            if rpc.rest_only:
                continue
            if rpc.stream:
                handlers[rpc.name] = grpc.stream_stream_rpc_method_handler(
                    self._wrap_stream(rpc),
                    response_serializer=rpc.response_type.SerializeToString,
                )
            else:  # a raw RPC, or one with serialized_reply, may answer bytes
                handlers[rpc.name] = grpc.unary_unary_rpc_method_handler(
                    self._wrap(rpc),
                    response_serializer=_serialized_or_message
                    if rpc.raw or rpc.serialized_reply
                    else rpc.response_type.SerializeToString,
                )
        return grpc.method_handlers_generic_handler(service, handlers)

    def _parse(self, rpc: Rpc, parse: Callable[[bytes], Any], raw: bytes) -> Any:
        """The request parsed, or INVALID_ARGUMENT (counted as a call of `rpc`)."""
        try:
            return parse(raw)
        except Exception:  # DecodeError, and strings that are not UTF-8
            self.counters.incr(rpc.name)
            raise invalid_request() from None

    def _wrap(self, rpc: Rpc) -> Callable[[Any, grpc.ServicerContext], Any]:
        """The dispatcher's answer, or its ServiceError as the call's status."""
        parse = (rpc.wire_type or rpc.request_type).FromString
        dispatch = self.dispatcher.call

        def handle(raw: bytes, context: grpc.ServicerContext) -> Any:
            try:
                request = self._parse(rpc, parse, raw)
            except ServiceError as err:
                _abort(context, err)
            if not rpc.raw:
                call = CallInfo(self._client_region(context), serialized_reply=rpc.serialized_reply)
            else:
                # Publish: its outcome is recorded, and it answers serialized bytes.
                call = CallInfo(
                    self._client_region(context),
                    raw,
                    gone=_gone(context),
                    serialized_reply=True,
                    ended=_ended(context),
                    attempt=_attempt(context),
                )
            try:
                return dispatch(rpc, request, call)
            except ServiceError as err:
                _abort(context, err)

        return handle

    def _wrap_stream(self, rpc: Rpc) -> Callable[[Iterator[Any], grpc.ServicerContext], Any]:
        """StreamingPull: within the streams' budget (see the class), the first
        request opens a `Stream` through the dispatcher (counted, faults applied,
        checked); a reader thread feeds it the later requests while this thread
        sends what it yields."""

        def handle(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            if not self._streams.acquire(blocking=False):
                self.counters.incr(rpc.name)
                _abort(context, self._over_budget(rpc))
            try:
                yield from self._stream(rpc, requests, context)
            finally:
                self._streams.release()

        return handle

    def _over_budget(self, rpc: Rpc) -> ServiceError:
        return ServiceError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"You have exceeded your {rpc.name} connection quota: this local server keeps "
            f"at most {self.max_streams} streams open (LocalServer(max_streams=...)). Refer "
            "to https://cloud.google.com/pubsub/quotas for more information.",
        )

    def _stream(
        self, rpc: Rpc, requests: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[Any]:
        """One open stream (see `_wrap_stream`)."""
        parse = rpc.request_type.FromString
        try:
            first = next(requests)
        except StopIteration:
            return
        try:
            stream: Stream = self.dispatcher.call(
                rpc, self._parse(rpc, parse, first), CallInfo(self._client_region(context))
            )
        except ServiceError as err:
            _abort(context, err)

        def read() -> None:
            try:
                for raw in requests:
                    try:
                        request = parse(raw)
                    except Exception:  # ends the stream with the client's error
                        stream.fail(invalid_request())
                        return
                    stream.receive(request)
            except Exception:  # the client went away or the server is stopping
                pass
            finally:
                stream.end()

        threading.Thread(target=read, name="streaming-pull-reader", daemon=True).start()
        try:
            yield from stream.responses(context.is_active)
        except ServiceError as err:
            _abort(context, err)
        finally:
            stream.end()

    def _client_region(self, context: grpc.ServicerContext) -> str | None:
        for key, value in context.invocation_metadata() or ():
            if key == CLIENT_REGION_KEY and isinstance(value, str) and value:
                return value
        return self.client_region()


def add_port(server: grpc.Server, address: str, public: str) -> int:
    """Listen on `address` (`public`: the address to name in an error)."""
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {public}: {exc}") from exc
    if port == 0:
        raise OSError(f"cannot listen on {public} (address in use?)")
    return int(port)


def _unserved_handler(service: str, names: tuple[str, ...]) -> grpc.GenericRpcHandler:
    def handler(name: str) -> grpc.RpcMethodHandler:
        error = unserved(f"{service}.{name}")

        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            context.abort(error.code, error.message)
            raise AssertionError("abort raises")  # for the type checker

        return grpc.unary_unary_rpc_method_handler(answer)

    return grpc.method_handlers_generic_handler(service, {n: handler(n) for n in names})


def invalid_request() -> ServiceError:
    """What a request that is no protobuf of its method's type answers."""
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "Invalid request")


def _abort(context: grpc.ServicerContext, err: ServiceError) -> NoReturn:
    """End the call with the error's status; its details, if any, travel as gRPC
    carries them (`grpc-status-details-bin`: what `google.rpc.status` readers such as
    the client libraries' exactly-once ack handling parse)."""
    if err.details:
        context.set_trailing_metadata(
            (("grpc-status-details-bin", err.status().SerializeToString()),)
        )
    context.abort(err.code, err.message)
    raise AssertionError("abort raises")  # for the type checker


def _serialized_or_message(response: Any) -> bytes:
    """The answer on the wire of an RPC that may answer bytes: bytes as they are, a
    message serialized."""
    return response if type(response) is bytes else bytes(response.SerializeToString())


def _ended(context: grpc.ServicerContext) -> Callable[[], float | None]:
    """When the call ended on the client's side (see `CallInfo.ended`): gRPC runs a
    call's callbacks when it terminates, at once for a cancel or a passed deadline;
    for a call answered normally that is after its outcome was recorded."""
    at: list[float] = []

    def ended() -> None:
        if not at:
            at.append(time.perf_counter())

    if not context.add_callback(ended):
        ended()  # already over
    return lambda: at[0] if at else None


def _attempt(context: grpc.ServicerContext) -> PublishAttempt | None:
    for key, value in context.invocation_metadata() or ():
        if key == TELEMETRY_HEADER:
            return parse_telemetry(value)
    return None


def _gone(context: grpc.ServicerContext) -> Callable[[], str | None]:
    """How the client ended the call if it stopped waiting (see `CallInfo.gone`)."""

    def gone() -> str | None:
        left = context.time_remaining()
        if left is not None and left <= 0:  # known here even before the client's reset
            return "DEADLINE_EXCEEDED"
        return None if context.is_active() else "CANCELLED"

    return gone
