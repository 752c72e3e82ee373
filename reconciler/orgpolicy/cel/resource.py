"""The resource a custom constraint's condition sees of a Pub/Sub topic, built in this
one place from reconciler's topic value (`reconciler.topic`: the name, the labels, the
storage policy, retention, key and schema settings, and what reconcile does not manage
in its REST JSON shape), whichever form the topic came in: the topic `validate`
declares (spec/resource.py), the plan's live topic before and after its call
(plan/customcheck.py) and the local server's protobuf Topic, which the server converts
to the topic value first (localserver/pubsub/constraints.py).

    topic_resource(name, labels, policy, settings, others) -> dict
    shape_resource(name, shape) -> dict        the same from a TopicShape

`settings` holds one value per entry of the field table's SETTINGS (the retention, the
key, the schema settings: reconciler/topicfields.py), None where not set; each is
written under the entry's REST name by its `to_rest`, so a new setting in the table
reaches every condition with no change here.

The shape is the REST JSON one (proto3 JSON), as the service presents a topic to a
condition: `name`; `labels` always (a map has no presence: none is an empty one);
`messageStoragePolicy` when the topic has one, its `allowedPersistenceRegions` when it
lists any (a repeated field is left out when empty) and `enforceInTransit` only when
true; `messageRetentionDuration`, `kmsKeyName` and `schemaSettings` when set, as the
REST JSON writes them (a revision id only when set). A field not set is absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler import topicfields as fields
from reconciler.topic import StoragePolicy, TopicShape

# The REST JSON names, the table's (reconciler/topicfields.py).
NAME = "name"
LABELS = fields.LABELS.rest
STORAGE = fields.STORAGE_POLICY.rest
_SETTINGS = tuple((entry.rest, entry.to_rest) for entry in fields.SETTINGS)
# Those the live topic's `others` also carries, as the service writes them (with what
# the canonical value leaves out: an ingestion source's output-only `state`).
_CANONICAL = {rest: fields.BY_REST[rest].from_json for rest in fields.UNMANAGED_REST}
# The top-level fields the topic value carries: what a plan reads of a live topic (a
# condition reading another field of one cannot be judged from the plan's reads).
LIVE_FIELDS = frozenset({NAME, *(f.rest for f in fields.SENT), *fields.UNMANAGED_REST})


def topic_resource(
    name: str,
    labels: dict[str, str],
    policy: StoragePolicy | None = None,
    settings: Sequence[Any] = (),
    others: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The topic as a condition sees it; `labels` is used as given (the caller's own
    dict: a condition never changes it), `settings` in the table's SETTINGS order
    (none given: none set), `others` is the REST JSON of the fields reconcile does not
    manage (the ingestion source, message transforms, ...)."""
    resource: dict[str, Any] = dict(others) if others else {}
    resource[NAME] = name
    resource[LABELS] = labels
    if policy is not None:
        shown: dict[str, Any] = {}
        if policy.regions:
            shown["allowedPersistenceRegions"] = list(policy.regions)
        if policy.enforce_in_transit:
            shown["enforceInTransit"] = True
        resource[STORAGE] = shown
    for (rest, to_rest), value in zip(_SETTINGS, settings, strict=False):  # () = none set
        if value is not None:
            canonical = _CANONICAL.get(rest)
            if canonical and others and rest in others and canonical(others[rest]) == value:
                continue  # the live value, as the service shows it
            resource[rest] = to_rest(value)
    return resource


def shape_resource(name: str, shape: TopicShape) -> dict[str, Any]:
    """`topic_resource` of a topic given as its shape (its labels copied)."""
    return topic_resource(
        name, dict(shape.labels), shape.policy, shape.settings(), shape.unmanaged_json
    )
