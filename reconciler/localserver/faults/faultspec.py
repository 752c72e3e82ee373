"""The command-line form of a fault rule (`--fault SPEC`), checked strictly: an
unknown method, key or status code, or an impossible value, is refused at start with
the valid choices (and a did-you-mean for a near miss), never accepted silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reconciler.localserver.api.status import grpc_status_from_name, suggestion
from reconciler.localserver.faults.injection import check_method, make_rule

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|us)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds from "0.5", "500ms", "2s"."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (use e.g. 2s, 500ms or 0.5)")
    value = float(m.group(1))
    unit = m.group(2) or "s"
    return value / {"s": 1.0, "ms": 1000.0, "us": 1_000_000.0}[unit]


_SPEC_KEYS = {
    "delay",
    "delay_max",
    "tail_fraction",
    "tail_delay",
    "error",
    "error_fraction",
    "error_next",
    "resource",
    "message",
}


def parse_fault_spec(spec: str, methods: Iterable[str] | None = None) -> dict[str, object]:
    """Keyword arguments for `Faults.add` from the command-line form

        METHOD[:key=value,key=value...]

    e.g. "Publish:delay=5ms,tail_fraction=0.02,tail_delay=2s",
    "UpdateTopic:error=PERMISSION_DENIED,resource=projects/p/topics/t",
    "*:delay=20ms", "GetTopic:error=NOT_FOUND,error_next=1". With `methods`, the
    method must be one of them (or "*"). Every check `Faults.add` makes is made here
    too, so a spec that parses is a rule that can fire.
    """
    method, _, rest = spec.partition(":")
    method = method.strip()
    if not method:
        raise ValueError(f"fault {spec!r} needs a method name before ':' (or '*')")
    kwargs: dict[str, object] = {"method": method}
    try:
        check_method(method, methods)
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, value = _item(item)
            if key in kwargs:
                raise ValueError(f"{key} is given twice")
            kwargs[key] = _value(key, value)
        make_rule(**kwargs, methods=methods)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"fault {spec!r}: {exc}") from None
    return kwargs


def _item(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in _SPEC_KEYS:
        keys = sorted(_SPEC_KEYS)
        raise ValueError(
            f"{item!r} is not key=value with a known key{suggestion(key, keys)} "
            f"(keys: {', '.join(keys)})"
        )
    return key, value.strip()


def _value(key: str, value: str) -> object:
    if key in ("delay", "delay_max", "tail_delay"):
        return parse_duration(value)
    if key in ("tail_fraction", "error_fraction"):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{key} must be a number between 0 and 1, got {value!r}") from None
    if key == "error_next":
        if not value.isdigit():
            raise ValueError(f"error_next must be a whole number, got {value!r}")
        return int(value)
    if key == "error":
        grpc_status_from_name(value)  # refuses unknown codes, with did-you-mean
        return value.strip().upper()
    if not value:
        raise ValueError(f"{key} needs a value")
    return value
