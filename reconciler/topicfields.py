"""The table of a topic's managed fields: one entry per field of
`google.pubsub.v1.Topic` that reconcile manages (labels, the message storage policy,
the retention, the KMS key, the schema settings, the message transforms, the
ingestion source, the tags) and one for reconcile's own field,
the hedging profile (`publishers`, which lands on the topic as labels).

Each entry declares, once, how every layer names and treats the field:

    spec         its key under a Topic document's `spec:` (`messageRetentionDuration`;
                 `spec_path` is the document path diagnostics point at), and `attr`,
                 the attribute of the spec records (spec/documents.py) that hold it
    desired      the attribute of `DesiredTopic` that holds its canonical value
    shape        the attribute of `TopicShape` (topic.py) that holds the live value
    rest         its REST JSON name, the name a custom constraint's condition reads,
                 and `parts`, the REST names of its members a condition may read
    proto        the proto field name: the update-mask path, the plan's JSON key and
                 the field apply's request sets ("": not a field of Topic, nor `rest`)
    inherit      how a `Defaults` document supplies it: MERGED (labels, tags: outer
                 documents first, the topic's own keys last), NEAREST (the topic's
                 own value, else the nearest document's) or PER_TOPIC (never: a
                 Defaults document declaring it is an error at its line)
    create_only  sent in CreateTopic alone, never in a mask, never read back (tags)
    blank        what an unset live value compares as (an empty list of transforms)
    to_json / from_json   canonical value <-> the plan's and the request's JSON
    to_rest      canonical value -> the REST JSON a condition sees
    same         whether two canonical values are the same (what the diff and the
                 freshness check ask)

The rules of each value stay in reconciler/topicrules.py; the value types in
reconciler/topicvalues.py. This module imports no layer, and every layer may read it
(an import-linter contract in pyproject.toml). The conversions from and to the wire
(`google.pubsub_v1.Topic`) are in reconciler/backends/topicproto.py, by these proto
names.

Adding a field of Topic that holds one value (as the key name does): its entry here,
in SETTINGS; its rules (topicrules.py; transformrules.py, ingestionrules.py and
tagrules.py for the REST JSON fields) and their check at the spec line
(spec/settings.py; spec/restfields.py for the REST JSON fields); its key in the
spec format (spec/documents.py); where the desired state and a live topic hold it
(spec/desired.py, set in spec/topics.py; topic.py's TopicShape and
ObservedTopic.from_row); its wire read and write (backends/topicproto.py); the plan
format's MaskPath (plan/model.py) and TopicState (plan/topicstate.py), then
docs/plan.schema.json regenerated; how import writes it (spec/export.py);
and the local server's check when the service has one (localserver/pubsub/
publisher_service.py's _FIELD_CHECKS). Inheritance, the diff, masks, the request,
freshness, the condition's field names and values (orgpolicy/cel/resource.py writes
each of SETTINGS by its `rest` and `to_rest`), the Defaults import writes and the
local server's update paths follow from the entry.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reconciler.frozen import EMPTY
from reconciler.topicvalues import (
    SchemaSettings,
    StoragePolicy,
    canonical_ingestion,
    canonical_tags,
    canonical_transforms,
    norm_policy,
    policy_json,
    redacted,
    rest_policy,
)

Inherit = Literal["merged", "nearest", "topic"]
MERGED: Inherit = "merged"
NEAREST: Inherit = "nearest"
PER_TOPIC: Inherit = "topic"  # a topic's own only: a Defaults document may not give it


def _same_value(value: Any) -> Any:
    return value


def _labels_json(labels: Mapping[str, str]) -> dict[str, str]:
    return dict(labels)


def _policy_rest(policy: StoragePolicy) -> dict[str, Any]:
    return rest_policy(policy.regions, policy.enforce_in_transit)


def _same_policy(a: StoragePolicy | None, b: StoragePolicy | None) -> bool:
    """An empty policy (no region, not enforced) is the same as none."""
    return norm_policy(a) == norm_policy(b)


def _schema_json(schema: SchemaSettings) -> dict[str, str]:
    return schema.to_json()


def _schema_rest(schema: SchemaSettings) -> dict[str, str]:
    return schema.to_rest()


def _same_redacted(a: Any, b: Any) -> bool:
    """A plan shows transforms with any secret-named member redacted (topicvalues.
    redacted): the live value is the planned one when both read the same so (no
    transforms and an empty list are the same). Equal values read the same: only
    unequal ones are redacted to be compared (a plan compares each topic's)."""
    a, b = a or EMPTY, b or EMPTY
    return bool(a == b or redacted(a) == redacted(b))


@dataclass(frozen=True, slots=True)
class TopicField:
    """One managed field of a topic, as every layer names and treats it (above)."""

    spec: str
    attr: str
    desired: str
    shape: str
    rest: str
    proto: str
    inherit: Inherit
    to_json: Callable[[Any], Any] = _same_value
    from_json: Callable[[Any], Any] = _same_value
    to_rest: Callable[[Any], Any] = _same_value
    same: Callable[[Any, Any], bool] = operator.eq
    parts: tuple[str, ...] = ()
    # Sent only in CreateTopic, never in a mask nor read back (input-only, immutable).
    create_only: bool = False
    # What an unset live value compares as (a repeated field unset is empty: a spec's
    # `messageTransforms: []` is a topic without transforms).
    blank: Any = None
    # Where a Topic or Defaults document declares it: ("spec", spec).
    spec_path: tuple[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec_path", ("spec", self.spec))


LABELS = TopicField(
    spec="labels", attr="labels", desired="labels", shape="labels",
    rest="labels", proto="labels", inherit=MERGED,
    to_json=_labels_json, from_json=_labels_json, to_rest=_labels_json,
)
STORAGE_POLICY = TopicField(
    spec="messageStoragePolicy", attr="message_storage_policy", desired="storage",
    shape="policy", rest="messageStoragePolicy", proto="message_storage_policy",
    inherit=NEAREST, to_json=policy_json, from_json=StoragePolicy.from_json,
    to_rest=_policy_rest, same=_same_policy,
    parts=("allowedPersistenceRegions", "enforceInTransit"),
)
RETENTION = TopicField(  # the service's seconds (`172800s`): topicrules.canonical_retention
    spec="messageRetentionDuration", attr="message_retention_duration",
    desired="message_retention_duration", shape="retention",
    rest="messageRetentionDuration", proto="message_retention_duration", inherit=NEAREST,
)
KMS_KEY = TopicField(
    spec="kmsKeyName", attr="kms_key_name", desired="kms_key_name", shape="kms_key_name",
    rest="kmsKeyName", proto="kms_key_name", inherit=NEAREST,
)
SCHEMA_SETTINGS = TopicField(
    spec="schemaSettings", attr="schema_settings", desired="schema_settings",
    shape="schema_settings", rest="schemaSettings", proto="schema_settings",
    inherit=NEAREST, to_json=_schema_json, from_json=SchemaSettings.from_json,
    to_rest=_schema_rest,
    parts=("schema", "encoding", "firstRevisionId", "lastRevisionId"),
)
HEDGING = TopicField(  # reconcile's own: the profile is recorded on the topic as labels
    spec="publishers", attr="publishers", desired="hedging", shape="",
    rest="", proto="", inherit=NEAREST,
)

# The REST JSON fields (docs/spec-reference.md cites the sources of each choice). The
# canonical value is the REST JSON shape (camelCase, as a spec, a custom constraint's
# condition and the REST API write it), read-only (reconciler/frozen.py), members at
# their proto3 default left out (topicvalues.rest_value); None: the spec omits it
# (unmanaged: nothing sent, nothing compared, the live value shown as `# unmanaged:`).
#
# - messageTransforms: NEAREST. A directory of topics often shares one pipeline
#   (compress everything, one redaction UDF); a topic that writes its own list
#   replaces the default whole, since the list's order is the order they run in and
#   merging two lists would have no meaning.
# - ingestionDataSourceSettings: the topic's own only (PER_TOPIC). A source feeds one
#   topic: the same stream, bucket or cluster given to every topic of a directory would
#   ingest every message once per topic, so a Defaults document declaring it is an
#   error at its line.
# - tags: MERGED, as labels (outer documents first, the topic's own keys last): tags
#   are bound per key, and an organisation's tags (environment, cost centre) are
#   what a Defaults document is for. Input-only and immutable (pubsub.proto `Topic.
#   tags`: INPUT_ONLY, IMMUTABLE): sent in CreateTopic only, never in a mask, and
#   never read back by GetTopic.
TRANSFORMS = TopicField(
    spec="messageTransforms", attr="message_transforms", desired="message_transforms",
    shape="message_transforms", rest="messageTransforms", proto="message_transforms",
    inherit=NEAREST, from_json=canonical_transforms, to_json=redacted, same=_same_redacted,
    blank=EMPTY,
)
INGESTION = TopicField(
    spec="ingestionDataSourceSettings", attr="ingestion_data_source_settings",
    desired="ingestion", shape="ingestion", rest="ingestionDataSourceSettings",
    proto="ingestion_data_source_settings", inherit=PER_TOPIC,
    from_json=canonical_ingestion,
)
TAGS = TopicField(
    spec="tags", attr="tags", desired="tags", shape="", rest="tags", proto="tags",
    inherit=MERGED, from_json=canonical_tags, create_only=True,
)

# Every entry, in the order masks, plans and documents name them.
FIELDS = (
    LABELS, STORAGE_POLICY, RETENTION, KMS_KEY, SCHEMA_SETTINGS, TRANSFORMS, INGESTION,
    HEDGING, TAGS,
)
# The fields of Topic reconcile sets (each has a proto name).
SENT = tuple(f for f in FIELDS if f.proto)
# Those held as one plain value each, None when a spec leaves them unmanaged, and
# sent only when declared: the retention, the key, the schema settings, the message
# transforms and the ingestion source.
SETTINGS = (RETENTION, KMS_KEY, SCHEMA_SETTINGS, TRANSFORMS, INGESTION)
# The only paths a plan ever masks (top level), in the order a mask names them.
MASK_PATHS = tuple(f.proto for f in SENT if not f.create_only)
BY_PROTO: Mapping[str, TopicField] = {f.proto: f for f in SENT}
BY_REST: Mapping[str, TopicField] = {f.rest: f for f in SENT}
# The fields of Topic a live topic may have that a spec may leave unmanaged and that
# are shown then (`# unmanaged:`), by their REST JSON names.
UNMANAGED_REST = (INGESTION.rest, TRANSFORMS.rest)
