"""The syntax of a written duration: consecutive terms of digits, an optional decimal
fraction and a unit (`1h30m`, `1.5s`). The specs' timeouts (reconciler/spec/
durations.py) and a topic's retention (reconciler/topicrules.py, which adds days)
read durations through this one function; each gives its own units and limits."""

from __future__ import annotations

import re


def duration_terms(text: str, part: re.Pattern[str]) -> list[tuple[str, str, str]] | None:
    """The terms (digits, fraction digits without trailing zeros, unit) of a duration
    written as consecutive terms of `part`, a pattern of three groups (`1h30m`: two
    terms), or None when the text is not one."""
    s = text.strip()
    terms, pos = [], 0
    for match in part.finditer(s):
        if match.start() != pos:
            break
        whole, frac, unit = match.groups()
        terms.append((whole, (frac or "").rstrip("0"), unit))
        pos = match.end()
    return terms if pos == len(s) and pos else None
