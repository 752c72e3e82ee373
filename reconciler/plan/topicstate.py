"""A topic as the plan shows and compares it (`before`, `after`): the JSON objects the
plan's records hold as read-only dicts, with their published shapes (TypedDicts msgspec
reads for the plan's schema), made once per distinct policy and settings (most topics
share a few)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NotRequired

from typing_extensions import TypedDict  # msgspec reads its keys on Python 3.11 too

from reconciler.frozen import FrozenDict, freeze
from reconciler.topic import (
    Settings,
    StoragePolicy,
    norm_policy,
    policy_json,
    settings_json,
)
from reconciler.topicfields import LABELS, SETTINGS, STORAGE_POLICY, TAGS

Strings = Sequence[str]

class PolicyState(TypedDict):
    """A message storage policy as the plan shows it."""

    allowed_persistence_regions: Strings
    enforce_in_transit: bool


class SchemaState(TypedDict):
    """A topic's schema settings: the schema's name, the encoding, the revision range
    ("" = that side open)."""

    schema: str
    encoding: str
    first_revision_id: str
    last_revision_id: str


class TopicState(TypedDict):
    """A topic as the plan compares it, with proto field names (the names of update
    masks); null when the topic does not exist. The retention (the service's seconds,
    e.g. `172800s`), key and schema settings are there when they are set, and so are
    the message transforms and the ingestion source (in the REST JSON shape, camelCase
    inside, as a spec writes them). `tags`: a create's only (input-only: never read
    back from a live topic)."""

    labels: Mapping[str, str]
    message_storage_policy: PolicyState | None
    message_retention_duration: NotRequired[str]
    kms_key_name: NotRequired[str]
    schema_settings: NotRequired[SchemaState]
    message_transforms: NotRequired[Sequence[Mapping[str, Any]]]
    ingestion_data_source_settings: NotRequired[Mapping[str, Any]]
    tags: NotRequired[Mapping[str, str]]


class Source(TypedDict):
    """Where the topic is declared."""

    file: str
    line: int


# Read and documented as the TypedDicts; to the code, plain read-only mappings it looks
# up by key.
if TYPE_CHECKING:
    TopicJSON = Mapping[str, Any] | None
    SourceJSON = Mapping[str, Any] | None
else:
    TopicJSON = TopicState | None
    SourceJSON = Source | None


def topic_state(
    labels: Mapping[str, str],
    policy: StoragePolicy | None,
    settings: Settings | None = None,
    tags: Mapping[str, str] | None = None,
) -> FrozenDict[str, Any]:
    """A `before`/`after` (`reconciler.topic.shape_json`) made read-only: the policy's
    JSON once per distinct policy (most topics share a few), the labels copied once;
    `settings`: the retention, key and schema settings, each there when set."""
    state = {LABELS.proto: FrozenDict(labels), STORAGE_POLICY.proto: _policy_state(policy)}
    if settings is not None and settings != _NO_SETTINGS:
        state.update(_settings_state(settings))
    if tags:
        state[TAGS.proto] = FrozenDict(tags)
    return FrozenDict(state)


_NO_SETTINGS: Settings = (None,) * len(SETTINGS)


@lru_cache(maxsize=1024)
def _settings_state(settings: Settings) -> Any:
    return freeze(settings_json(*settings))


@lru_cache(maxsize=1024)
def _policy_state(policy: StoragePolicy | None) -> Any:
    return freeze(policy_json(norm_policy(policy)))

