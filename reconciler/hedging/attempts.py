"""One batch's attempts: hedging as the official clients do it (docs/hedging.md).

- attempt 0 is sent with the publisher's retry settings and keeps them: a
  retryable failure is retried after the backoff, its timeout grown by the
  multiplier, whatever the hedges are doing; when it fails for good (a
  non-retryable error, no time left) the batch fails with *its* error;
- a hedge delay after attempt 0 was sent, the hedge check runs: with a token it
  spends one and sends attempt N, and checks again a hedge delay later; without a
  token the hedge is dropped and the batch gets no more hedges. Hedged attempts are
  never retried, each runs with a timeout of min(time left, 10 s), and a failed
  one is discarded;
- every attempt of a hedged batch carries the telemetry header the other clients
  send (telemetry.py): its number and the batch's start;
- the first success completes the batch, cancels the other attempts (best effort:
  each may still be stored, counted in `duplicates`) and refills the bucket.

Ours only: a hedge check first lets the client notice what has already arrived (a
local probe, answered behind every response that came before it, see lag.py), and
waits while the client runs a hedge delay late (`lag_paused_hedges`), so a
saturated client does not hedge its own slowness. With a client that keeps up, the
checks fire as above (the probe takes well under a millisecond).

`Engine` is what every batch of one publisher shares; `Route` how a batch is sent
(endpoint, hedging, retry policy); `BatchRun` is one batch. gRPC's callbacks and the
scheduler thread drive it; the publisher's `deliver` hears each batch's end once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.api_core import exceptions as api_exceptions

from reconciler.hedging.batching import RetryPolicy
from reconciler.hedging.lag import LagProbe
from reconciler.hedging.scheduler import Scheduler, TimerHandle
from reconciler.hedging.stats import Stats
from reconciler.hedging.telemetry import BatchTelemetry
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

HEDGE_TIMEOUT_CAP = 10.0  # seconds: a hedged attempt's longest timeout (all four clients)
PRIMARY = 0  # attempt 0, the original request


def hedge_timeout(remaining: float) -> float:
    """A hedged attempt's timeout: the time left to the batch's total deadline, at
    most 10 s."""
    return min(remaining, HEDGE_TIMEOUT_CAP)


Deliver = Callable[["BatchRun", "list[str] | None", "BaseException | None"], None]


@dataclass(frozen=True)
class Hedging:
    """A route's hedging: the delay (s), the bucket its batches share, the lag probe."""

    delay: float
    tokens: TokenBucket
    probe: LagProbe | None = None


@dataclass(frozen=True)
class Route:
    """How a topic's batches are sent now: the Publish stub of its endpoint, its
    hedging (None: off) and retry policy. `fallback`: the topic's profile could not
    be read, so it publishes unhedged for now; `error`: every batch fails with it
    before anything is sent (a label naming no region)."""

    rpc: PublishRpc
    policy: RetryPolicy
    hedging: Hedging | None = None
    fallback: bool = False
    error: BaseException | None = None


class Engine:
    """Shared by a publisher's batches: timers, counters, the end of each batch."""

    def __init__(self, metadata: Any, scheduler: Scheduler, stats: Stats, deliver: Deliver) -> None:
        self.metadata = metadata
        self.scheduler = scheduler
        self.stats = stats
        self.deliver = deliver


