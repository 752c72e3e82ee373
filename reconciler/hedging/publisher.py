"""A Pub/Sub publisher for one topic with publish hedging (docs/hedging.md).

The Python client library has no hedging, so this publisher batches messages itself
and sends each batch through google-cloud-pubsub's own gRPC transport (the GAPIC
`Publish` stub, asynchronously with `.future()`); attempts.py runs each batch's
attempts. `reconciler.hedging.PublisherClient` (client.py) is the drop-in for the
official client, built on one of these per topic.

With `profile=None` the same code path publishes without extra attempts. How a
batch is sent (endpoint, hedging, retry policy) is the publisher's current `Route`,
which `reroute` replaces when a topic's labels say otherwise.
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
from reconciler.hedging.attempts import BatchRun, Engine, Hedging, Route
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


def _field_size(n: int) -> int:
    """Bytes a message of n bytes adds to a PublishRequest: tag, length, body."""
    return 1 + max(1, (n.bit_length() + 6) // 7) + n


class _Batch:
    """Messages gathered for one request, then its attempts."""

    __slots__ = ("futures", "messages", "policy", "raw", "run", "size")

    def __init__(self, policy: RetryPolicy | None, base_size: int) -> None:
        self.messages: list[Any] = []  # raw protobuf PubsubMessages
        self.futures: list[Future] = []
        self.size = base_size  # bytes in the request (the topic's field included)
        self.raw = 0  # bytes flow control counts (the messages' own)
        self.policy = policy  # a publish call's own retry/timeout; None: the route's
        self.run: BatchRun | None = None


class HedgedPublisher:
    """Publishes to one topic, hedging per `profile` (None = hedging off).

    `client` is a `google.cloud.pubsub_v1.PublisherClient` or a GAPIC
    `google.pubsub_v1.PublisherClient` with a gRPC transport; the publisher uses its
    channel and never closes it. Construction runs the same checks as spec
    validation and raises `HedgingConfigError` with every broken rule.

    `deferred=True` holds batches until the first `reroute` (PublisherClient sets the
    route once the topic's labels are read, or after a short wait without them).
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
        deferred: bool = False,
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
        self.retry = retry  # the timeouts it was built with (labels, spec)
        self.batch_settings = coerce_batch_settings(batch_settings)
        self._owns_scheduler = scheduler is None
        self._when_closed_idle = when_closed_idle
        self._scheduler = scheduler or Scheduler(name=f"hedging:{topic}")
        self._flow = flow or FlowGate()
        self._stats = Stats()
        # The routing header the GAPIC client adds to Publish.
        self._metadata = (("x-goog-request-params", "topic=" + quote(topic, safe="")),)
        self._engine = Engine(self._metadata, self._scheduler, self._stats, self._deliver)
        self._base_size = _RAW_REQUEST(topic=topic).ByteSize()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._current: _Batch | None = None
        self._open: set[_Batch] = set()  # created and not finished
        self._held: list[_Batch] | None = None
        self._closed = False
        self.profile: HedgingProfile | None = None
        self._route: Route | None = None
        self.reroute(
            client,
            profile,
            policy
            or RetryPolicy(
                initial_rpc_timeout=retry.initial_rpc_timeout_ms / 1000,
                total_timeout=retry.total_timeout_ms / 1000,
                backoff=backoff or Backoff(),
            ),
        )
        if deferred:
            self._held = []  # batches wait for the next reroute

    @property
    def policy(self) -> RetryPolicy:
        """The retry policy batches use unless a publish call gives its own."""
        assert self._route is not None
        return self._route.policy

    def reroute(
        self,
        client: Any,
        profile: HedgingProfile | None,
        policy: RetryPolicy,
        *,
        fallback: bool = False,
        error: BaseException | None = None,
    ) -> None:
        """Send the batches committed from now on (and those held) through `client`,
        with `profile` (None: unhedged) and `policy`; `error`: fail them with it. The
        token bucket carries over while the profile stays the same; a new profile
        starts a new, empty bucket, as a new official publisher would."""
        rpc = publish_rpc(client)
        hedging = None
        if profile is not None and error is None:
            current = self._route.hedging if self._route is not None else None
            if current is not None and profile == self.profile:
                tokens = current.tokens
            else:
                tokens = TokenBucket(profile.max_tokens, profile.refill_ratio)
            delay = profile.hedge_delay_ms / 1000
            # A request with no message and a deadline already past: nothing could
            # be stored, and it never leaves the client (lag.py).
            probe = LagProbe(
                rpc,
                pubsub.PublishRequest(topic=self.topic),
                self._metadata,
                self._scheduler.lag,
                self._scheduler.call_soon,
                fresh_for=delay / 10,
                on_send=lambda: self._stats.add(lag_probes=1),
            )
            hedging = Hedging(delay, tokens, probe)
        route = Route(rpc, policy, hedging, fallback, error)
        with self._lock:
            self._route = route
            self.profile = profile
            held, self._held = self._held, None
        for batch in held or ():
            self._commit(batch)

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
        message), with this batch's retry `policy` (default: the route's)."""
        raw = message.ByteSize()
        size = _field_size(raw)  # what it adds to the request
        if self._base_size + size > MAX_REQUEST_BYTES:
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
        settings = self.batch_settings
        ready: list[_Batch] = []
        with self._lock:
            if self._closed:
                self._flow.release(1, raw)
                raise RuntimeError("Cannot publish on a stopped publisher (it is closed).")
            # The official client's rule, so that both send the same requests: a
            # message that would bring the batch to max_messages, or over max_bytes,
            # goes to a new batch and the current one is sent (batches of up to
            # max_messages - 1 messages; of one with max_messages=1).
            batch = self._current
            limit = settings.byte_limit
            if batch is not None and (
                batch.policy is not policy
                or batch.size + size > limit
                or len(batch.messages) + 1 >= settings.max_messages
            ):
                ready.append(batch)
                batch = None
            if batch is None:
                batch = self._current = _Batch(policy, self._base_size)
                self._open.add(batch)
                wait = settings.flush_after
                if settings.max_messages > 1 and wait is not None:
                    flush = functools.partial(self._flush_if_current, batch)
                    self._scheduler.call_later(wait, flush)
            batch.messages.append(message)
            batch.futures.append(future)
            batch.size += size
            batch.raw += raw
            if len(batch.messages) >= settings.max_messages or batch.size > limit:
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
            if self._held is not None:
                self._held = []  # they are among the stragglers: never sent
        for batch in stragglers:
            if batch.run is not None:
                batch.run.abandon(closed_error)
            else:  # held for its route (or not committed): nothing was sent
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
        assert self._route is not None
        hedging = self._route.hedging
        tokens = hedging.tokens.available if hedging is not None else None
        return self._stats.snapshot(tokens, self._scheduler.lag.current())

    def count(self, **deltas: int) -> None:
        """Add to this topic's counters (PublisherClient's label lookups)."""
        self._stats.add(**deltas)

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
        with self._lock:
            if self._held is not None:
                self._held.append(batch)  # the route is not known yet
                return
            route = self._route
        assert route is not None
        if route.error is not None:
            self._stats.add(batches_failed=1)
            self._resolve(batch, None, route.error)
            return
        if route.fallback:
            self._stats.add(unhedged_fallback_batches=1)
        # Built as raw protobuf and wrapped without a copy, as the official client does.
        request = pubsub.PublishRequest.wrap(
            _RAW_REQUEST(topic=self.topic, messages=batch.messages)
        )
        run = BatchRun(self._engine, route, request, batch.policy, owner=batch)
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
