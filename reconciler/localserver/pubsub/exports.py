"""Export (BigQuery, Cloud Storage) and push subscriptions under a storage policy.

The local server writes to no BigQuery table or bucket and calls no push endpoint, so
the location of each destination is declared to it (`--destination-location KEY=LOC`,
`LocalServer(destination_locations=...)`, `LocalServer.set_destination_location`):

    bigquery:PROJECT.DATASET   the dataset of bigquery_config.table "PROJECT.DATASET.TABLE"
                               (or "PROJECT:DATASET.TABLE")
    storage:BUCKET             cloud_storage_config.bucket
    push:HOST                  the host of push_config.push_endpoint

A destination nobody declared is taken to be in an allowed region. When the topic
enforces in-transit regions and the destination's location is not one of its allowed
regions, delivery pauses: the config's state reads IN_TRANSIT_LOCATION_RESTRICTION
(push has no such state in the API: the subscription's state reads RESOURCE_ERROR)
and messages stay in the subscription's backlog. Otherwise the subscription is
ACTIVE and each message counts as delivered (acknowledged) on arrival. The state is
computed whenever it is read, from the topic's policy as it is then, so it can never
disagree with a later policy change; a backlog held while paused is delivered once
the state is ACTIVE again.

A BigQuery or Cloud Storage export whose declared location is not where the Vertex AI
model of an enabled AI Inference transform (the topic's or the subscription's) is
deployed reads VERTEX_AI_LOCATION_RESTRICTION ("the table is not in the same location
as where Vertex AI models used in `message_transform`s are deployed", pubsub.proto)
and holds its backlog the same way. "The same location" is taken as the same name
(`us-central1` and `us-central1`): how the service compares a multi-region dataset
with a regional model is not documented.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from google.protobuf import json_format

from reconciler.transformrules import model_locations

ACTIVE = "ACTIVE"
PAUSED = "IN_TRANSIT_LOCATION_RESTRICTION"
VERTEX_AI = "VERTEX_AI_LOCATION_RESTRICTION"
KEY_KINDS = ("bigquery", "storage", "push")


def destination_key(sub: Any) -> str | None:
    """The declared-location key of an export or push subscription (None for pull)."""
    if sub.HasField("bigquery_config") and sub.bigquery_config.table:
        table = sub.bigquery_config.table.replace(":", ".", 1)
        return "bigquery:" + ".".join(table.split(".")[:2])
    if sub.HasField("cloud_storage_config") and sub.cloud_storage_config.bucket:
        return "storage:" + str(sub.cloud_storage_config.bucket)
    if sub.HasField("push_config") and sub.push_config.push_endpoint:
        return "push:" + push_host(sub.push_config.push_endpoint)
    return None


def push_host(endpoint: str) -> str:
    """The host a push endpoint names; ValueError, starting with the words Google's
    emulator answers ("Invalid push_endpoint", "Unsupported push_endpoint"), for one
    that is not an http(s) URL with a host. The one rule the Subscriber service
    checks before a config is journaled and a replay applies to what it reads."""
    try:
        parts = urlsplit(endpoint)
    except ValueError as exc:
        raise ValueError(f"Invalid push_endpoint {endpoint!r}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(
            f"Unsupported push_endpoint {endpoint!r}: it must be an https:// (or http://) URL"
        )
    if not parts.hostname or any(ch.isspace() or not ch.isprintable() for ch in endpoint):
        raise ValueError(f"Invalid push_endpoint {endpoint!r}: not a URL with a host")
    return parts.hostname


def check_key(key: str) -> str:
    """ValueError unless `key` is KIND:NAME with a known kind."""
    kind, sep, name = key.partition(":")
    if not sep or kind not in KEY_KINDS or not name:
        raise ValueError(
            f"destination {key!r} is not KIND:NAME with KIND one of {', '.join(KEY_KINDS)} "
            "(e.g. bigquery:my-project.my_dataset, storage:my-bucket, push:example.com)"
        )
    return key


def delivery_state(sub: Any, topic: Any | None, locations: dict[str, str]) -> str | None:
    """ACTIVE, IN_TRANSIT_LOCATION_RESTRICTION or VERTEX_AI_LOCATION_RESTRICTION for
    an export or push subscription; None for a pull subscription."""
    key = destination_key(sub)
    if key is None:
        return None
    where = locations.get(key)
    if where is None:
        return ACTIVE
    if topic is not None and topic.HasField("message_storage_policy"):
        policy = topic.message_storage_policy
        if policy.enforce_in_transit and where not in policy.allowed_persistence_regions:
            return PAUSED
    if not key.startswith("push:") and any(
        model != where for model in _models(sub, topic)
    ):
        return VERTEX_AI
    return ACTIVE


def _models(sub: Any, topic: Any | None) -> list[str]:
    """The locations of the enabled AI Inference models the messages pass through on
    their way to this subscription's destination (the topic's transforms, then its
    own)."""
    found: list[str] = []
    for owner in (topic, sub):
        if owner is not None and len(owner.message_transforms):
            given = [json_format.MessageToDict(t) for t in owner.message_transforms]
            found.extend(model_locations(given))
    return found


def set_state(out: Any, state: str | None) -> None:
    """Make the output-only state fields of the Subscription `out` (a copy of the
    stored config) say `state`."""
    from reconciler.localserver.api import protos

    out.state = protos.Subscription.ACTIVE
    if state is None:
        return
    if out.HasField("bigquery_config"):
        out.bigquery_config.state = protos.BigQueryConfig.State.Value(state)
    elif out.HasField("cloud_storage_config"):
        out.cloud_storage_config.state = protos.CloudStorageConfig.State.Value(state)
    elif state == PAUSED:
        out.state = protos.Subscription.RESOURCE_ERROR
