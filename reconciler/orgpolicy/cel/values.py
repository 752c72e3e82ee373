"""The values of a resource a condition reads: found by path, keyed for the memo,
projected to what the condition reads, and the Duration/Timestamp fields converted for
their typed reading."""

from __future__ import annotations

import datetime as dt
import marshal
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

# Fields of a Pub/Sub topic whose proto type is Duration or Timestamp (REST JSON
# gives them as strings: "604800s", "2026-01-01T00:00:00Z").
DURATION_FIELDS = ("messageRetentionDuration",)
TIMESTAMP_FIELDS = ("ingestionDataSourceSettings.cloudStorage.minimumObjectCreateTime",)

_DURATION = re.compile(r"(-?)(\d+)(?:\.(\d{1,9}))?s")


def _duration(text: str) -> dt.timedelta | None:
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    sign, seconds, fraction = match.groups()
    micros = int((fraction or "0").ljust(9, "0")[:6])
    value = dt.timedelta(seconds=int(seconds), microseconds=micros)
    return -value if sign else value


def _timestamp(text: str) -> dt.datetime | None:
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


TYPED = {**{p: ("duration", _duration) for p in DURATION_FIELDS},
          **{p: ("timestamp", _timestamp) for p in TIMESTAMP_FIELDS}}
ABSENT = object()


@lru_cache(maxsize=1024)
def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split(".")) if path else ()


def lookup(resource: Mapping[str, Any], path: str) -> Any:
    value: Any = resource
    for part in _parts(path):
        if type(value) is dict:  # the common case, without the ABC check
            value = value.get(part, ABSENT)
            if value is ABSENT:
                return ABSENT
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return ABSENT
    return value


_SCALARS = frozenset({str, bool, int, float, type(None)})


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a JSON value (the memo's key). Plain dicts of strings,
    the common case (labels), take the short way."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        if all(type(v) is str for v in value.values()):
            return tuple(sorted(value.items()))
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return ("[", *map(_freeze, value))
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("[", *map(_freeze, value))
    return value


def freeze_fields(
    resource: Mapping[str, Any], paths: tuple[str, ...],
    keys: dict[tuple[str, ...], Any] | None = None,
) -> Any:
    """A hashable key for the values of `paths` in `resource` (a memo's key): equal
    keys mean equal values. It is the values' `marshal` encoding (version 0: no
    references and no interning marks, so it depends on the values alone; maps in
    their order: the same map in another order is only a miss), or, for a value
    marshal does not take, the values frozen. `keys` caches it per `paths` for the
    next caller on the same resource."""
    if keys is not None:
        known = keys.get(paths)
        if known is not None:
            return known
    values: list[Any] = []
    for path in paths:
        value = lookup(resource, path) if path else resource
        values.append(() if value is ABSENT else (value,))  # absent is not null
    try:
        key: Any = marshal.dumps(tuple(values), 0)
    except ValueError:
        key = tuple(_freeze(v) for v in values)
    if keys is not None:
        keys[paths] = key
    return key


def project(resource: Mapping[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """Only what the condition reads (each path's value whole), so the library
    converts the least."""
    if "" in paths:
        return dict(resource)
    out: dict[str, Any] = {}
    for path in paths:
        source: Any = resource
        target = out
        parts = path.split(".")
        for k, part in enumerate(parts):
            if not isinstance(source, Mapping) or part not in source:
                break
            source = source[part]
            if k == len(parts) - 1 or not isinstance(source, Mapping):
                target[part] = source
                break
            nested = target.get(part)
            if not isinstance(nested, dict):
                nested = target[part] = {}
            target = nested
    return out


