"""The official client's `retry=` and `timeout=` arguments as a batch's `RetryPolicy`.

- `retry`: DEFAULT keeps the base policy; None means one attempt (no retries); a
  `google.api_core.retry.Retry` gives the backoff (initial, multiplier, maximum),
  the total timeout (its deadline) and which errors are retried (its predicate).
- `timeout`: DEFAULT keeps the base's growing attempt timeout; a number or a
  `ConstantTimeout` fixes every attempt's timeout; an `ExponentialTimeout` gives
  initial, multiplier and maximum.

`PublisherOptions()`'s own default timeout object (a constant 60 s) counts as DEFAULT,
so that an unconfigured client gets the Java Publisher's 5 s x4 up to 60 s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from google.api_core import gapic_v1
from google.cloud.pubsub_v1 import types

from reconciler.hedging.batching import Backoff, RetryPolicy

_UNSET = (gapic_v1.method.DEFAULT, types.PublisherOptions._field_defaults["timeout"])


def policy_from_options(
    retry: Any, timeout: Any, base: RetryPolicy | None = None
) -> RetryPolicy | None:
    """None when neither argument changes anything (and no base was given)."""
    retry_unset = retry is gapic_v1.method.DEFAULT
    timeout_unset = any(timeout is u for u in _UNSET)
    if retry_unset and timeout_unset:
        return base
    policy = base or RetryPolicy()
    if retry is None:
        policy = replace(policy, retries=False)
    elif not retry_unset:
        total = getattr(retry, "_timeout", None)
        policy = replace(
            policy,
            backoff=Backoff(
                initial=float(getattr(retry, "_initial", policy.backoff.initial)),
                multiplier=float(getattr(retry, "_multiplier", policy.backoff.multiplier)),
                maximum=float(getattr(retry, "_maximum", policy.backoff.maximum)),
            ),
            total_timeout=float(total) if total is not None else policy.total_timeout,
            retry_on=getattr(retry, "_predicate", None),
            retries=True,
        )
    if not timeout_unset and timeout is not None:
        policy = _with_timeout(policy, timeout)
    return policy


def _with_timeout(policy: RetryPolicy, timeout: Any) -> RetryPolicy:
    if isinstance(timeout, int | float):
        fixed = float(timeout)
        return replace(
            policy, initial_rpc_timeout=fixed, max_rpc_timeout=fixed, rpc_timeout_multiplier=1.0
        )
    if hasattr(timeout, "_initial"):  # ExponentialTimeout
        return replace(
            policy,
            initial_rpc_timeout=float(timeout._initial),
            max_rpc_timeout=float(timeout._maximum),
            rpc_timeout_multiplier=float(timeout._multiplier),
        )
    constant = getattr(timeout, "_timeout", None)
    if constant is not None:  # ConstantTimeout
        return _with_timeout(policy, float(constant))
    raise TypeError(f"timeout must be a number or a google.api_core timeout, not {timeout!r}")
