"""Subscriptions as plain values: one paged ListSubscriptions per project (never one
call per topic), each subscription reduced to what plan and residency need. A caller
who may not list them gets a value saying so, not a failed plan.

    list_subscriptions(subscriber, project, options) -> SubscriptionListing
"""

from __future__ import annotations

from typing import Any

from google.api_core import exceptions as gexc

from reconciler.backends.base import (
    DEFAULT_SUBSCRIPTION_RETENTION,
    ObservedSubscription,
    SubscriptionKind,
    SubscriptionListing,
)

PAGE_SIZE = 1000  # the service's largest page
LIST_PERMISSION = ("pubsub.subscriptions.list", "roles/pubsub.viewer")


def cannot_list(project: str, why: str = "permission denied") -> str:
    permission, role = LIST_PERMISSION
    return (
        f"cannot list subscriptions in {project} ({why}; needs {permission}, e.g. {role})"
    )


def list_subscriptions(
    subscriber: Any, project: str, options: dict[str, Any]
) -> SubscriptionListing:
    """Every subscription of `project` (1000 a page), or why it cannot be listed."""
    request = {"project": f"projects/{project}", "page_size": PAGE_SIZE}
    calls = 0
    found: list[ObservedSubscription] = []
    try:
        pager = subscriber.list_subscriptions(request=request, **options)
        for page in pager.pages:
            calls += 1
            found += [observed_subscription(pb) for pb in type(page).pb(page).subscriptions]
    except gexc.PermissionDenied:
        return SubscriptionListing(unavailable=cannot_list(project), calls=calls + 1)
    except gexc.MethodNotImplemented:
        return SubscriptionListing(
            unavailable=f"cannot list subscriptions in {project} (the target serves no "
            "Subscriber API)",
            calls=calls + 1,
        )
    except gexc.Unauthenticated:
        return SubscriptionListing(
            unavailable=cannot_list(project, "not authenticated"), calls=calls + 1
        )
    except (gexc.GoogleAPIError, gexc.RetryError) as exc:
        code = getattr(getattr(exc, "grpc_status_code", None), "name", None)
        return SubscriptionListing(
            unavailable=f"cannot list subscriptions in {project} ({code or type(exc).__name__})",
            calls=calls + 1,
        )
    return SubscriptionListing(tuple(found), calls=calls)


_STATE_NAMES: dict[type, dict[int, str]] = {}  # message type -> state number -> name


def _state_name(message: Any) -> str:
    """The name of `message.state` (a project lists thousands: the enum is read once
    per message type, not once per subscription)."""
    names = _STATE_NAMES.get(type(message))
    if names is None:
        enum = message.DESCRIPTOR.fields_by_name["state"].enum_type
        names = _STATE_NAMES[type(message)] = {v.number: str(v.name) for v in enum.values}
    number = message.state
    return names.get(number) or str(number)


def observed_subscription(pb: Any) -> ObservedSubscription:
    """A bare protobuf Subscription as a plain value (its kind: the delivery config
    that names a destination; an unset config reads as empty, so no HasField is
    needed: a project lists thousands)."""
    kind: SubscriptionKind
    if (bigquery := pb.bigquery_config).table:
        kind, state = "bigquery", _state_name(bigquery)
    elif (storage := pb.cloud_storage_config).bucket:
        kind, state = "cloud_storage", _state_name(storage)
    else:
        kind = "push" if pb.push_config.push_endpoint else "pull"
        state = _state_name(pb)
    retention = DEFAULT_SUBSCRIPTION_RETENTION
    if pb.HasField("message_retention_duration"):
        retention = int(pb.message_retention_duration.seconds)
    return ObservedSubscription(
        pb.name, pb.topic, kind, state, retention, bool(pb.retain_acked_messages)
    )
