"""The JSON Schema of the spec format (`reconcile schema`, checked in as
specs/schema.json), generated from the Structs of `documents.py` (never by hand).

Written here rather than by `msgspec.json.schema`, which needs tagged unions of Structs
(a document's kind is a field of its own) and words the schema differently: this is
the schema the format has published since its first version, each field with its
title, description and default, each kind's docstring its description.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from typing import Any

import msgspec

from reconciler.spec.documents import DURATION_SCHEMA, RECORD_BY_KIND, DurationMs
from reconciler.spec.shape import bare, members

SCHEMA_ID = "https://reconcile.invalid/schemas/spec-v1.json"
_SIMPLE = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def spec_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "reconcile spec document (apiVersion reconcile.pubsub/v1)",
        "anyOf": [_type(struct, defs) for struct in RECORD_BY_KIND.values()],
        "$defs": defs,
    }


def spec_schema_text() -> str:
    return json.dumps(spec_schema(), indent=2, sort_keys=True) + "\n"


def _type(kind: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of a value of `kind` (a Struct's added to `defs`, by reference)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        out = _type(args[0], defs)
        for meta in metas(kind):
            out.update(meta.extra_json_schema or {})
        return out
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type(a, defs) for a in args]}
    if origin is typing.Literal:
        return ({"const": args[0]} if len(args) == 1 else {"enum": list(args)}) | {"type": "string"}
    if origin is list:
        return {"items": _type(args[0], defs), "type": "array"}
    if origin is dict:
        return {"additionalProperties": _type(args[1], defs), "type": "object"}
    if kind is DurationMs:
        return dict(DURATION_SCHEMA)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        if kind.__name__ not in defs:
            defs[kind.__name__] = {}  # a placeholder while its fields are written
            defs[kind.__name__] = _struct(kind, defs)
        return {"$ref": f"#/$defs/{kind.__name__}"}
    if kind is Any:  # a free JSON value (a transform's `parameters`)
        return {}
    return {"type": _SIMPLE[kind]}


def _struct(struct: type[msgspec.Struct], defs: dict[str, Any]) -> dict[str, Any]:
    properties, required = {}, []
    for f in msgspec.structs.fields(struct):
        prop = _type(f.type, defs)
        description = next((m.description for m in metas(f.type) if m.description), None)
        if description:
            prop["description"] = description
        if not all(m is type(None) or _is_struct(m) for m in members(bare(f.type))):
            prop["title"] = f.encode_name.title()
        if f.required:
            required.append(f.encode_name)
        elif f.default is not msgspec.NODEFAULT:
            prop["default"] = f.default
        properties[f.encode_name] = prop
    out: dict[str, Any] = {"additionalProperties": False, "properties": properties,
                           "title": struct.__name__, "type": "object"}
    if required:
        out["required"] = required
    if struct.__doc__:
        out["description"] = inspect.cleandoc(struct.__doc__)
    return out


def metas(kind: Any) -> list[msgspec.Meta]:
    """The `Meta` of an `Annotated` type (its own, not its members')."""
    if typing.get_origin(kind) is not typing.Annotated:
        return []
    return [m for m in typing.get_args(kind)[1:] if isinstance(m, msgspec.Meta)]


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)
