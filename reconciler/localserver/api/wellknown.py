"""Durations and timestamps a request carries, checked before anything is stored: the
binary protobuf format accepts any seconds and nanos, but the JSON form (the REST
face, gcloud, Terraform) cannot express one out of range, so a stored one would make
every later read of the resource fail. Refused as INVALID_ARGUMENT, naming the field.
"""

from __future__ import annotations

from typing import Any

from reconciler.localserver.api.protos import is_repeated
from reconciler.localserver.api.status import invalid

_DURATION = "google.protobuf.Duration"
_TIMESTAMP = "google.protobuf.Timestamp"
MAX_DURATION_S = 315_576_000_000  # 10,000 years, google/protobuf/duration.proto
MIN_TIMESTAMP_S = -62_135_596_800  # 0001-01-01T00:00:00Z, google/protobuf/timestamp.proto
MAX_TIMESTAMP_S = 253_402_300_799  # 9999-12-31T23:59:59Z
MAX_NANOS = 999_999_999


def check_times(message: Any) -> None:
    """INVALID_ARGUMENT for the first Duration or Timestamp in `message` (at any depth)
    that is out of its type's range."""
    problem = _problem(message, "")
    if problem is not None:
        raise invalid(problem)


def _problem(message: Any, path: str) -> str | None:
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        name = f"{path}.{field.name}" if path else field.name
        kind = field.message_type.full_name
        if field.message_type.GetOptions().map_entry:
            entry_value = field.message_type.fields_by_name["value"]
            items = list(value.values()) if entry_value.message_type is not None else []
        elif is_repeated(field):
            items = list(value)
        else:
            items = [value]
        for item in items:
            found = (
                _duration_problem(item, name)
                if kind == _DURATION
                else _timestamp_problem(item, name)
                if kind == _TIMESTAMP
                else _problem(item, name)
            )
            if found is not None:
                return found
    return None


def _duration_problem(value: Any, name: str) -> str | None:
    seconds, nanos = value.seconds, value.nanos
    if (
        abs(seconds) <= MAX_DURATION_S
        and abs(nanos) <= MAX_NANOS
        and not (seconds > 0 > nanos or seconds < 0 < nanos)
    ):
        return None
    return (
        f"Invalid value at '{name}' ({_DURATION}): seconds {seconds}, nanos {nanos} is no "
        f"duration (seconds within ±{MAX_DURATION_S:,}, nanos within ±{MAX_NANOS:,} and of "
        "the sign of seconds)."
    )


def _timestamp_problem(value: Any, name: str) -> str | None:
    seconds, nanos = value.seconds, value.nanos
    if MIN_TIMESTAMP_S <= seconds <= MAX_TIMESTAMP_S and 0 <= nanos <= MAX_NANOS:
        return None
    return (
        f"Invalid value at '{name}' ({_TIMESTAMP}): seconds {seconds}, nanos {nanos} is no "
        "time between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z."
    )
