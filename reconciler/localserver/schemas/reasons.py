"""How a parser's exception reads inside a refusal: on one line, bounded."""

from __future__ import annotations

MAX_CHARS = 300


def short(exc: BaseException) -> str:
    """The exception's text on one line, at most MAX_CHARS characters (its type's
    name when it has none)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."
