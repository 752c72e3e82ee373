"""Where a Publish lands under a topic's message storage policy: the one rule the
validator (`spec/orgrules.py`, for the publishers a spec declares) and the local
server (`localserver/pubsub/`, for each Publish, Pull and StreamingPull) both apply.

The facts (Google Cloud's "Configure message storage policies" page and the
`MessageStoragePolicy` proto's field documentation; docs/storage-policy.md):
- a message is persisted in the region that receives the request when the policy
  allows it (or the topic has no policy), else in the allowed region nearest to it
  (`geography.nearest`): rerouted;
- with `enforceInTransit`, a request received in a region the policy does not allow
  is refused (FAILED_PRECONDITION);
- a message with an ordering key is refused when the policy excludes the region
  that receives it (ordered messages are not rerouted).

A request that declares no region is received in `DEFAULT_RECEIVING_REGION` and
every rule applies to it as to one declared from there: "not declared" is never a
way around in-transit enforcement.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

from reconciler.orgpolicy.geography import nearest
from reconciler.orgpolicy.locations import catalog

# Where a request that names no region is deemed received (the local server's
# `--client-region` default).
DEFAULT_RECEIVING_REGION = "us-central1"


class Refusal(enum.Enum):
    """Why a Publish is refused, in the order the local server answers them (the
    service's own order is not documented)."""

    NO_REGION = "no-region"  # the policy allows no region at all
    IN_TRANSIT = "in-transit"  # enforceInTransit, received outside the allowed regions
    ORDERING = "ordering"  # an ordering key, received outside the allowed regions


class Landing(NamedTuple):
    """What becomes of one Publish. `stored` is None when it is refused; `refusals`
    holds every reason that refuses it, the first being what the service answers.
    (A named tuple: made on every Publish, and cheap to define on `validate`'s path.)"""

    received: str
    stored: str | None
    refusals: tuple[Refusal, ...] = ()

    @property
    def rerouted(self) -> bool:
        """Accepted and persisted in another region than the one that received it."""
        return self.stored is not None and self.stored != self.received


def receiving_region(declared: str | None) -> str:
    """The region a request is received in: the one it declares, else the default."""
    return declared or DEFAULT_RECEIVING_REGION


def land(
    declared: str | None,
    allowed: Sequence[str] | None,
    *,
    enforce_in_transit: bool,
    ordering: bool,
) -> Landing:
    """A Publish received in `declared` (None: not declared) under a policy allowing
    `allowed` (None: the topic has no policy; ties between equally near regions
    follow this order), with or without an ordering key on its messages."""
    received = receiving_region(declared)
    if allowed is None or received in allowed:
        return Landing(received, received)
    if not allowed:
        return Landing(received, None, (Refusal.NO_REGION,))
    refusals = []
    if refuses_in_transit(received, allowed, enforce_in_transit):
        refusals.append(Refusal.IN_TRANSIT)
    if ordering:
        refusals.append(Refusal.ORDERING)
    if refusals:
        return Landing(received, None, tuple(refusals))
    return Landing(received, nearest(received, allowed))


def refuses_in_transit(received: str, allowed: Sequence[str] | None, enforce: bool) -> bool:
    """Whether in-transit enforcement refuses a request received in `received` (one
    that moves message content: Publish, Pull, StreamingPull)."""
    return enforce and allowed is not None and received not in allowed


def declared_region_problem(value: str) -> str | None:
    """Why `value` cannot be the region a request declares it is received in, or
    None when it can: it must name a Google Cloud region the location data knows
    (the regions a storage policy can name), exactly."""
    cat = catalog()
    if value in cat.all_regions:
        return None
    kind = cat.kind_of(value) if value.isprintable() and len(value) <= 64 else "unknown"
    if kind == "zone":
        why = f"is a zone; name its region, {value.strip().rsplit('-', 1)[0]}"
    elif kind == "region":  # differs only in surrounding space
        why = "has surrounding space"
    elif kind == "unknown":
        near = cat.suggest_region(value) if len(value) <= 64 else None
        why = "is not a Google Cloud region" + (f"; did you mean {near}?" if near else "")
    else:
        why = "is not a region (a request is received in one region, e.g. us-central1)"
    shown = repr(value) if len(value) <= 64 else repr(value[:64]) + "..."
    return f"{shown} {why}"
