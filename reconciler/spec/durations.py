"""Durations as the specs write them: `500ms`, `5s`, `1m`, `1m30s`, `1.5s`."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
MAX_MS = 24 * 3_600_000


class DurationError(ValueError):
    pass


def parse_duration_ms(text: str) -> int:
    """Whole milliseconds; anything else (no unit, sub-millisecond) is an error."""
    s = text.strip()
    if not s:
        raise DurationError("empty duration; write e.g. 500ms, 5s or 1m")
    pos = 0
    total = 0.0
    for match in _PART.finditer(s):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS_MS[match.group(2)]
        pos = match.end()
    if pos != len(s) or pos == 0:
        raise DurationError(f"{text!r} is not a duration; write e.g. 500ms, 5s, 1m or 1m30s")
    if abs(total - round(total)) > 1e-9:
        raise DurationError(f"{text!r} is not a whole number of milliseconds")
    if total > MAX_MS:
        raise DurationError(f"{text!r} is longer than 24h")
    return round(total)
