"""Page sizes and page tokens of the List methods: a token is the last name returned,
base64url-encoded, and must name something under the listed parent."""

from __future__ import annotations

import base64
import binascii

from reconciler.localserver.status import invalid

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def page_size(requested: int) -> int:
    if requested < 0:
        raise invalid("page_size must not be negative.")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def decode_token(token: str, prefix: str) -> str:
    """The name a page token continues after ("" for the first page)."""
    if not token:
        return ""
    try:
        after = base64.urlsafe_b64decode(token.encode("ascii")).decode()
    except (binascii.Error, UnicodeError, ValueError):
        raise invalid(f"Invalid page token {token!r}.") from None
    if not after.startswith(prefix):
        raise invalid(f"Invalid page token {token!r}.")
    return after


def encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode("ascii")
