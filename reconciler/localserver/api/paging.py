"""Page sizes and page tokens of the List methods: a token is the last name returned,
base64url-encoded, and must name something under the listed parent."""

from __future__ import annotations

import base64
import binascii
import bisect

from reconciler.localserver.api.status import invalid, shown

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
        raise invalid(f"Invalid page token {shown(token)}.") from None
    if not after.startswith(prefix):
        raise invalid(f"Invalid page token {shown(token)}.")
    return after


def token_offset(token: str, digits: str) -> int:
    """The position a page token carries as `digits`; INVALID_ARGUMENT unless they
    are ASCII digits of a position (str.isdigit() also takes "²", which int() then
    refuses, and int() refuses more than 4,300 digits)."""
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        raise invalid(f"Invalid page token {shown(token)}.")
    return int(digits)


def encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode("ascii")


def page_after(names: list[str], after: str, limit: int) -> tuple[list[str], str]:
    """Up to `limit` of the sorted `names` after `after`, and the last one returned
    when more follow (else "")."""
    start = bisect.bisect_right(names, after) if after else 0
    page = names[start : start + limit]
    more = start + limit < len(names)
    return page, (page[-1] if more and page else "")
