"""A Pub/Sub publisher for one topic with publish hedging (docs/hedging.md).

The Python client library has no hedging, so this publisher batches messages itself
and sends each batch through google-cloud-pubsub's own gRPC transport (the GAPIC
`Publish` stub, asynchronously with `.future()`); attempts.py runs each batch's
attempts. `reconciler.hedging.PublisherClient` (client.py) is the drop-in for the
official client, built on one of these per topic.

With `profile=None` the same code path publishes without extra attempts.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import quote

from google.api_core import exceptions as api_exceptions
from google.cloud.pubsub_v1.publisher.exceptions import (
    FlowControlLimitError,
    MessageTooLargeError,
)
from google.cloud.pubsub_v1.publisher.futures import Future
from google.pubsub_v1.types import pubsub

from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.attempts import BatchRun, Engine
from reconciler.hedging.batching import (
    MAX_REQUEST_BYTES,
    Backoff,
    RetryPolicy,
    coerce_batch_settings,
)
from reconciler.hedging.errors import PublishNotSent, closed_error
from reconciler.hedging.flow import FlowGate, GateClosed
from reconciler.hedging.lag import LagProbe
from reconciler.hedging.profile import HedgingConfigError, HedgingProfile, RetryTimeouts, check
from reconciler.hedging.scheduler import Scheduler
from reconciler.hedging.stats import HedgingCounters, Stats
from reconciler.hedging.tokens import TokenBucket
from reconciler.hedging.transport import publish_rpc

__all__ = ["HedgedPublisher", "HedgingCounters"]

_RAW_MESSAGE = pubsub.PubsubMessage.pb()
_RAW_REQUEST = pubsub.PublishRequest.pb()

# Set while this thread resolves publish futures (user callbacks run there): close()
# must not wait then, because the thread it would block is the one completing batches.
_resolving = threading.local()


class _Batch:
    """Messages gathered for one request, then its attempts."""

    __slots__ = ("futures", "messages", "policy", "raw", "run", "size")

    def __init__(self, policy: RetryPolicy) -> None:
        self.messages: list[Any] = []  # raw protobuf PubsubMessages
        self.futures: list[Future] = []
        self.size = 0  # bytes in the request
        self.raw = 0  # bytes flow control counts (the messages' own)
        self.policy = policy
        self.run: BatchRun | None = None


class HedgedPublisher:
    """Publishes to one topic, hedging per `profile` (None = hedging off).

    `client` is a `google.cloud.pubsub_v1.PublisherClient` or a GAPIC
    `google.pubsub_v1.PublisherClient` with a gRPC transport; the publisher uses its
    channel and never closes it. Construction runs the same checks as spec
    validation and raises `HedgingConfigError` with every broken rule.
    """

    def __init__(
        self,
        client: Any,
        topic: str,
        profile: HedgingProfile | None = None,
        retry: RetryTimeouts | None = None,
        *,
        message_ordering: bool = False,
        batch_settings: Any = None,
        backoff: Backoff | None = None,
        policy: RetryPolicy | None = None,
        scheduler: Scheduler | None = None,
        flow: FlowGate | None = None,
        when_closed_idle: Callable[[], None] | None = None,
    ) -> None:
        retry = retry or RetryTimeouts()
        if profile is not None:
            check(profile, retry, message_ordering)
        elif problems := retry.problems():
            raise HedgingConfigError(problems)
        if message_ordering:
            # Ordered publishing needs one batch in flight per key: PublisherClient
            # hands it to the official client (hedging is excluded with it anyway).
            raise ValueError(
                "HedgedPublisher does not publish with ordering keys; use "
                "reconciler.hedging.PublisherClient with enable_message_ordering"
            )
        self.topic = topic
        self.profile = profile
        self.retry = retry
        self.batch_settings = coerce_batch_settings(batch_settings)
        self.policy = policy or RetryPolicy(
            initial_rpc_timeout=retry.initial_rpc_timeout_ms / 1000,
            total_timeout=retry.total_timeout_ms / 1000,
            backoff=backoff or Backoff(),
        )
        self._owns_scheduler = scheduler is None
        self._when_closed_idle = when_closed_idle
        self._scheduler = scheduler or Scheduler(name=f"hedging:{topic}")
        self._flow = flow or FlowGate()
        self._tokens = TokenBucket(profile.max_tokens, profile.refill_ppm) if profile else None
        self._stats = Stats()
        # The routing header the GAPIC client adds to Publish.
        metadata = (("x-goog-request-params", "topic=" + quote(topic, safe="")),)
        rpc, sched = publish_rpc(client), self._scheduler
        delay = profile.hedge_delay_ms / 1000 if profile else None
        probe = None
        if delay is not None:  # a request with no message: nothing could be stored
            now = sched.call_soon
            empty = pubsub.PublishRequest(topic=topic)
            probe = LagProbe(rpc, empty, metadata, sched.lag, now, fresh_for=delay / 10)
        self._engine = Engine(
            rpc, metadata, sched, delay, self._tokens, self._stats, self._deliver, probe
        )
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._current: _Batch | None = None
        self._open: set[_Batch] = set()  # created and not finished
        self._closed = False

    @classmethod
    def from_spec(
        cls,
        client: Any,
        topic: str,
        profile: HedgingProfile | None,
        retry: RetryTimeouts | None = None,
        message_ordering: bool = False,
        **kwargs: Any,
    ) -> HedgedPublisher:
        """The publisher a topic spec's `publishers` section describes."""
        return cls(client, topic, profile, retry, message_ordering=message_ordering, **kwargs)

    @classmethod
    def from_topic(
        cls, client: Any, topic: str, *, message_ordering: bool = False, **kwargs: Any
    ) -> HedgedPublisher:
        """Read the profile that `apply` recorded in the topic's labels (GetTopic).

        A topic without hedging labels means hedging off (with default retry
        timeouts); damaged labels raise `LabelDecodeError`.
        """
        live = client.get_topic(request={"topic": topic})
        decoded = hedging_labels.decode(dict(live.labels))
        profile, retry = decoded if decoded is not None else (None, None)
        return cls(client, topic, profile, retry, message_ordering=message_ordering, **kwargs)

    # -- publishing ------------------------------------------------------------

    def publish(self, data: bytes, **attributes: str) -> Future:
        """Queue one message; the future resolves to its message ID."""
        if not isinstance(data, bytes):
            raise TypeError("data must be bytes")
        return self.publish_message(_RAW_MESSAGE(data=data, attributes=attributes))

    def publish_message(self, message: Any, policy: RetryPolicy | None = None) -> Future:
        """Queue a raw protobuf PubsubMessage (no proto-plus wrapper: they cost CPU per
        message), with this batch's retry `policy` (default: ours)."""
        raw = message.ByteSize()
        size = raw + 5  # the repeated field's tag and length in the request
        if size > MAX_REQUEST_BYTES:
            raise MessageTooLargeError(
                f"The message being published would produce too large a publish request "
                f"that would exceed the maximum allowed size on the backend "
                f"({MAX_REQUEST_BYTES} bytes)."
            )
        if self._closed:
            raise RuntimeError("Cannot publish on a stopped publisher (it is closed).")
        future = Future()
        try:
            self._flow.acquire(raw)
        except GateClosed:
            future.set_exception(PublishNotSent(
                "publisher closed while this publish waited for flow control; it was "
                "never sent, publishing it again is safe"
            ))
            return future
        except FlowControlLimitError as exc:  # as the official client: on the future
            future.set_exception(exc)
            return future
        policy = policy or self.policy
        settings = self.batch_settings
        ready: list[_Batch] = []
        with self._lock:
            if self._closed:
                self._flow.release(1, raw)
                raise RuntimeError("Cannot publish on a stopped publisher (it is closed).")
            batch = self._current
            if batch is not None and (
                len(batch.messages) >= settings.max_messages
                or batch.size + size > settings.max_bytes
                or batch.policy is not policy
            ):
                ready.append(batch)
                batch = None
            if batch is None:
                batch = self._current = _Batch(policy)
                self._open.add(batch)
                if settings.max_messages > 1:
                    flush = functools.partial(self._flush_if_current, batch)
                    self._scheduler.call_later(settings.max_latency, flush)
            batch.messages.append(message)
            batch.futures.append(future)
            batch.size += size
            batch.raw += raw
            full = len(batch.messages) >= settings.max_messages
            if full or batch.size >= settings.max_bytes:
                ready.append(batch)
                self._current = None
        for b in ready:
            self._commit(b)
        return future

    def flush(self) -> None:
        """Send the batch being filled now, without waiting for its latency."""
        with self._lock:
            batch, self._current = self._current, None
        if batch is not None:
            self._commit(batch)

    def stop(self) -> None:
        """Send what is queued and refuse new messages; does not wait (as the official
        client's `stop()`)."""
        with self._lock:
            self._closed = True
        self._flow.close()
        self.flush()

    def close(self, timeout: float | None = None) -> bool:
        """Stop, wait up to `timeout` s for every batch, then end the rest.

        Futures still pending then fail with `PublishNotSent` (no request carrying
        them was sent: safe to publish again) or `PublishOutcomeUnknown` (a request
        was sent: the service may have stored them). Called from a publish future's
        callback it does not wait (that thread completes batches) and returns
        whether everything had finished. True when every batch finished in time.
        """
        self.stop()
        if getattr(_resolving, "active", False):
            with self._lock:
                return not self._open
        with self._idle:
            finished = self._idle.wait_for(lambda: not self._open, timeout)
            stragglers = list(self._open)
        for batch in stragglers:
            if batch.run is not None:
                batch.run.abandon(closed_error)
            else:  # not committed: cannot happen after flush, but never leave it hanging
                self._resolve(batch, None, closed_error(False))
        if self._owns_scheduler:
            self._scheduler.stop()
        return finished

    def __enter__(self) -> HedgedPublisher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def counters(self) -> HedgingCounters:
        tokens = self._tokens.available if self._tokens else None
        probe = self._engine.probe
        lag = self._scheduler.lag.current()
        return self._stats.snapshot(tokens, lag, probe.sent if probe else 0)

    def pending(self) -> int:
        """Batches created and not finished."""
        with self._lock:
            return len(self._open)

    # -- batches ---------------------------------------------------------------

    def _flush_if_current(self, batch: _Batch) -> None:
        with self._lock:
            if self._current is not batch:
                return
            self._current = None
        self._commit(batch)

    def _commit(self, batch: _Batch) -> None:
        # Built as raw protobuf and wrapped without a copy, as the official client does.
        request = pubsub.PublishRequest.wrap(
            _RAW_REQUEST(topic=self.topic, messages=batch.messages)
        )
        run = BatchRun(self._engine, request, batch.policy, owner=batch)
        batch.run = run
        run.start()

    def _deliver(self, run: BatchRun, ids: list[str] | None, error: BaseException | None) -> None:
        batch: _Batch = run.owner
        if ids is not None and len(ids) != len(batch.futures):
            error = api_exceptions.InternalServerError(  # type: ignore[no-untyped-call]
                f"Publish returned {len(ids)} message IDs for {len(batch.futures)} messages"
            )
            ids = None
        self._resolve(batch, ids, error)

    def _resolve(self, batch: _Batch, ids: list[str] | None, error: BaseException | None) -> None:
        # Bookkeeping first, so a callback that calls close() sees this batch gone.
        with self._idle:
            self._open.discard(batch)
            idle = not self._open
            if idle:
                self._idle.notify_all()
        self._flow.release(len(batch.messages), batch.raw)
        outer = getattr(_resolving, "active", False)
        _resolving.active = True
        try:
            if ids is not None:
                for future, message_id in zip(batch.futures, ids, strict=True):
                    future.set_result(message_id)
            else:
                for future in batch.futures:
                    future.set_exception(error)
        finally:
            _resolving.active = outer
        if idle and self._closed and not outer:
            # close() may have been called from a callback: finish its job.
            if self._owns_scheduler:
                self._scheduler.stop()
            elif self._when_closed_idle is not None:
                self._when_closed_idle()
