"""Durations as the specs write them: `500ms`, `5s`, `1m`, `1m30s`, `1.5s`.

Parsed exactly (decimal fractions, never floats), so a 309-digit duration is a range
error like any other long one, not an overflow.
"""

from __future__ import annotations

import re
from functools import lru_cache

from reconciler.durationsyntax import duration_terms

_PART = re.compile(r"([0-9]+)(?:\.([0-9]+))?(ms|s|m|h)")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
MAX_MS = 24 * 3_600_000
# More digits than any duration up to 24h needs in milliseconds, with room for zeros.
_MAX_DIGITS = 40


class DurationError(ValueError):
    """The text is not a duration at all (its shape is wrong)."""


class DurationRangeError(ValueError):
    """The text is a duration, but not whole milliseconds or longer than 24h."""


@lru_cache(maxsize=1024)  # a tree repeats a few durations: one int object each
def parse_duration_ms(text: str) -> int:
    """Whole milliseconds; no unit is a DurationError, sub-millisecond or over 24h a
    DurationRangeError (both say what to write instead)."""
    if not text.strip():
        raise DurationError("empty duration; write e.g. 500ms, 5s or 1m")
    terms = duration_terms(text, _PART)
    if terms is None:
        raise DurationError(f"{text!r} is not a duration; write e.g. 500ms, 5s, 1m or 1m30s")
    # Exact integer arithmetic: total = numerator / 10**scale milliseconds.
    numerator, scale = 0, 0
    too_long = False
    for whole, frac, unit in terms:
        if len(whole.lstrip("0")) > _MAX_DIGITS or len(frac) > _MAX_DIGITS:
            too_long = too_long or len(whole.lstrip("0")) > _MAX_DIGITS
            if len(frac) > _MAX_DIGITS:
                frac = frac[:_MAX_DIGITS] + "1"  # keeps it not whole, stays bounded
            if too_long:
                continue
        part_scale = len(frac)
        value = (int(whole) * 10**part_scale + (int(frac) if frac else 0)) * _UNITS_MS[unit]
        if part_scale > scale:
            numerator *= 10 ** (part_scale - scale)
            scale = part_scale
        numerator += value * 10 ** (scale - part_scale)
    if too_long or numerator > MAX_MS * 10**scale:
        raise DurationRangeError(f"{_short(text)} is longer than 24h")
    whole_ms, rest = divmod(numerator, 10**scale)
    if rest:
        raise DurationRangeError(f"{_short(text)} is not a whole number of milliseconds")
    return int(whole_ms)


def _short(text: str) -> str:
    """The value as written, shortened when it is absurdly long."""
    return repr(text) if len(text) <= 40 else repr(text[:20] + "..." + text[-8:])


def age_text(seconds: int | None) -> str:
    """An age or a time left for people: "45 s", "12 min", "5 h", "6 d"; "unknown"."""
    if seconds is None:
        return "unknown"
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"
