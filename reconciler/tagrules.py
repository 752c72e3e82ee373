"""The service's rules for a topic's `tags` (tag key -> tag value), as pure functions:
`validate` reports them at the key's line. No google import.

Sources (docs/spec-reference.md cites them for users): googleapis
`google/pubsub/v1/pubsub.proto` (`Topic.tags`: "Input only. Immutable. Tag keys/values
directly bound to this resource. For example: "123/environment": "production"");
Resource Manager v3's `GetNamespacedTagKeyRequest` (a namespaced key is
`{parentId}/{tagKeyShort}`: an organization's numeric ID or a project's ID, then the
key's short name) and `TagKey.short_name` / `TagValue.short_name` ("1-63 characters,
beginning and ending with an alphanumeric character ([a-z0-9A-Z]) with dashes (-),
underscores (_), dots (.), and alphanumerics between").
"""

from __future__ import annotations

import re

_SHORT = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?"
_PARENT = r"(?:[0-9]+|[a-z][a-z0-9-]{4,28}[a-z0-9])"  # an organization's ID, a project's
_KEY = re.compile(rf"{_PARENT}/{_SHORT}")
_VALUE = re.compile(_SHORT)


def tag_key_problem(key: str) -> str | None:
    """Why `key` is not a namespaced tag key, or None."""
    if _KEY.fullmatch(key):
        return None
    return (
        f"tag key {key[:80]!r} is not a namespaced tag key: write PARENT/SHORT_NAME, "
        "PARENT an organization's numeric ID or a project's ID (`123/environment`, "
        "`my-project/environment`), SHORT_NAME 1-63 letters, digits, `-`, `_` and `.`, "
        "starting and ending with a letter or digit"
    )


def tag_value_problem(key: str, value: str) -> str | None:
    """Why `value` is not a tag value's short name, or None."""
    if _VALUE.fullmatch(value):
        return None
    return (
        f"tag value {value[:80]!r} of {key[:80]!r} is not a tag value's short name: 1-63 "
        "letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit "
        "(`production`; the short name, not `tagValues/...` nor `PARENT/KEY/VALUE`)"
    )
