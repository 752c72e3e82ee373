"""What Pub/Sub's by-region gauges mean, and what clears a region of a topic's
messages: the words `reconcile residency` and the plan's left-behind note share.

A topic's gauges (`num_unacked_messages_by_region`, ...) add up its subscriptions'
backlogs: a message two subscriptions have not acknowledged counts twice. They count
copies held in per-subscription backlogs, not distinct stored messages, and which
messages two backlogs share is not in the metrics: the distinct number is known only
within bounds, at least the largest backlog and at most their sum (exactly the
backlog when one subscription holds them all).

What clears a subscription's copies (Pub/Sub reference): acknowledging them; a Seek
to a time (`gcloud pubsub subscriptions seek SUB --time=...`) marks every message
published before it acknowledged; detaching the subscription from its topic drops
every message it retains, unacknowledged and acknowledged. A subscription with
`retain_acked_messages` keeps what it acknowledged until its retention ends, and a
topic with message retention keeps its messages until the topic's retention ends,
whatever its subscribers do: for those, only detaching (the subscription's) or the
retention's end clears them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reconciler.spec.durations import age_text


@dataclass(frozen=True)
class Backlog:
    """One subscription's copies in one region, by the subscription gauges."""

    subscription: str  # the subscription's ID
    messages: int
    bytes: int | None
    oldest_age_seconds: int | None
    acknowledged: bool = False  # retained acknowledged copies (retain_acked_messages)


def ages_out_within(retentions: Sequence[int], oldest_age_seconds: int | None) -> int | None:
    """When the oldest copy reaches the end of the longest of `retentions` (seconds
    from now; None: its age is unknown)."""
    if oldest_age_seconds is None:
        return None
    return max(0, max(retentions, default=0) - oldest_age_seconds)


def distinct_bounds(backlogs: Sequence[Backlog]) -> tuple[int, int]:
    """The fewest and the most distinct messages the backlogs can hold together."""
    counts = [b.messages for b in backlogs]
    return (max(counts, default=0), sum(counts))


def distinct_text(backlogs: Sequence[Backlog]) -> str:
    """"80 to 160 distinct messages (...)", or "80 distinct messages" when exact."""
    low, high = distinct_bounds(backlogs)
    if low == high or len([b for b in backlogs if b.messages]) <= 1:
        return f"{high} distinct message{'' if high == 1 else 's'}"
    return (f"{low} to {high} distinct messages (which ones the backlogs share is not in "
            "the metrics)")


def copies_text(messages: int, size: int | None, backlogs: Sequence[Backlog] | None,
                what: str = "unacknowledged") -> str:
    """"160 unacknowledged copies (1420 B) in 2 subscription backlogs": a topic
    gauge's figure, said as what it counts."""
    nbytes = "" if size is None else f" ({size} B)"
    copies = "copy" if messages == 1 else "copies"
    if backlogs is None:
        return (f"{messages} {what} {copies}{nbytes} summed over the topic's subscription "
                "backlogs (per subscription: unknown)")
    held = [b for b in backlogs if b.messages]
    n = len(held)
    return (f"{messages} {what} {copies}{nbytes} in {n} subscription backlog"
            f"{'' if n == 1 else 's'}")


def backlog_text(b: Backlog) -> str:
    """"orders-audit: 80 unacknowledged (710 B, oldest 4 min)"."""
    size = "unknown size" if b.bytes is None else f"{b.bytes} B"
    what = "retained acknowledged" if b.acknowledged else "unacknowledged"
    oldest = age_text(b.oldest_age_seconds)
    return f"{b.subscription}: {b.messages} {what} ({size}, oldest {oldest})"


def _names(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def clears_line(
    region: str,
    backlogs: Sequence[Backlog] | None,
    topic_retains: bool,
    ages_out_within_seconds: int | None,
    now: datetime | None,
    project: str = "PROJECT",
) -> str:
    """One line a person can act on: what clears `region` of the topic's messages.
    `project`: the topic's, which holds the subscriptions named (gcloud would take a
    bare ID in its own default project)."""
    ways: list[str] = []
    if backlogs is None:
        ways.append("acknowledge the backlogs of the topic's subscriptions or seek them to "
                    "now (which of them hold copies here is unknown), or detach them")
    else:
        unacked = sorted({b.subscription for b in backlogs if b.messages and not b.acknowledged})
        acked = sorted({b.subscription for b in backlogs if b.messages and b.acknowledged})
        if unacked:
            one = len(unacked) == 1
            sub = unacked[0] if one else "SUB"
            each = "" if one else ", for each"
            ways.append(
                f"acknowledge {_names(unacked)}'s backlog{'' if one else 's'} or seek "
                f"{'it' if one else 'them'} to now (`gcloud pubsub subscriptions seek {sub} "
                f"--project {project} --time=$(date -u +%FT%TZ)`{each}), or detach "
                f"{'it' if one else 'them'} (`gcloud pubsub topics detach-subscription "
                f"{sub} --project {project}`: drops what it stores)"
            )
        if acked:
            ways.append(f"detach {_names(acked)} (it retains acknowledged messages, which "
                        "only detaching or the retention's end clears)")
    retention = "retention removes the last message"
    if topic_retains:
        retention = "the topic's own retention (and its subscriptions') removes the last message"
    if ages_out_within_seconds is None:
        ends = f"otherwise {retention} at a time the gauges do not tell"
    else:
        when = ""
        if now is not None:
            at = now + timedelta(seconds=ages_out_within_seconds)
            when = f" (by {at.strftime('%Y-%m-%d %H:%M')} UTC)"
        ends = f"otherwise {retention} within {age_text(ages_out_within_seconds)}{when}"
    return f"to clear {region}: " + "; or ".join(ways) + ("; " if ways else "") + ends
