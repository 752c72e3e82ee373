"""A topic's message transforms, ingestion source and tags as the service takes them on
CreateTopic and UpdateTopic: refused with INVALID_ARGUMENT when `reconciler.
transformrules` or `reconciler.ingestionrules` says the service refuses them (the
rules `validate` applies too), and the output-only and input-only parts made what
the service returns.

- An ingestion source's `state` is output-only: what a request sends is dropped and
  the source reads ACTIVE. The other states (permission denied, stream or bucket not
  found, CONFLICTING_REGION_CONSTRAINTS from a Regional Access Boundary on the
  service account) depend on the other cloud, IAM or the account's boundary, which
  the server does not model.
- `tags` are input-only and immutable: taken on CreateTopic, never returned, and an
  update mask naming them is refused as a mask naming an immutable field is.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from reconciler.ingestionrules import ingestion_problems
from reconciler.localserver.api.status import invalid
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
    """What the service returns of the stored topic: no tags (input-only), the
    ingestion source ACTIVE (its state is output-only)."""
    topic.ClearField(TAGS)
    if not topic.HasField(INGESTION):
        return
    settings = topic.ingestion_data_source_settings
    which = settings.WhichOneof("source")
    if which is None:
        return
    source = getattr(settings, which)
    source.state = type(source).State.Value("ACTIVE")
