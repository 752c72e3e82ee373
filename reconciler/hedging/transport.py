"""What the publisher uses of google-cloud-pubsub's gRPC transport, and its errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import grpc
from google.api_core import exceptions as api_exceptions


class Call(Protocol):
    """What we use of a grpc.Future returned by `UnaryUnaryMultiCallable.future`."""

    def add_done_callback(self, fn: Callable[[Any], None]) -> None: ...
    def cancel(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def exception(self, timeout: float | None = None) -> BaseException | None: ...
    def result(self, timeout: float | None = None) -> Any: ...


class PublishRpc(Protocol):
    def future(self, request: Any, timeout: float | None = None, metadata: Any = None) -> Call: ...


def status_code(error: BaseException) -> grpc.StatusCode | None:
    code = getattr(error, "code", None)
    result = code() if callable(code) else None
    return result if isinstance(result, grpc.StatusCode) else None


def to_api_error(error: BaseException) -> BaseException:
    """google.api_core exceptions, as the official publisher's futures carry."""
    if isinstance(error, grpc.RpcError) and status_code(error) is not None:
        converted = api_exceptions.from_grpc_error(error)  # type: ignore[no-untyped-call]
        return cast(BaseException, converted)
    return error


def publish_rpc(client: Any) -> PublishRpc:
    """The transport's Publish stub, which can be called asynchronously."""
    # google.cloud.pubsub_v1.PublisherClient subclasses the GAPIC client: both have it.
    transport = getattr(client, "transport", None)
    rpc = getattr(transport, "publish", None)
    if rpc is None or not callable(getattr(rpc, "future", None)):
        raise TypeError(
            "HedgedPublisher needs a PublisherClient with a gRPC transport "
            f"(got {type(transport).__name__})"
        )
    return rpc  # type: ignore[no-any-return]
