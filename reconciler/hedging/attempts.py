"""One batch's attempts: the hedging and retry state machine (docs/hedging.md).

- an attempt still in flight after the hedge delay *on the wire* (its age less the
  client's own lag, see lag.py), with a token available, spends one token and sends
  another attempt for the same batch, keeping the earlier ones; again every hedge
  delay while tokens remain and time is left. While the client's lag exceeds the
  hedge delay, hedging pauses (`lag_paused_hedges`);
- the first success completes the batch, cancels the other attempts (best effort:
  each may still be stored, counted in `duplicates`) and refills the bucket;
- a retryable failure (CANCELLED from the service included) while other attempts
  run waits for them, as Java does; when none is left, a retry follows after the
  backoff, its attempt timeout grown by the multiplier. A non-retryable error, or
  no time left, fails the batch.

`Engine` is what every batch of one publisher shares; `BatchRun` is one batch.
gRPC's callbacks and the scheduler thread drive it; the publisher's `deliver` hears
each batch's end exactly once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
from google.api_core import exceptions as api_exceptions

from reconciler.hedging.batching import RetryPolicy
from reconciler.hedging.lag import LagProbe
from reconciler.hedging.scheduler import Scheduler, TimerHandle
from reconciler.hedging.stats import Stats
from reconciler.hedging.tokens import TokenBucket
from reconciler.hedging.transport import Call, PublishRpc, status_code, to_api_error

# google-cloud-pubsub 2.44's and the Java Publisher's retryable codes. CANCELLED
# counts when the *service* sends it; attempts we cancel ourselves never reach here.
RETRYABLE_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.CANCELLED,
    }
)


Deliver = Callable[["BatchRun", "list[str] | None", "BaseException | None"], None]


class Engine:
    """Shared by a publisher's batches: transport, timers, tokens, counters."""

    def __init__(
        self,
        rpc: PublishRpc,
        metadata: Any,
        scheduler: Scheduler,
        hedge_delay: float | None,
        tokens: TokenBucket | None,
        stats: Stats,
        deliver: Deliver,
        probe: LagProbe | None = None,
    ) -> None:
        self.rpc = rpc
        self.probe = probe
        self.metadata = metadata
        self.scheduler = scheduler
        self.hedge_delay = hedge_delay
        self.tokens = tokens
        self.stats = stats
        self.deliver = deliver

    def count(self, **deltas: int) -> None:
        with self.stats.lock:
            for name, delta in deltas.items():
                setattr(self.stats, name, getattr(self.stats, name) + delta)


