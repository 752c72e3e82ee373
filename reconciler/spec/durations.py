"""Durations as the specs write them: `500ms`, `5s`, `1m`, `1m30s`, `1.5s`.

Parsed exactly (decimal fractions, never floats), so a 309-digit duration is a range
error like any other long one, not an overflow.
"""

from __future__ import annotations

import re
from fractions import Fraction

_PART = re.compile(r"([0-9]+)(?:\.([0-9]+))?(ms|s|m|h)")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
MAX_MS = 24 * 3_600_000
# More digits than any duration up to 24h needs in milliseconds, with room for zeros.
_MAX_DIGITS = 40


class DurationError(ValueError):
    """The text is not a duration at all (its shape is wrong)."""


class DurationRangeError(ValueError):
    """The text is a duration, but not whole milliseconds or longer than 24h."""


def parse_duration_ms(text: str) -> int:
    """Whole milliseconds; no unit is a DurationError, sub-millisecond or over 24h a
    DurationRangeError (both say what to write instead)."""
    s = text.strip()
    if not s:
        raise DurationError("empty duration; write e.g. 500ms, 5s or 1m")
    pos = 0
    total = Fraction(0)
    too_long = False
    for match in _PART.finditer(s):
        if match.start() != pos:
            break
        whole, frac, unit = match.groups()
        pos = match.end()
        if len(whole.lstrip("0")) > _MAX_DIGITS:
            too_long = True
            continue
        digits = (frac or "")[:_MAX_DIGITS]
        number = Fraction(int(whole)) + (
            Fraction(int(digits), 10 ** len(digits)) if digits else 0
        )
        total += number * _UNITS_MS[unit]
    if pos != len(s) or pos == 0:
        raise DurationError(f"{text!r} is not a duration; write e.g. 500ms, 5s, 1m or 1m30s")
    if too_long or total > MAX_MS:
        raise DurationRangeError(f"{_short(text)} is longer than 24h")
    if total.denominator != 1 or (frac_digits_lost(s)):
        raise DurationRangeError(f"{_short(text)} is not a whole number of milliseconds")
    return int(total)


def frac_digits_lost(text: str) -> bool:
    """True when a fraction has non-zero digits beyond what was parsed exactly."""
    return any(
        (m.group(2) or "")[_MAX_DIGITS:].strip("0") for m in _PART.finditer(text)
    )


def _short(text: str) -> str:
    """The value as written, shortened when it is absurdly long."""
    return repr(text) if len(text) <= 40 else repr(text[:20] + "..." + text[-8:])
