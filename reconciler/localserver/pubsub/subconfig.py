"""A subscription's configuration as CreateSubscription, UpdateSubscription and
ModifyPushConfig check and store it: the field rules (ack deadline, retention,
labels, one delivery type, push and export settings, dead-letter and retry
policies), the update mask's paths (`masks`) and what an update makes of the stored
config. Plain functions over the protos; the Subscriber service calls them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc

from reconciler.localserver.api.protos import Subscription
from reconciler.localserver.api.status import ServiceError, invalid
from reconciler.localserver.pubsub import deadletter, exportconfig, masks, pushconfig
from reconciler.localserver.pubsub.limits import (
    DEFAULT_ACK_DEADLINE_S,
    DEFAULT_SUBSCRIPTION_RETENTION_S,
    MAX_ACK_DEADLINE_S,
    MAX_SUBSCRIPTION_RETENTION_S,
    MIN_ACK_DEADLINE_S,
    check_labels,
    duration_seconds,
)
from reconciler.localserver.pubsub.topicextras import check_transforms
from reconciler.topicrules import MIN_RETENTION_S  # a subscription's floor is a topic's

MUTABLE_PATHS = (
    "ack_deadline_seconds",
    "retain_acked_messages",
    "message_retention_duration",
    "labels",
    "push_config",
    "bigquery_config",
    "cloud_storage_config",
    "expiration_policy",
    "dead_letter_policy",
    "retry_policy",
    "enable_exactly_once_delivery",
    "message_transforms",
)
IMMUTABLE_PATHS = ("name", "topic", "enable_message_ordering", "filter", "detached")
DELIVERY_CONFIGS = ("push_config", "bigquery_config", "cloud_storage_config", "bigtable_config")
_OUTPUT_STATES = ("bigquery_config", "cloud_storage_config", "bigtable_config")
MASKS = masks.MaskRules(
    request="UpdateSubscriptionRequest",
    resource="Subscription",
    example="push_config",
    misspelt="pushConfig",
    mutable=frozenset(MUTABLE_PATHS),
    immutable=frozenset(IMMUTABLE_PATHS),
    output_only=frozenset(f"{c}.state" for c in _OUTPUT_STATES),
)
MAX_BACKOFF_S = 600  # RetryPolicy: "between 0 and 600 seconds"


def check_ack_deadline(seconds: int, what: str = "ack_deadline_secs") -> None:
    if seconds and not MIN_ACK_DEADLINE_S <= seconds <= MAX_ACK_DEADLINE_S:
        raise invalid(
            f"{what} out of bounds: {seconds} (it must be {MIN_ACK_DEADLINE_S} to "
            f"{MAX_ACK_DEADLINE_S} seconds, or 0 for the default of "
            f"{DEFAULT_ACK_DEADLINE_S})"
        )


def check_config(sub: Any, fields: Iterable[str]) -> None:
    """The rules of the top-level `fields` of `sub` (and that it has one delivery
    type at most)."""
    fields = set(fields)
    if "ack_deadline_seconds" in fields:
        check_ack_deadline(sub.ack_deadline_seconds)
    if "message_retention_duration" in fields and sub.HasField("message_retention_duration"):
        seconds = duration_seconds(sub.message_retention_duration)
        if not MIN_RETENTION_S <= seconds <= MAX_SUBSCRIPTION_RETENTION_S:
            raise invalid(
                f"message_retention_duration out of bounds: {seconds:g} s (it must be 10 "
                "minutes to 7 days)"
            )
    if "message_transforms" in fields:
        check_transforms(sub.message_transforms)
    if "labels" in fields:
        check_labels(sub.labels, "subscription")
    given = [c for c in DELIVERY_CONFIGS if sub.HasField(c) and delivers(sub, c)]
    if len(given) > 1:
        raise invalid(
            f"At most one of push_config, bigquery_config, cloud_storage_config and "
            f"bigtable_config may be set (got {', '.join(given)})."
        )
    if "bigquery_config" in fields and delivers(sub, "bigquery_config"):
        exportconfig.check_bigquery(sub.bigquery_config)
    if "cloud_storage_config" in fields and delivers(sub, "cloud_storage_config"):
        exportconfig.check_cloud_storage(sub.cloud_storage_config)
    if "push_config" in fields and sub.HasField("push_config"):
        pushconfig.check_push(sub.push_config)
    if "dead_letter_policy" in fields and sub.HasField("dead_letter_policy"):
        deadletter.check_attempts(sub.dead_letter_policy)
    if "retry_policy" in fields and sub.HasField("retry_policy"):
        _check_retry(sub.retry_policy)


def _check_retry(policy: Any) -> None:
    """Each backoff 0 to 600 s, in the words of Google's emulator."""
    for field in ("minimum_backoff", "maximum_backoff"):
        if policy.HasField(field):
            seconds = duration_seconds(getattr(policy, field))
            if not 0 <= seconds <= MAX_BACKOFF_S:
                raise ServiceError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"The value for {field} is out of bounds. You passed {seconds:g}s in the "
                    f"request, but the value must be between 0s and {MAX_BACKOFF_S}s.",
                )


def delivers(sub: Any, field: str) -> bool:
    """Whether a delivery config names a destination (an empty push_config is what a
    pull subscription carries)."""
    config = getattr(sub, field)
    if field == "push_config":
        return bool(config.push_endpoint)
    return bool(config.ListFields())


def clear_outputs(sub: Any) -> None:
    for config in _OUTPUT_STATES:
        if sub.HasField(config):
            getattr(sub, config).ClearField("state")


def updated(current: Any, given: Any, paths: tuple[str, ...]) -> Any:
    """The stored config once the mask's `paths` (checked: `masks.checked_paths`) take
    their values from `given`: an ack deadline of 0 and an absent retention read the
    defaults, a delivery type given (or made to deliver by a nested path) clears the
    others, and the result's touched fields are checked."""
    sub = Subscription()
    sub.CopyFrom(current)
    for path in paths:
        if path == "ack_deadline_seconds":
            sub.ack_deadline_seconds = given.ack_deadline_seconds or DEFAULT_ACK_DEADLINE_S
        elif path == "message_retention_duration" and not given.HasField(path):
            sub.message_retention_duration.Clear()
            sub.message_retention_duration.seconds = int(DEFAULT_SUBSCRIPTION_RETENTION_S)
        else:
            masks.copy_path(sub, given, path)
    for field in DELIVERY_CONFIGS:
        named = field in paths and given.HasField(field)  # ModifyPushConfig's {}: pull
        if named or (masks.touches(paths, field) and sub.HasField(field) and delivers(sub, field)):
            for other in DELIVERY_CONFIGS:  # setting one delivery type clears the rest
                if other != field:
                    sub.ClearField(other)
    if not any(sub.HasField(c) for c in DELIVERY_CONFIGS):
        sub.push_config.SetInParent()  # a pull one reads `pushConfig: {}`, as at create
    clear_outputs(sub)
    check_config(sub, {p.split(".", 1)[0] for p in paths})
    return sub
