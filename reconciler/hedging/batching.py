"""Batch and retry settings, shaped like google-cloud-pubsub's own.

`BatchSettings` has the field names of `google.cloud.pubsub_v1.types.BatchSettings`
(and the same defaults) so either can be passed; `max_messages=1` gives batches of
one, which the benchmark uses. It takes every value the official client takes (which
checks none) and means by it what the official client does (its
publisher/_batch/thread.py and publisher/client.py, google-cloud-pubsub 2.x):

    max_bytes     capped to the 10 MB request limit at publish time; 0 or less: each
                  message is a batch of its own
    max_messages  1 or less: each message is a batch of its own
    max_latency   +inf or NaN: no timer, a batch goes when full, flushed or stopped

One difference, deliberate: a negative max_latency sends a batch at once (the
official client's timer thread dies on it, `time.sleep` refusing a negative length,
and its batches then wait until full or stopped).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

# Publish's default retry delay in google-cloud-pubsub (transports/base.py) and the
# Java Publisher: 0.1 s initial backoff, multiplied by 4 per failure, at most 60 s.
DEFAULT_BACKOFF_INITIAL = 0.1
DEFAULT_BACKOFF_MULTIPLIER = 4.0
DEFAULT_BACKOFF_MAXIMUM = 60.0
# The Java Publisher's per-attempt timeout: initialRpcTimeout, x4 per retry, at most 60 s.
DEFAULT_RPC_TIMEOUT_MULTIPLIER = 4.0
DEFAULT_MAX_RPC_TIMEOUT = 60.0

# The service rejects a Publish request above 10 MB.
MAX_REQUEST_BYTES = 10_000_000


@dataclass(frozen=True)
class BatchSettings:
    """Any values, as the official client's (see the module docstring)."""

    max_bytes: int = 1_000_000
    max_latency: float = 0.01  # seconds
    max_messages: int = 100

    @property
    def byte_limit(self) -> float:
        """What a batch may hold, in request bytes: max_bytes within the request limit."""
        return min(self.max_bytes, MAX_REQUEST_BYTES)

    @property
    def flush_after(self) -> float | None:
        """Seconds a batch waits for more messages; None: no timer (+inf, NaN)."""
        latency = float(self.max_latency)
        if not latency < math.inf:
            return None
        return max(0.0, latency)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter, as google-api-core's Retry does."""

    initial: float = DEFAULT_BACKOFF_INITIAL
    multiplier: float = DEFAULT_BACKOFF_MULTIPLIER
    maximum: float = DEFAULT_BACKOFF_MAXIMUM
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < 0 or self.multiplier < 1:
            raise ValueError("backoff needs initial, maximum >= 0 and multiplier >= 1")

    def delay(self, failures: int) -> float:
        """Wait before the retry that follows the `failures`-th failure (1-based)."""
        ceiling = min(self.maximum, self.initial * self.multiplier ** max(0, failures - 1))
        return random.uniform(0.0, ceiling) if self.jitter else ceiling


@dataclass(frozen=True)
class RetryPolicy:
    """One batch's retry behaviour, as the Java Publisher's RetrySettings.

    The n-th retry's attempt timeout is initial_rpc_timeout x multiplier**n, capped at
    max_rpc_timeout and at the time left of total_timeout; hedges use the timeout of
    the retry they run alongside. `retry_on` decides which errors are retried (None:
    the codes in attempts.RETRYABLE_CODES).
    """

    initial_rpc_timeout: float = 5.0
    rpc_timeout_multiplier: float = DEFAULT_RPC_TIMEOUT_MULTIPLIER
    max_rpc_timeout: float = DEFAULT_MAX_RPC_TIMEOUT
    total_timeout: float = 600.0
    backoff: Backoff = Backoff()
    retry_on: object | None = None  # a predicate over google.api_core exceptions
    retries: bool = True  # False: the official client's retry=None (one attempt)

    def rpc_timeout(self, failures: int) -> float:
        grown = self.initial_rpc_timeout * self.rpc_timeout_multiplier**failures
        return min(max(self.max_rpc_timeout, self.initial_rpc_timeout), grown)


def coerce_batch_settings(value: Any) -> BatchSettings:
    """Ours, or the official `types.BatchSettings` (same fields), or () for defaults."""
    if value is None or value == ():
        return BatchSettings()
    if isinstance(value, BatchSettings):
        return value
    return BatchSettings(
        max_bytes=value.max_bytes, max_latency=value.max_latency, max_messages=value.max_messages
    )
