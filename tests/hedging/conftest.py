"""Fakes for the hedged publisher's unit tests: a Publish stub whose calls the test
completes by hand, so attempt races are decided by the test, not by timing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from google.pubsub_v1.types import pubsub


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[()]:
        return ()


class FakeCall:
    """A grpc.Future stand-in; `cancellable=False` plays a response already on the wire."""

    def __init__(self, request: pubsub.PublishRequest, timeout: float | None) -> None:
        self.request = request
        self.timeout = timeout
        self.cancellable = True
        self._lock = threading.Lock()
        self._done = False
        self._cancelled = False
        self._result: pubsub.PublishResponse | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[FakeCall], None]] = []
        self.cancel_requested = False

    def add_done_callback(self, fn: Callable[[FakeCall], None]) -> None:
        with self._lock:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def _complete(self) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def cancel(self) -> bool:
        self.cancel_requested = True
        with self._lock:
            if self._done or not self.cancellable:
                return False
            self._done = self._cancelled = True
        self._complete()
        return True

    def cancelled(self) -> bool:
        return self._cancelled

    def done(self) -> bool:
        return self._done

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._error

    def result(self, timeout: float | None = None) -> pubsub.PublishResponse:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def succeed(self, prefix: str = "id") -> None:
        with self._lock:
            assert not self._done, "call already finished"
            self._done = True
            n = len(self.request.messages)
            self._result = pubsub.PublishResponse(message_ids=[f"{prefix}-{i}" for i in range(n)])
        self._complete()

    def fail(self, code: grpc.StatusCode, details: str) -> None:
        with self._lock:
            assert not self._done, "call already finished"
            self._done = True
            self._error = FakeRpcError(code, details)
        self._complete()


class FakePublishRpc:
    def __init__(self) -> None:
        self.calls: list[FakeCall] = []
        self.metadata: list[Any] = []
        self._lock = threading.Lock()

    def future(self, request: Any, timeout: float | None = None, metadata: Any = None) -> FakeCall:
        call = FakeCall(request, timeout)
        with self._lock:
            self.calls.append(call)
            self.metadata.append(metadata)
        return call

    def wait_calls(self, n: int, timeout: float = 10.0) -> list[FakeCall]:
        wait_until(lambda: len(self.calls) >= n, timeout)
        return self.calls


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll: generous timeouts, because a loaded CI machine is slow, never fast."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


@pytest.fixture
def fake_rpc() -> FakePublishRpc:
    return FakePublishRpc()


@pytest.fixture
def fake_client(fake_rpc: FakePublishRpc) -> Iterator[Any]:
    yield SimpleNamespace(transport=SimpleNamespace(publish=fake_rpc))


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., None]:
    return wait_until
