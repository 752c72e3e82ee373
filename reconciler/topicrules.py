"""The service's rules for a topic's retention, encryption key and schema settings, as
pure functions: the spec checks report them as diagnostics at the spec line, the local
server answers them as INVALID_ARGUMENT, so both refuse exactly the same values.

Sources (docs/spec-reference.md and docs/local-server.md cite them for users): the
`Topic` message of googleapis `google/pubsub/v1/pubsub.proto`:
`message_retention_duration` "cannot be more than 31 days or less than 10 minutes";
`kms_key_name` "the expected format is `projects/*/locations/*/keyRings/*/cryptoKeys/*`";
`SchemaSettings.schema` "format is `projects/{project}/schemas/{schema}`", its
`encoding` JSON or BINARY (ENCODING_UNSPECIFIED is refused, as Google's emulator
answers "Invalid schema encoding provided"). A schema ID follows the naming rules of a
topic ID (the resource-name rules the API reference points to). Durations are the
protobuf `Duration`'s JSON form, seconds with up to nine fractional digits and `s`
("172800s", "600.5s"), which is how the service writes them back; a spec may also
write days, hours, minutes and milliseconds (`2d`, `1h30m`), as gcloud accepts.
"""

from __future__ import annotations

import re
from functools import lru_cache

from reconciler.durationsyntax import duration_terms
from reconciler.names import project_id_problem, topic_id_problem

MIN_RETENTION_S = 10 * 60
MAX_TOPIC_RETENTION_S = 31 * 24 * 3600
NANOS = 1_000_000_000
ENCODINGS = ("JSON", "BINARY")
KMS_KEY_FORMAT = "projects/P/locations/L/keyRings/R/cryptoKeys/K"
SCHEMA_FORMAT = "projects/P/schemas/S"
# The service writes back a topic whose schema was deleted with this schema name.
DELETED_SCHEMA = "_deleted-schema_"

_PART = re.compile(r"([0-9]+)(?:\.([0-9]+))?(d|h|ms|m|s)")
_UNIT_NS = {"d": 86_400 * NANOS, "h": 3_600 * NANOS, "m": 60 * NANOS, "s": NANOS,
            "ms": 1_000_000}
_MAX_DIGITS = 30  # far more than 31 days in nanoseconds needs


class DurationProblem(ValueError):
    """The text is not a duration the service can hold (its message says why)."""


@lru_cache(maxsize=256)  # a tree repeats a few retentions
def parse_duration_ns(text: str) -> int:
    """Whole nanoseconds of `2d`, `48h`, `1h30m`, `172800s`, `600.5s`; a
    DurationProblem for anything else (no unit, finer than a nanosecond, absurdly
    long). Exact: decimal fractions are read as integers, never as floats."""
    terms = duration_terms(text, _PART)
    if terms is None:
        raise DurationProblem(
            f"{_short(text)} is not a duration; write e.g. 7d, 48h, 1h30m or 600s"
        )
    total = 0
    for whole, frac, unit in terms:
        if len(whole.lstrip("0")) > _MAX_DIGITS or len(frac) > _MAX_DIGITS:
            raise DurationProblem(f"{_short(text)} is too long for a duration")
        scale = 10 ** len(frac)
        value, rest = divmod((int(whole) * scale + int(frac or "0")) * _UNIT_NS[unit], scale)
        if rest:
            raise DurationProblem(
                f"{_short(text)} is finer than a nanosecond, which a duration cannot hold"
            )
        total += value
    return total


def duration_text(nanos: int) -> str:
    """The service's form of a duration: seconds, with 3, 6 or 9 fractional digits
    when it has a fraction (`172800s`, `600.500s`), as protobuf's JSON writes it."""
    seconds, frac = divmod(nanos, NANOS)
    if not frac:
        return f"{seconds}s"
    digits = f"{frac:09d}"
    for width in (3, 6):
        if digits[width:] == "0" * (9 - width):
            digits = digits[:width]
            break
    return f"{seconds}.{digits}s"


def written_duration(canonical: str) -> str:
    """A duration in the service's form as a spec writes it: in the largest unit that
    holds it whole (`172800s` -> `2d`, `5400s` -> `90m`), else in seconds (`600.5s`);
    it reads back as the same duration."""
    nanos = parse_duration_ns(canonical)
    for unit in ("d", "h", "m"):
        count, rest = divmod(nanos, _UNIT_NS[unit])
        if not rest:
            return f"{count}{unit}"
    text = duration_text(nanos)
    whole, _, frac = text[:-1].partition(".")
    return f"{whole}.{frac.rstrip('0')}s" if frac.rstrip("0") else f"{whole}s"


def retention_problem(nanos: int, written: str = "") -> str | None:
    """A topic's message retention outside the service's range, said with the value
    (as `written`, and in seconds) and the range."""
    if MIN_RETENTION_S * NANOS <= nanos <= MAX_TOPIC_RETENTION_S * NANOS:
        return None
    seconds = duration_text(nanos)
    shown = seconds if written in ("", seconds) else f"{_short(written)} ({seconds})"
    return (
        f"{shown} is out of range: a topic retains messages "
        f"{MIN_RETENTION_S}s (10 minutes) to {MAX_TOPIC_RETENTION_S}s (31 days)"
    )


def canonical_retention(text: str) -> str:
    """A declared retention in the service's form (`2d` -> `172800s`); a
    DurationProblem when it is no duration or out of the service's range."""
    nanos = parse_duration_ns(text)
    if problem := retention_problem(nanos, text):
        raise DurationProblem(problem)
    return duration_text(nanos)


def split_kms_key(name: str) -> tuple[str, str, str, str] | None:
    """(project, location, key ring, key) of a well-formed key name, else None."""
    parts = name.split("/")
    if len(parts) != 8 or [parts[i] for i in (0, 2, 4, 6)] != [
        "projects", "locations", "keyRings", "cryptoKeys"
    ]:
        return None
    if not all(parts[i] for i in (1, 3, 5, 7)) or any(c.isspace() for c in name):
        return None
    return parts[1], parts[3], parts[5], parts[7]


def kms_key_problem(name: str) -> str | None:
    """A key name the service refuses: not of the form projects/P/locations/L/
    keyRings/R/cryptoKeys/K (a key version, a key ring or a bare ID included)."""
    if split_kms_key(name) is None:
        return f"kmsKeyName {name!r} is not a Cloud KMS key name: expected {KMS_KEY_FORMAT}"
    return None


def schema_name_problem(name: str) -> str | None:
    """A schema name that is not `projects/P/schemas/S` with a valid project ID and
    schema ID (a revision, `S@REVISION`, is not a schema name)."""
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != "schemas":
        return f"schema {name!r} is not a schema name: expected {SCHEMA_FORMAT}"
    problem = project_id_problem(parts[1]) or topic_id_problem(parts[3])
    if problem:
        return f"schema {name!r}: " + problem.replace("topic ID", "schema ID", 1)
    return None


def encoding_problem(encoding: str) -> str | None:
    if encoding in ENCODINGS:
        return None
    return f"schema encoding {encoding!r} is not one of {', '.join(ENCODINGS)}"


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:20] + "..." + text[-8:])