class BatchRun:
    """The attempts of one batch (one PublishRequest)."""

    def __init__(
        self, engine: Engine, request: Any, policy: RetryPolicy, owner: Any = None
    ) -> None:
        self.engine = engine
        self.owner = owner  # the publisher's record of the batch
        self.request = request
        self.policy = policy
        self.lock = threading.Lock()
        self.deadline = 0.0
        self.done = False
        self.sent = 0  # attempts handed to gRPC; the next attempt's number is sent + 1
        self.inflight: dict[int, Call] = {}
        self.last_send = 0.0
        self.failures = 0
        self.last_error: BaseException | None = None
        self.hedge_timer: TimerHandle | None = None
        self.timers: list[TimerHandle] = []

    # -- starting attempts --------------------------------------------------------

    def start(self) -> None:
        self.deadline = time.monotonic() + self.policy.total_timeout
        with self.lock:
            self.timers.append(self.engine.scheduler.call_at(self.deadline, self._on_deadline))
        self._send("original")

    def _send(self, kind: str) -> None:
        with self.lock:
            started = self._start_attempt()
        self._after_start(kind, started)

    def _start_attempt(self) -> tuple[int, Call] | BaseException | None:
        """Caller holds self.lock. None when the batch is over or out of time."""
        remaining = self.deadline - time.monotonic()
        if self.done or remaining <= 0:
            return None
        timeout = min(self.policy.rpc_timeout(self.failures), remaining)
        try:
            call = self.engine.rpc.future(
                self.request, timeout=timeout, metadata=self.engine.metadata
            )
        except Exception as exc:  # e.g. the client's channel was closed
            return exc
        self.sent += 1
        self.inflight[self.sent] = call
        # After the call is handed over: serialising a big batch under CPU load is
        # the client's time, not the wire's.
        self.last_send = time.monotonic()
        if self.engine.hedge_delay is not None:
            self._arm_hedge(self.last_send + self.engine.hedge_delay)
        return self.sent, call

    def _after_start(self, kind: str, started: tuple[int, Call] | BaseException | None) -> None:
        """Count the attempt and watch it; outside self.lock, because an already
        finished call runs its callback right here."""
        if started is None:
            return
        if isinstance(started, BaseException):
            with self.lock:
                if self.done:
                    return
                losers = self._finish()
            self._end(None, started, losers)
            return
        number, call = started
        kinds = {"hedge": "hedged", "retry": "retried"}
        self.engine.count(attempts=1, **({kinds[kind]: 1} if kind in kinds else {}))
        call.add_done_callback(lambda c: self._on_attempt_done(number, c))

    # -- hedging ----------------------------------------------------------------

    def _arm_hedge(self, when: float) -> None:
        """Caller holds self.lock."""
        if self.hedge_timer is not None:
            self.hedge_timer.cancel()
        self.hedge_timer = self.engine.scheduler.call_at(when, self._on_hedge_tick)

    def _on_hedge_tick(self) -> None:
        engine = self.engine
        delay = engine.hedge_delay
        assert delay is not None and engine.tokens is not None
        started: tuple[int, Call] | BaseException | None = None
        outcome = ""
        with self.lock:
            now = time.monotonic()
            if self.done or now >= self.deadline or not self.inflight:
                return  # nothing in flight: a retry is pending and re-arms the timer
            probe = engine.probe
            lag = engine.scheduler.lag.current(now)
            if probe is not None:
                lag = max(lag, probe.age(now))
            on_wire = now - self.last_send - lag
            if lag >= delay:
                # The client itself is running a hedge delay behind: whatever the
                # service does, a hedge now would measure our lag. Look again later.
                self._arm_hedge(now + delay)
                outcome = "paused"
            elif on_wire < delay:
                # Give a response the client may not have noticed yet its lag.
                self._arm_hedge(now + (delay - on_wire))
                return
            elif probe is not None and not probe.fresh(now):
                outcome = "probe"  # decide once the client's lag has been measured
            elif not engine.tokens.try_acquire():
                # Token and attempt under one lock: no token is spent on a batch
                # that completed in between. Out of tokens: a success may refill.
                self._arm_hedge(now + delay)
                outcome = "throttled"
            else:
                started = self._start_attempt()
        if outcome == "probe":
            assert probe is not None
            probe.then(self._on_hedge_tick)
        elif outcome == "paused":
            engine.count(lag_paused=1)
        elif outcome == "throttled":
            engine.count(throttled=1)
        else:
            self._after_start("hedge", started)

    # -- answers --------------------------------------------------------------

    def _on_retry(self) -> None:
        self._send("retry")

    def _on_attempt_done(self, number: int, call: Call) -> None:
        if call.cancelled():
            with self.lock:
                self.inflight.pop(number, None)
            return  # ours: counted when cancelled
        error = call.exception()
        losers: list[Call] = []
        failure: BaseException | None = None
        ended = late = False
        with self.lock:
            self.inflight.pop(number, None)
            if error is None:
                late = self.done
                if not self.done:
                    losers = self._finish()
                    ended = True
            elif not self.done:
                self.last_error = error
                failure = self._after_failure(error)
                if failure is not None:
                    losers = self._finish()
                    ended = True
        if error is None:
            if late:
                self.engine.count(duplicates_confirmed=1)
            elif ended:
                ids = list(call.result().message_ids)
                with self.engine.stats.lock:
                    wins = self.engine.stats.wins
                    wins[number] = wins.get(number, 0) + 1
                if self.engine.tokens is not None:
                    self.engine.tokens.refill()
                self._end(ids, None, losers)
            return
        self.engine.count(failed=1)
        if ended:
            self._end(None, failure, losers)

    def _after_failure(self, error: BaseException) -> BaseException | None:
        """Caller holds self.lock. The error that ends the batch, or None to go on."""
        if not self._retryable(error):
            return to_api_error(error)
        if self.inflight:
            return None  # as Java: wait for the attempts still running
        if not self.policy.retries:
            return to_api_error(error)
        self.failures += 1
        delay = self.policy.backoff.delay(self.failures)
        if time.monotonic() + delay >= self.deadline:
            # No time for a retry and nothing in flight: the total timeout is what
            # ended the batch, whatever the last error.
            return self.timeout_error(error)
        if self.hedge_timer is not None:
            self.hedge_timer.cancel()
        self.timers.append(self.engine.scheduler.call_later(delay, self._on_retry))
        return None

    def _retryable(self, error: BaseException) -> bool:
        predicate = self.policy.retry_on
        if callable(predicate):
            return bool(predicate(to_api_error(error)))
        return status_code(error) in RETRYABLE_CODES

    def _on_deadline(self) -> None:
        with self.lock:
            if self.done:
                return
            last = self.last_error
            losers = self._finish()
        self._end(None, self.timeout_error(last), losers)

    def timeout_error(self, last: BaseException | None) -> Exception:
        """One error for a batch the total timeout ended, however the race between the
        deadline timer and the last attempt's own deadline went."""
        detail = f"; last error: {last}" if last is not None else ""
        ms = round(self.policy.total_timeout * 1000)
        return api_exceptions.DeadlineExceeded(  # type: ignore[no-untyped-call, no-any-return]
            f"publish did not complete within the total timeout of {ms} ms{detail}"
        )

    # -- the end ----------------------------------------------------------------

    def abandon(self, make_error: Callable[[bool], BaseException]) -> bool:
        """End the batch now (the publisher is closing): `make_error(sent)` builds the
        error, `sent` telling whether any attempt left the client. False if it had
        already ended."""
        with self.lock:
            if self.done:
                return False
            sent = self.sent > 0
            losers = self._finish()
        self._end(None, make_error(sent), losers, abandoned=True)
        return True

    def _finish(self) -> list[Call]:
        """Mark the batch over; caller holds self.lock. Returns attempts to cancel."""
        self.done = True
        losers = list(self.inflight.values())
        self.inflight.clear()
        for timer in [self.hedge_timer, *self.timers]:
            if timer is not None:
                timer.cancel()
        return losers

    def _end(
        self,
        ids: list[str] | None,
        error: BaseException | None,
        losers: list[Call],
        abandoned: bool = False,
    ) -> None:
        cancelled = sum(1 for call in losers if call.cancel())
        # Every loser was sent and may have reached the service, whether or not
        # cancel() got there first: after a success it may be a second copy; after
        # a failure the message may be stored although its future failed. An
        # abandoned batch (close) says so in its own exception instead.
        dupes = 0 if abandoned else len(losers)
        if ids is not None:
            self.engine.count(cancelled=cancelled, duplicates=dupes, succeeded_batches=1)
        else:
            self.engine.count(cancelled=cancelled, duplicates=dupes, failed_batches=1)
        self.engine.deliver(self, ids, error)