class BatchRun:
    """The attempts of one batch (one PublishRequest)."""

    def __init__(
        self,
        engine: Engine,
        route: Route,
        request: Any,
        policy: RetryPolicy | None = None,
        owner: Any = None,
    ) -> None:
        self.engine = engine
        self.route = route
        self.owner = owner  # the publisher's record of the batch
        self.request = request
        self.policy = policy or route.policy
        self.lock = threading.Lock()
        self.deadline = 0.0
        self.done = False
        self.sent = 0  # RPCs handed to gRPC
        self.inflight: dict[int, Call] = {}  # attempt number -> its call in flight
        self.next_hedge = 1
        self.last_send = 0.0  # when attempt 0 or the latest hedge was sent
        self.failures = 0  # attempt 0's failed tries
        self.last_error: BaseException | None = None  # attempt 0's latest error
        self.hedge_timer: TimerHandle | None = None
        self.hedge_due = 0.0  # when the armed hedge check is due
        self.timers: list[TimerHandle] = []
        self.telemetry: BatchTelemetry | None = None  # hedged batches only

    # -- attempt 0 ------------------------------------------------------------------

    def start(self) -> None:
        self.deadline = time.monotonic() + self.policy.total_timeout
        if self.route.hedging is not None:
            self.telemetry = BatchTelemetry(time.time_ns())
        with self.lock:
            self.timers.append(self.engine.scheduler.call_at(self.deadline, self._on_deadline))
        self._try_primary()

    def _try_primary(self) -> None:
        retry = self.failures > 0
        with self.lock:
            remaining = self.deadline - time.monotonic()
            if self.done or remaining <= 0:
                return
            timeout = min(self.policy.rpc_timeout(self.failures), remaining)
            call, error = self._call(PRIMARY, timeout)
            if call is not None and not retry:
                self.last_send = time.monotonic()
                hedging = self.route.hedging
                if hedging is not None:
                    self._arm_hedge(self.last_send + hedging.delay)
        if call is None:  # e.g. the client's channel was closed
            assert error is not None
            self._fail(error)
            return
        self.engine.stats.add(attempts=1, retried_attempts=int(retry))
        # Outside self.lock: an already finished call runs its callback right here.
        call.add_done_callback(self._on_primary_done)

    def _call(self, number: int, timeout: float) -> tuple[Call | None, Exception | None]:
        """Caller holds self.lock. (The call, None), or (None, why it could not start):
        a gRPC call is itself an exception object, so the two travel apart."""
        metadata = self.engine.metadata
        if self.telemetry is not None:
            metadata = (*metadata, self.telemetry.header(number))
        try:
            call = self.route.rpc.future(self.request, timeout=timeout, metadata=metadata)
        except Exception as exc:
            return None, exc
        self.sent += 1
        self.inflight[number] = call
        return call, None

    def _on_primary_done(self, call: Call) -> None:
        if call.cancelled():
            return  # ours: counted when cancelled
        error = call.exception()
        if error is None:
            self._win(PRIMARY, call)
            return
        self.engine.stats.add(failed_attempts=1)
        with self.lock:
            if self.inflight.get(PRIMARY) is call:
                del self.inflight[PRIMARY]
            if self.done:
                return
            self.last_error = error
            final = self._after_primary_failure(error)
        if final is not None:
            self._fail(final)

    def _after_primary_failure(self, error: BaseException) -> BaseException | None:
        """Caller holds self.lock. The error that ends the batch, or None when a retry
        of attempt 0 is scheduled (hedges in flight or not)."""
        if not self.policy.retries or not self._retryable(error):
            return to_api_error(error)
        self.failures += 1
        delay = self.policy.backoff.delay(self.failures)
        if time.monotonic() + delay >= self.deadline:
            # No time for a retry: the total timeout is what ends the batch.
            return self.timeout_error(error)
        self.timers.append(self.engine.scheduler.call_later(delay, self._try_primary))
        return None

    def _retryable(self, error: BaseException) -> bool:
        predicate = self.policy.retry_on
        if callable(predicate):
            return bool(predicate(to_api_error(error)))
        return status_code(error) in RETRYABLE_CODES

    # -- hedges ---------------------------------------------------------------------

    def _arm_hedge(self, when: float, again: bool = False) -> None:
        """Caller holds self.lock. `again`: a paused check looks again at `when`; its
        lateness still counts from when it was first due."""
        if self.hedge_timer is not None:
            self.hedge_timer.cancel()
        if not again:
            self.hedge_due = when
        self.hedge_timer = self.engine.scheduler.call_at(when, self._on_hedge_check)

    def _on_hedge_check(self) -> None:
        hedging = self.route.hedging
        assert hedging is not None
        delay, probe = hedging.delay, hedging.probe
        outcome = ""
        number, call, late = 0, None, 0.0
        with self.lock:
            now = time.monotonic()
            if self.done or now >= self.deadline:
                return
            lag = self.engine.scheduler.lag.current(now)
            if probe is not None:
                lag = max(lag, probe.age(now))
            if lag >= delay:
                # The client itself runs a hedge delay behind: a hedge now would
                # measure our lag, not the service. Look again later.
                self._arm_hedge(now + delay, again=True)
                outcome = "paused"
            elif probe is not None and not probe.fresh(now):
                # Decide once a probe sent now has been answered: it completes behind
                # every response that reached the client before it, so a response
                # already there but not yet noticed has been noticed by then.
                outcome = "probe"
            elif not hedging.tokens.try_acquire():
                # Token and attempt under one lock: no token is spent on a batch
                # that completed in between. No token: dropped, never requeued.
                outcome = "dropped"
            else:
                number = self.next_hedge
                self.next_hedge += 1
                call, _ = self._call(number, hedge_timeout(self.deadline - now))
                outcome = "sent" if call is not None else "unsent"
                self.last_send = time.monotonic()
                late = self.last_send - self.hedge_due
                self._arm_hedge(self.last_send + delay)
        if outcome == "probe":
            assert probe is not None
            probe.then(self._on_hedge_check)
        elif outcome == "paused":
            self.engine.stats.add(lag_paused_hedges=1)
        elif outcome == "dropped":
            self.engine.stats.add(hedges_dropped=1)
        elif outcome == "unsent":  # the channel is closed: as a failed hedge
            self.engine.stats.add(hedges_sent=1, hedges_failed=1)
        elif call is not None:
            self.engine.stats.hedge_sent(late)
            call.add_done_callback(lambda c: self._on_hedge_done(number, c))

    def _on_hedge_done(self, number: int, call: Call) -> None:
        if call.cancelled():
            return
        if call.exception() is None:
            self._win(number, call)
            return
        # A failed hedge is discarded: never retried, and the batch goes on.
        self.engine.stats.add(failed_attempts=1, hedges_failed=1)
        with self.lock:
            self.inflight.pop(number, None)

    # -- the end --------------------------------------------------------------------

    def _win(self, number: int, call: Call) -> None:
        with self.lock:
            if self.done:
                late = True
            else:
                late = False
                self.inflight.pop(number, None)
                losers = self._finish()
        if late:
            self.engine.stats.add(duplicates_confirmed=1)
            return
        ids = list(call.result().message_ids)
        self.engine.stats.win(number)
        hedging = self.route.hedging
        if hedging is not None:
            hedging.tokens.refill()
        self._end(ids, None, losers)

    def _fail(self, error: BaseException) -> None:
        with self.lock:
            if self.done:
                return
            losers = self._finish()
        self._end(None, error, losers)

    def _on_deadline(self) -> None:
        with self.lock:
            if self.done:
                return
            last = self.last_error
            losers = self._finish()
        self._end(None, self.timeout_error(last), losers)

    def timeout_error(self, last: BaseException | None) -> Exception:
        """One error for a batch the total timeout ended, however the race between the
        deadline timer and attempt 0's own deadline went."""
        detail = f"; last error: {last}" if last is not None else ""
        ms = round(self.policy.total_timeout * 1000)
        return api_exceptions.DeadlineExceeded(  # type: ignore[no-untyped-call, no-any-return]
            f"publish did not complete within the total timeout of {ms} ms{detail}"
        )

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
        self.timers.clear()
        self.hedge_timer = None
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
        failed = int(ids is None)
        self.engine.stats.add(cancelled_attempts=cancelled, duplicates=dupes, batches_failed=failed)
        self.engine.deliver(self, ids, error)
