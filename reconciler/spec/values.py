"""Small helpers for messages about spec values (a did-you-mean, a value's type name),
shared by the loader and the shape check (`shape.py`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {
        str: "string", int: "number", float: "number", list: "list", dict: "mapping"
    }.get(type(value), type(value).__name__)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""


_MISSING = object()


def value_at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if not (in_dict or in_list):
            return _MISSING
        data = data[part]
    return data
