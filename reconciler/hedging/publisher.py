"""A Pub/Sub publisher with publish hedging (DOMAIN.md section 2).

The Python client library has no hedging, so this publisher batches messages itself
and sends each batch through google-cloud-pubsub's own gRPC transport (the GAPIC
`Publish` stub, asynchronously with `.future()`), managing the attempts of a batch:

- an attempt still in flight after the hedge delay, with a token available, spends
  one token and sends another attempt for the same batch, keeping the earlier ones
  outstanding; again every hedge delay while tokens remain and time is left;
- the first success completes the batch's futures, cancels the other attempts (best
  effort) and refills the bucket by the refill ratio;
- a retryable failure is retried with exponential backoff while other attempts may
  still succeed; the batch fails only when no attempt can succeed any more, when
  the total timeout expires, or on a non-retryable error (the service's message).

With `profile=None` the same code path publishes without extra attempts, which is
the benchmark's baseline. All waiting is done by one scheduler thread; gRPC's own
callbacks complete the attempts.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, cast
from urllib.parse import quote

import grpc
from google.api_core import exceptions as api_exceptions
from google.pubsub_v1.types import pubsub

from reconciler.hedging import labels as hedging_labels
from reconciler.hedging.batching import MAX_REQUEST_BYTES, Backoff, BatchSettings
from reconciler.hedging.profile import (
    HedgingConfigError,
    HedgingProfile,
    RetryTimeouts,
    check,
)
from reconciler.hedging.scheduler import Scheduler, TimerHandle
from reconciler.hedging.tokens import TokenBucket

_log = logging.getLogger(__name__)

# The codes google-cloud-pubsub's default Publish retry treats as transient
# (CANCELLED is left out: here it only ever means we cancelled a losing attempt).
RETRYABLE_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)


class _Call(Protocol):
    """What we use of a grpc.Future returned by `UnaryUnaryMultiCallable.future`."""

    def add_done_callback(self, fn: Callable[[Any], None]) -> None: ...
    def cancel(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def exception(self, timeout: float | None = None) -> BaseException | None: ...
    def result(self, timeout: float | None = None) -> Any: ...


class _PublishRpc(Protocol):
    def future(
        self,
        request: Any,
        timeout: float | None = None,
        metadata: Any = None,
    ) -> _Call: ...


@dataclass(frozen=True)
class HedgingCounters:
    """A consistent snapshot of a publisher's counters.

    `attempts` counts every Publish RPC sent (originals, hedges and retries);
    `throttled_hedges` counts hedge delays that passed with no token to spend;
    `wins_by_attempt` maps the winning attempt's number within its batch (1 = the
    original) to how many batches it won; `duplicates` counts attempts that
    succeeded after their batch had already completed (the service then stored the
    batch twice, with different message IDs).
    """

    attempts: int = 0
    hedged_attempts: int = 0
    throttled_hedges: int = 0
    retried_attempts: int = 0
    wins_by_attempt: Mapping[int, int] = field(default_factory=dict)
    tokens_available: float | None = None
    cancelled_attempts: int = 0
    failed_attempts: int = 0
    duplicates: int = 0
    batches_succeeded: int = 0
    batches_failed: int = 0


class _Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts = 0
        self.hedged = 0
        self.throttled = 0
        self.retried = 0
        self.wins: dict[int, int] = {}
        self.cancelled = 0
        self.failed = 0
        self.duplicates = 0
        self.succeeded_batches = 0
        self.failed_batches = 0


class _Batch:
    """Messages sent together, and the state of their attempts."""

    def __init__(self) -> None:
        self.messages: list[pubsub.PubsubMessage] = []
        self.futures: list[Future[str]] = []
        self.size = 0
        self.lock = threading.Lock()
        self.request: pubsub.PublishRequest | None = None
        self.deadline = 0.0
        self.done = False
        self.sent = 0  # attempts sent; the next attempt's number is sent + 1
        self.inflight: dict[int, _Call] = {}
        self.last_send = 0.0
        self.failures = 0
        self.retry_pending = False
        self.last_error: BaseException | None = None
        self.hedge_timer: TimerHandle | None = None
        self.other_timers: list[TimerHandle] = []


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
    ) -> None:
        retry = retry or RetryTimeouts()
        if profile is not None:
            check(profile, retry, message_ordering)
        else:
            problems = retry.problems()
            if problems:
                raise HedgingConfigError(problems)
        if message_ordering:
            # Ordered publishing needs one batch in flight per key; that is the
            # standard client's job, and hedging is excluded with it anyway.
            raise ValueError(
                "HedgedPublisher does not publish with ordering keys; use "
                "google.cloud.pubsub_v1.PublisherClient with enable_message_ordering"
            )
        self.topic = topic
        self.profile = profile
        self.retry = retry
        self.batch_settings = _batch_settings(batch_settings)
        self.backoff = backoff or Backoff()
        self._rpc = _publish_rpc(client)
        # The routing header the GAPIC client adds to Publish.
        self._metadata = (("x-goog-request-params", "topic=" + quote(topic, safe="")),)
        self._hedge_delay = profile.hedge_delay_ms / 1000 if profile else None
        self._initial_timeout = retry.initial_rpc_timeout_ms / 1000
        self._total_timeout = retry.total_timeout_ms / 1000
        self._tokens = TokenBucket(profile.max_tokens, profile.refill_ppm) if profile else None
        self._stats = _Stats()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._current: _Batch | None = None
        self._open: set[_Batch] = set()  # created and not finished
        self._closed = False
        self._scheduler = Scheduler(name=f"hedging:{topic}")

    # -- construction from a spec or from the topic -------------------------------

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

    def publish(self, data: bytes, **attributes: str) -> Future[str]:
        """Queue one message; the future resolves to its message ID."""
        if not isinstance(data, bytes):
            raise TypeError("data must be bytes")
        message = pubsub.PubsubMessage(data=data, attributes=attributes)
        size = pubsub.PubsubMessage.pb(message).ByteSize() + 5  # repeated-field overhead
        if size > MAX_REQUEST_BYTES:
            raise ValueError(f"message of {size} bytes exceeds the {MAX_REQUEST_BYTES} limit")
        future: Future[str] = Future()
        future.set_running_or_notify_cancel()  # a publish cannot be taken back
        settings = self.batch_settings
        ready: list[_Batch] = []
        with self._lock:
            if self._closed:
                raise RuntimeError("publisher is closed")
            batch = self._current
            if batch is not None and (
                len(batch.messages) >= settings.max_messages
                or batch.size + size > settings.max_bytes
            ):
                ready.append(batch)
                batch = None
            if batch is None:
                batch = _Batch()
                self._current = batch
                self._open.add(batch)
                if settings.max_messages > 1:
                    self._scheduler.call_later(
                        settings.max_latency, functools.partial(self._flush_if_current, batch)
                    )
            batch.messages.append(message)
            batch.futures.append(future)
            batch.size += size
            if len(batch.messages) >= settings.max_messages or batch.size >= settings.max_bytes:
                ready.append(batch)
            if ready and ready[-1] is self._current:
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

    def close(self, timeout: float | None = None) -> bool:
        """Flush, wait for every batch to finish, stop the scheduler thread.

        Returns False if batches were still in flight after `timeout` seconds.
        """
        with self._lock:
            self._closed = True
        self.flush()
        with self._idle:
            finished = self._idle.wait_for(lambda: not self._open, timeout)
            stragglers = list(self._open)
        for batch in stragglers:
            with batch.lock:
                if batch.done:
                    continue
                losers = self._finish(batch)
            self._fail(batch, RuntimeError("publisher closed before the publish completed"), losers)
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
        s = self._stats
        with s.lock:
            return HedgingCounters(
                attempts=s.attempts,
                hedged_attempts=s.hedged,
                throttled_hedges=s.throttled,
                retried_attempts=s.retried,
                wins_by_attempt=dict(s.wins),
                tokens_available=self._tokens.available if self._tokens else None,
                cancelled_attempts=s.cancelled,
                failed_attempts=s.failed,
                duplicates=s.duplicates,
                batches_succeeded=s.succeeded_batches,
                batches_failed=s.failed_batches,
            )

    # -- a batch's attempts ------------------------------------------------------

    def _flush_if_current(self, batch: _Batch) -> None:
        with self._lock:
            if self._current is not batch:
                return
            self._current = None
        self._commit(batch)

    def _commit(self, batch: _Batch) -> None:
        batch.request = pubsub.PublishRequest(topic=self.topic, messages=batch.messages)
        now = time.monotonic()
        batch.deadline = now + self._total_timeout
        with batch.lock:
            batch.other_timers.append(
                self._scheduler.call_at(batch.deadline, lambda: self._on_deadline(batch))
            )
        self._send(batch, kind="original")

    def _send(self, batch: _Batch, kind: str) -> None:
        """Send one attempt (original or retry) unless the batch is over."""
        with batch.lock:
            started = self._start_attempt(batch)
        self._after_start(batch, kind, started)

    def _start_attempt(self, batch: _Batch) -> tuple[int, _Call] | BaseException | None:
        """Caller holds batch.lock. None when the batch is over or out of time."""
        now = time.monotonic()
        remaining = batch.deadline - now
        if batch.done or remaining <= 0:
            return None
        try:
            call = self._rpc.future(
                batch.request,
                timeout=min(self._initial_timeout, remaining),
                metadata=self._metadata,
            )
        except Exception as exc:  # e.g. the client's channel was closed
            return exc
        batch.sent += 1
        batch.inflight[batch.sent] = call
        batch.last_send = now
        if self._hedge_delay is not None:
            self._arm_hedge(batch, now + self._hedge_delay)
        return batch.sent, call

    def _after_start(
        self, batch: _Batch, kind: str, started: tuple[int, _Call] | BaseException | None
    ) -> None:
        """Count the attempt and watch it; outside batch.lock, because an already
        finished call runs its callback right here."""
        if started is None:
            return
        if isinstance(started, BaseException):
            with batch.lock:
                if batch.done:
                    return
                losers = self._finish(batch)
            self._fail(batch, started, losers)
            return
        number, call = started
        with self._stats.lock:
            self._stats.attempts += 1
            if kind == "hedge":
                self._stats.hedged += 1
            elif kind == "retry":
                self._stats.retried += 1
        call.add_done_callback(lambda c: self._on_attempt_done(batch, number, c))

    def _arm_hedge(self, batch: _Batch, when: float) -> None:
        """Caller holds batch.lock."""
        if batch.hedge_timer is not None:
            batch.hedge_timer.cancel()
        batch.hedge_timer = self._scheduler.call_at(when, lambda: self._on_hedge_tick(batch))

    def _on_hedge_tick(self, batch: _Batch) -> None:
        assert self._hedge_delay is not None and self._tokens is not None
        started: tuple[int, _Call] | BaseException | None = None
        with batch.lock:
            now = time.monotonic()
            if batch.done or now >= batch.deadline or not batch.inflight:
                # Nothing in flight means a retry is pending; it re-arms the timer.
                return
            if now - batch.last_send < self._hedge_delay:
                self._arm_hedge(batch, batch.last_send + self._hedge_delay)
                return
            # Token and attempt under one lock: no token is spent on a batch that
            # completed in between.
            throttled = not self._tokens.try_acquire()
            if throttled:
                # Out of tokens: look again later, a success elsewhere may refill.
                self._arm_hedge(batch, now + self._hedge_delay)
            else:
                started = self._start_attempt(batch)
        if throttled:
            with self._stats.lock:
                self._stats.throttled += 1
            return
        self._after_start(batch, "hedge", started)

    def _on_retry(self, batch: _Batch) -> None:
        with batch.lock:
            batch.retry_pending = False
            started = self._start_attempt(batch)
        self._after_start(batch, "retry", started)

    def _on_attempt_done(self, batch: _Batch, number: int, call: _Call) -> None:
        if call.cancelled():
            with batch.lock:
                batch.inflight.pop(number, None)
            return  # counted when cancelled
        error = call.exception()
        duplicate = fail_now = out_of_time = False
        losers: list[_Call] = []
        with batch.lock:
            batch.inflight.pop(number, None)
            if error is None:
                if batch.done:
                    duplicate = True
                else:
                    losers = self._finish(batch)
            else:
                if not batch.done:
                    code = _status_code(error)
                    batch.last_error = error
                    if code not in RETRYABLE_CODES:
                        fail_now = True
                    else:
                        batch.failures += 1
                        delay = self.backoff.delay(batch.failures)
                        if batch.retry_pending:
                            pass
                        elif time.monotonic() + delay < batch.deadline:
                            batch.retry_pending = True
                            batch.other_timers.append(
                                self._scheduler.call_later(delay, lambda: self._on_retry(batch))
                            )
                        elif not batch.inflight:
                            # No time for a retry, nothing else in flight: the total
                            # timeout is what ended the batch, whatever the last error.
                            fail_now = out_of_time = True
                    if fail_now:
                        losers = self._finish(batch)
        if error is None:
            if duplicate:
                with self._stats.lock:
                    self._stats.duplicates += 1
                return
            response = call.result()
            self._succeed(batch, number, list(response.message_ids), losers)
            return
        with self._stats.lock:
            self._stats.failed += 1
        if fail_now:
            failure = self._timeout_error(error) if out_of_time else _to_api_error(error)
            self._fail(batch, failure, losers)

    def _on_deadline(self, batch: _Batch) -> None:
        with batch.lock:
            if batch.done:
                return
            last = batch.last_error
            losers = self._finish(batch)
        self._fail(batch, self._timeout_error(last), losers)

    def _timeout_error(self, last: BaseException | None) -> Exception:
        """One error for a batch the total timeout ended, however the race between the
        deadline timer and the last attempt's own deadline went."""
        detail = f"; last error: {last}" if last is not None else ""
        return api_exceptions.DeadlineExceeded(  # type: ignore[no-untyped-call, no-any-return]
            f"publish did not complete within the total timeout of "
            f"{self.retry.total_timeout_ms} ms{detail}"
        )

    def _finish(self, batch: _Batch) -> list[_Call]:
        """Mark the batch over; caller holds batch.lock. Returns attempts to cancel."""
        batch.done = True
        losers = list(batch.inflight.values())
        batch.inflight.clear()
        for timer in [batch.hedge_timer, *batch.other_timers]:
            if timer is not None:
                timer.cancel()
        return losers

    def _cancel(self, losers: list[_Call]) -> None:
        cancelled = sum(1 for call in losers if call.cancel())
        if cancelled:
            with self._stats.lock:
                self._stats.cancelled += cancelled

    def _succeed(self, batch: _Batch, number: int, ids: list[str], losers: list[_Call]) -> None:
        self._cancel(losers)
        if self._tokens is not None:
            self._tokens.refill()
        with self._stats.lock:
            self._stats.wins[number] = self._stats.wins.get(number, 0) + 1
            self._stats.succeeded_batches += 1
        if len(ids) != len(batch.futures):
            error = api_exceptions.InternalServerError(  # type: ignore[no-untyped-call]
                f"Publish returned {len(ids)} message IDs for {len(batch.futures)} messages"
            )
            for future in batch.futures:
                future.set_exception(error)
        else:
            for future, message_id in zip(batch.futures, ids, strict=True):
                future.set_result(message_id)
        self._batch_over(batch)

    def _fail(self, batch: _Batch, error: BaseException, losers: list[_Call]) -> None:
        self._cancel(losers)
        with self._stats.lock:
            self._stats.failed_batches += 1
        for future in batch.futures:
            future.set_exception(error)
        self._batch_over(batch)

    def _batch_over(self, batch: _Batch) -> None:
        with self._idle:
            self._open.discard(batch)
            if not self._open:
                self._idle.notify_all()


def _publish_rpc(client: Any) -> _PublishRpc:
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


def _batch_settings(value: Any) -> BatchSettings:
    if value is None:
        return BatchSettings()
    if isinstance(value, BatchSettings):
        return value
    return BatchSettings(
        max_bytes=value.max_bytes, max_latency=value.max_latency, max_messages=value.max_messages
    )


def _status_code(error: BaseException) -> grpc.StatusCode | None:
    code = getattr(error, "code", None)
    result = code() if callable(code) else None
    return result if isinstance(result, grpc.StatusCode) else None


def _to_api_error(error: BaseException) -> BaseException:
    """google.api_core exceptions, as the standard publisher's futures carry."""
    if _status_code(error) is not None:
        converted = api_exceptions.from_grpc_error(error)  # type: ignore[no-untyped-call]
        return cast(BaseException, converted)
    return error
