"""A topic's message transforms, ingestion source and tags as the service takes them on
CreateTopic and UpdateTopic: refused with INVALID_ARGUMENT when `reconciler.
transformrules` or `reconciler.ingestionrules` says the service refuses them (the
rules `validate` applies too), and the output-only and input-only parts made what
the service returns.

- An ingestion source's `state` is output-only: what a request sends is dropped and
  the source reads ACTIVE. The other states (permission denied, stream or bucket not
  found, CONFLICTING_REGION_CONSTRAINTS from a Regional Access Boundary on the
  service account) depend on the other cloud, IAM or the account's boundary, which
  the server does not model: a test declares one for a topic through the server's
  own hook (`LocalServer.set_ingestion_state`, `IngestionStates`), never through the
  API, and every read of the topic shows it while the source has such a state.
- `tags` are input-only and immutable: taken on CreateTopic and stored with the topic
  (Resource Manager's ListTagBindings reads them: `resourcemanager.tagbindings`),
  never returned by the Publisher service (`IngestionStates.shown` drops them), and
  an update mask naming them is refused as a mask naming an immutable field is.
"""

from __future__ import annotations

import threading
from typing import Any

from google.protobuf import json_format

from reconciler.ingestionrules import ingestion_problems
from reconciler.localserver.api import protos
from reconciler.localserver.api.status import invalid
from reconciler.names import split_topic_name
from reconciler.transformrules import transform_problems

TRANSFORMS = "message_transforms"
INGESTION = "ingestion_data_source_settings"
TAGS = "tags"


def check_transforms(transforms: Any) -> None:
    """INVALID_ARGUMENT naming the first problem of a repeated MessageTransform."""
    if not len(transforms):
        return
    given = [json_format.MessageToDict(t) for t in transforms]
    problems = transform_problems(given)
    if problems:
        raise invalid(problems[0])


def check_ingestion(topic: Any) -> None:
    """INVALID_ARGUMENT naming the first problem of the topic's ingestion source."""
    if not topic.HasField(INGESTION):
        return
    problems = ingestion_problems(json_format.MessageToDict(topic.ingestion_data_source_settings))
    if problems:
        raise invalid(problems[0])


def settle_output_fields(topic: Any) -> None:
    """The stored topic's output-only fields: the ingestion source ACTIVE (its state
    is output-only). Its tags stay stored (see the module docstring)."""
    if not topic.HasField(INGESTION):
        return
    settings = topic.ingestion_data_source_settings
    which = settings.WhichOneof("source")
    if which is None:
        return
    source = getattr(settings, which)
    source.state = type(source).State.Value("ACTIVE")


def _source_states() -> dict[str, frozenset[str]]:
    """Each ingestion source kind's `State` names (googleapis pubsub.proto), but
    STATE_UNSPECIFIED."""
    settings = protos.Topic().ingestion_data_source_settings
    return {
        field.name: frozenset(
            v.name for v in field.message_type.enum_types_by_name["State"].values if v.number
        )
        for field in type(settings).DESCRIPTOR.oneofs_by_name["source"].fields
    }


class IngestionStates:
    """The ingestion states declared per topic (a test hook, held in memory like the
    declared destination locations: they stand for the other cloud and the service
    account's boundary, not for anything a client stored). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._declared: dict[str, str] = {}
        self._kinds = _source_states()

    def set(self, topic: str, state: str | None) -> None:
        """Declare `state` (a `State` name of some source kind, e.g.
        CONFLICTING_REGION_CONSTRAINTS) for `topic`'s ingestion source; None forgets it.
        ValueError for a name that is no topic or no source state."""
        if split_topic_name(topic) is None:
            raise ValueError(f"{topic!r} is not a topic name (projects/PROJECT/topics/TOPIC)")
        if state is not None and not any(state in names for names in self._kinds.values()):
            known = sorted(set().union(*self._kinds.values()))
            raise ValueError(f"{state!r} is not an ingestion source state ({', '.join(known)})")
        with self._lock:
            if state is None:
                self._declared.pop(topic, None)
            else:
                self._declared[topic] = state

    def shown(self, topic: Any) -> Any:
        """`topic` as a read shows it: without its tags (input-only), and its source
        reading the declared state when one is declared and the source's kind has that
        state (a kind without it, e.g. STREAM_NOT_FOUND on a Cloud Storage source,
        reads ACTIVE as stored). A copy when either applies, else `topic` itself."""
        with self._lock:
            state = self._declared.get(topic.name)
        which = None
        if state is not None and topic.HasField(INGESTION):
            which = topic.ingestion_data_source_settings.WhichOneof("source")
            if which is not None and state not in self._kinds[which]:
                which = None
        if which is None and not len(topic.tags):
            return topic
        out = type(topic)()
        out.CopyFrom(topic)
        out.ClearField(TAGS)
        if which is not None and state is not None:
            source = getattr(out.ingestion_data_source_settings, which)
            source.state = type(source).State.Value(state)
        return out
