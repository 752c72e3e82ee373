"""Plan documents as JSON text: the canonical form the digest is computed over, and
the indented form of plan files and `--format json`.

orjson writes both (a 50,000-topic plan's canonical form is 62 MB: 0.15 s instead of
0.6 s, the indented one 0.85 s instead of 2.8 s), byte for byte what the standard
library's `json.dumps` writes with the same settings, so digests do not depend on
which of the two made them (tests/plan/test_jsonform.py holds them together, every
code point included). A value orjson would write differently or refuses (an integer
beyond 64 bits, a key that is not text, a dataclass) goes to `json` instead. Plan
documents hold no floats (the one type the two spell differently for some values:
`1e+16` against `1e16`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Anything but JSON types raises in orjson instead of being written its own way. The
# subclasses of str, int, dict and list are written as what they are (the plan's values
# are read-only dicts and lists: reconciler/frozen.py), as `json` writes them.
_PLAIN_ONLY = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def canonical_bytes(data: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8 (non-ASCII characters as themselves)."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | _PLAIN_ONLY)
    except TypeError:  # orjson.JSONEncodeError
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")


def indented_text(data: Any) -> str:
    """Two-space indentation, keys in their order, a final newline."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | _PLAIN_ONLY).decode() + "\n"
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
