"""A REST request's JSON body read into its request message, as Google's REST front
end reads it: INVALID_ARGUMENT for a body that is not JSON (bytes that are not UTF-8
and nesting too deep to read included), and for a `bytes` field whose value is not
base64 (`Invalid value at 'messages[0].data' (TYPE_BYTES), Base64 decoding failed for
"..."`, the service's words). protobuf's own JSON reader decodes base64 leniently,
dropping what is not in the alphabet, so "!!!" would be published as no data at
all: every bytes field is checked first.

Base64 here is what Google's front ends take: the standard or the URL-safe
alphabet, padding optional (Google's emulator answers the same for each case).

An update mask (`google.protobuf.FieldMask`, a string in JSON) is taken in
lowerCamelCase, as protobuf's JSON form writes it and gcloud and Google's REST clients
send it, and in snake_case, as Google's emulator also takes it ("update_mask":
"ack_deadline_seconds"); protobuf's own reader refuses the second.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from reconciler.localserver.api.protos import is_repeated
from reconciler.localserver.api.status import invalid, shown

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*=*")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
FIELD_MASK = "google.protobuf.FieldMask"


def parse_body(body: bytes, message: Any) -> None:
    """Fill `message` from the JSON `body`; INVALID_ARGUMENT saying what is wrong."""
    try:
        document = json.loads(body, object_pairs_hook=_unique)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise invalid(f"Invalid JSON payload received. {exc}") from None
    if isinstance(document, dict):
        problem = _bytes_problem(document, message.DESCRIPTOR, "")
        if problem is not None:
            raise invalid(problem)
        for key, value in document.items():
            field = message.DESCRIPTOR.fields_by_camelcase_name.get(key)
            field = field or message.DESCRIPTOR.fields_by_name.get(key)
            kind = field.message_type if field is not None else None
            if kind is not None and kind.full_name == FIELD_MASK and isinstance(value, str):
                document[key] = camel_mask(value)
    try:
        json_format.ParseDict(document, message)
    except (json_format.ParseError, RecursionError) as exc:
        raise invalid(f"Invalid JSON payload received. {exc}") from None


def camel_mask(text: str) -> str:
    """A FieldMask's JSON string with its snake_case path segments in lowerCamelCase
    (others left as they are: protobuf's reader judges them)."""
    return ",".join(
        ".".join(_camel(part) if _SNAKE.fullmatch(part) else part for part in path.split("."))
        for path in text.split(",")
    )


def _camel(snake: str) -> str:
    first, *rest = snake.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"Duplicate key {shown(key)}")
        out[key] = value
    return out


def is_base64(text: str) -> bool:
    """Whether Google's front ends read `text` as base64 (see the module docstring)."""
    if not _BASE64.fullmatch(text):
        return False
    return len(text.rstrip("=")) % 4 != 1


def _bytes_problem(document: dict[str, Any], descriptor: Descriptor, path: str) -> str | None:
    """The first bytes field of `document` (a JSON object for `descriptor`) whose
    value is not base64, in the service's words; None when all are. Values of the
    wrong JSON type are left to protobuf's reader, which names them."""
    for key, value in document.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None:
            continue
        name = f"{path}.{field.name}" if path else field.name
        if field.type == FieldDescriptor.TYPE_BYTES:
            values = value if is_repeated(field) and isinstance(value, list) else [value]
            for i, item in enumerate(values):
                if isinstance(item, str) and not is_base64(item):
                    return _not_base64(f"{name}[{i}]" if values is value else name, item)
        elif field.message_type is not None and not _well_known(field.message_type):
            problem = _nested(field, value, name)
            if problem is not None:
                return problem
    return None


def _nested(field: FieldDescriptor, value: Any, name: str) -> str | None:
    target = field.message_type
    if target.GetOptions().map_entry:
        inner = target.fields_by_name["value"]
        if not isinstance(value, dict):
            return None
        for key, item in value.items():
            if inner.type == FieldDescriptor.TYPE_BYTES and isinstance(item, str):
                if not is_base64(item):
                    return _not_base64(f"{name}[{key}]", item)
            elif inner.message_type is not None and isinstance(item, dict):
                problem = _bytes_problem(item, inner.message_type, f"{name}[{key}]")
                if problem is not None:
                    return problem
        return None
    items = value if is_repeated(field) and isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if isinstance(item, dict):
            where = f"{name}[{i}]" if items is value else name
            problem = _bytes_problem(item, target, where)
            if problem is not None:
                return problem
    return None


def _well_known(descriptor: Descriptor) -> bool:
    """google.protobuf types have JSON forms of their own (Duration as "3s", ...)."""
    return bool(descriptor.full_name.startswith("google.protobuf."))


def _not_base64(where: str, text: str) -> str:
    """The service's refusal of a bytes value that is not base64 (the value cut short
    past 80 characters)."""
    cut = text if len(text) <= 80 else text[:80] + "..."
    return f"Invalid value at '{where}' (TYPE_BYTES), Base64 decoding failed for {json.dumps(cut)}"
