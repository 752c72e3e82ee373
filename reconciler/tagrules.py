"""The service's rules for a topic's `tags` (tag key -> tag value), as pure functions:
`validate` reports them at the key's line. No google import.

Sources (docs/spec-reference.md cites them for users): googleapis
`google/pubsub/v1/pubsub.proto` (`Topic.tags`: "Input only. Immutable. Tag keys/values
directly bound to this resource. For example: "123/environment": "production"");
Resource Manager v3's `GetNamespacedTagKeyRequest` (a namespaced key is
`{parentId}/{tagKeyShort}`: an organization's numeric ID or a project's ID, then the
key's short name; the ID forms `tagKeys/{id}` and `tagValues/{id}` are how
`TagKey.name` and `TagBinding.tag_value` name them) and `TagKey.short_name` /
`TagValue.short_name` ("1-63 characters, beginning and ending with an alphanumeric
character ([a-z0-9A-Z]) with dashes (-), underscores (_), dots (.), and
alphanumerics between").
"""

from __future__ import annotations

import re

_SHORT = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?"
_PARENT = r"(?:[0-9]+|[a-z][a-z0-9-]{4,28}[a-z0-9])"  # an organization's ID, a project's
_KEY = re.compile(rf"{_PARENT}/{_SHORT}")
_VALUE = re.compile(_SHORT)
# The ID form Resource Manager names keys and values by (`TagKey.name`
# `tagKeys/{tag_key_id}`, `TagBinding.tag_value` `tagValues/{id}`): a key given so
# takes a value given so (the local server binds either form).
_KEY_ID = re.compile(r"tagKeys/[0-9]+")
_VALUE_ID = re.compile(r"tagValues/[0-9]+")


def tag_key_problem(key: str) -> str | None:
    """Why `key` is not a namespaced tag key, or None."""
    if _KEY.fullmatch(key) or _KEY_ID.fullmatch(key):
        return None
    return (
        f"tag key {key[:80]!r} is not a namespaced tag key: write PARENT/SHORT_NAME, "
        "PARENT an organization's numeric ID or a project's ID (`123/environment`, "
        "`my-project/environment`), SHORT_NAME 1-63 letters, digits, `-`, `_` and `.`, "
        "starting and ending with a letter or digit; or a key's ID, `tagKeys/123`"
    )


def tag_value_problem(key: str, value: str) -> str | None:
    """Why `value` is not a tag value's short name (for a namespaced key) or a tag
    value's ID (for a key's ID), or None."""
    if _KEY_ID.fullmatch(key):
        if _VALUE_ID.fullmatch(value):
            return None
        return (
            f"tag value {value[:80]!r} of {key[:80]!r} is not a tag value's ID: a key "
            "given by its ID takes a value given by its ID, `tagValues/456`"
        )
    if _VALUE.fullmatch(value):
        return None
    return (
        f"tag value {value[:80]!r} of {key[:80]!r} is not a tag value's short name: 1-63 "
        "letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit "
        "(`production`; the short name, not `tagValues/...` nor `PARENT/KEY/VALUE`)"
    )
