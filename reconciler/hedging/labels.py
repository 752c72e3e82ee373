"""The hedging profile as topic labels, so publishers can read what the spec decided.

Encoding (documented in the README): every key starts with the reserved prefix
`reconcile-`; numbers are decimal integers in milliseconds or parts per million, so
that values fit Google's label rules (lowercase, digits, `-`, `_`) and round-trip
exactly.

    reconcile-hedge-profile     profile name, or "inline"
    reconcile-hedge-delay-ms    hedge delay in milliseconds
    reconcile-hedge-max-tokens  max tokens
    reconcile-hedge-refill-ppm  refill ratio in parts per million (0.05 -> 50000)
    reconcile-retry-initial-ms  publishers' initial RPC timeout in milliseconds
    reconcile-retry-total-ms    publishers' total timeout in milliseconds
    reconcile-publish-endpoint  region of the locational endpoint publishers use
                                (publishers.endpoint; written only when declared)
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.hedging.profile import HedgingProfile, RetryTimeouts
from reconciler.ownership import OWNERSHIP_LABEL, OWNERSHIP_VALUE, RESERVED_PREFIX, is_reserved

__all__ = [
    "OWNERSHIP_LABEL",
    "OWNERSHIP_VALUE",
    "RESERVED_PREFIX",
    "LabelDecodeError",
    "decode",
    "encode",
    "is_reserved",
]

PROFILE = "reconcile-hedge-profile"
DELAY = "reconcile-hedge-delay-ms"
MAX_TOKENS = "reconcile-hedge-max-tokens"
REFILL = "reconcile-hedge-refill-ppm"
RETRY_INITIAL = "reconcile-retry-initial-ms"
RETRY_TOTAL = "reconcile-retry-total-ms"

ENDPOINT = "reconcile-publish-endpoint"

HEDGING_KEYS = (PROFILE, DELAY, MAX_TOKENS, REFILL, RETRY_INITIAL, RETRY_TOTAL)
INLINE_NAME = "inline"


def endpoint(labels: Mapping[str, str]) -> str | None:
    """The region of the locational endpoint the spec told publishers to use, if any."""
    return labels.get(ENDPOINT) or None


class LabelDecodeError(ValueError):
    """The topic's hedging labels are missing, partial or malformed."""


def encode(profile: HedgingProfile, retry: RetryTimeouts) -> dict[str, str]:
    return {
        PROFILE: profile.name or INLINE_NAME,
        DELAY: str(profile.hedge_delay_ms),
        MAX_TOKENS: str(profile.max_tokens),
        REFILL: str(profile.refill_ppm),
        RETRY_INITIAL: str(retry.initial_rpc_timeout_ms),
        RETRY_TOTAL: str(retry.total_timeout_ms),
    }


def decode(labels: Mapping[str, str]) -> tuple[HedgingProfile, RetryTimeouts] | None:
    """None when the topic records no profile; LabelDecodeError when it is damaged."""
    present = [k for k in HEDGING_KEYS if k in labels]
    if not present:
        return None
    missing = [k for k in HEDGING_KEYS if k not in labels]
    if missing:
        raise LabelDecodeError(
            f"hedging labels are incomplete: missing {', '.join(missing)}; "
            "run `reconcile apply` to record the full profile"
        )
    try:
        numbers = {k: int(labels[k]) for k in HEDGING_KEYS if k != PROFILE}
    except ValueError as exc:
        raise LabelDecodeError(f"a hedging label is not a whole number: {exc}") from exc
    name = labels[PROFILE]
    profile = HedgingProfile(
        hedge_delay_ms=numbers[DELAY],
        max_tokens=numbers[MAX_TOKENS],
        refill_ratio=numbers[REFILL] / 1_000_000,
        name=None if name == INLINE_NAME else name,
    )
    retry = RetryTimeouts(numbers[RETRY_INITIAL], numbers[RETRY_TOTAL])
    return profile, retry
