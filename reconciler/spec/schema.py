"""The JSON Schema of the spec format, generated from the models (never by hand)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from reconciler.spec.models import DefaultsDoc, HedgingProfileDoc, OwnerDoc, TopicDoc

SCHEMA_ID = "https://reconcile.invalid/schemas/spec-v1.json"


def spec_schema() -> dict[str, Any]:
    adapter: TypeAdapter[TopicDoc | HedgingProfileDoc | DefaultsDoc | OwnerDoc] = TypeAdapter(
        TopicDoc | HedgingProfileDoc | DefaultsDoc | OwnerDoc
    )
    schema = adapter.json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "reconcile spec document (apiVersion reconcile.pubsub/v1)",
        **schema,
    }


def spec_schema_text() -> str:
    return json.dumps(spec_schema(), indent=2, sort_keys=True) + "\n"
