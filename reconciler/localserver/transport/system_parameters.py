"""Google's system parameters on the REST face: the query parameters every Google API
takes beside a method's own fields (Google's "System parameters" page; both spellings,
`$alt` and `alt`: the `$` keeps them apart from request fields), read into how the
answer is rendered; the others are the request's fields.

What each does here:

- `$alt` / `alt`: `json` (the default) or `json;enum-encoding=int` (enums answered as
  numbers: what Google's client libraries ask for); `media`, `proto`, `sse` are
  refused (this server answers JSON only).
- `$prettyPrint` / `prettyPrint`: `true` (the default, indented) or `false` (compact);
  `1` and `0` too (the Node client sends `$prettyPrint=0`).
- `$fields` / `fields` (or the `X-Goog-FieldMask` header): a partial response
  (`field_selection`).
- `$outputDefaults`: `true` renders fields holding their default value too.
- `$.xgafv` (`$apiFormat`): the error format, `1` or `2`; both get the one shape this
  server answers errors in (`{"error": {"code", "message", "status"}}`).
- `$ct`: the request body's content type; JSON only.
- `$callback` / `callback` (JSONP) is refused: it would turn a client's text into
  script in the answer.
- `passwd` / `password` are refused: reserved so that no password travels in a URL.
- `$key` / `key`, `quotaUser`, `access_token`, `oauth_token`, `$userIp` / `userIp`,
  `$apiVersion`, `$unique`, `upload_protocol`, `uploadType`: accepted and ignored (no
  authentication, quota or media upload here).

A name given twice with different values, in either spelling, is INVALID_ARGUMENT.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from google.protobuf import json_format

from reconciler.localserver.api.status import invalid
from reconciler.localserver.transport import field_selection

# Each system parameter by its canonical name, with every query spelling of it.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "alt": ("$alt", "alt"),
    "prettyPrint": ("$prettyPrint", "prettyPrint"),
    "fields": ("$fields", "fields"),
    "outputDefaults": ("$outputDefaults",),
    "xgafv": ("$.xgafv", "$apiFormat"),
    "ct": ("$ct",),
    "callback": ("$callback", "callback"),
    "password": ("passwd", "password"),
    "key": ("$key", "key"),
    "quotaUser": ("$quotaUser", "quotaUser"),
    "access_token": ("access_token",),
    "oauth_token": ("oauth_token",),
    "userIp": ("$userIp", "userIp"),
    "apiVersion": ("$apiVersion",),
    "unique": ("$unique",),
    "upload_protocol": ("upload_protocol",),
    "uploadType": ("uploadType",),
}
_CANONICAL = {spelling: name for name, spellings in SPELLINGS.items() for spelling in spellings}
FIELD_MASK_HEADER = "x-goog-fieldmask"
ENUM_INT = "json;enum-encoding=int"
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


@dataclass(frozen=True)
class Rendering:
    """How a REST answer is written, from the request's system parameters."""

    enums_as_numbers: bool = False
    pretty: bool = True
    output_defaults: bool = False
    fields: field_selection.Selection | None = None

    def for_response(self, descriptor: Any) -> Rendering:
        """This rendering with its `fields` checked against the response type (before
        the call runs: a selection naming no field of the answer fails the request
        without doing it)."""
        if self.fields is None:
            return self
        return replace(self, fields=field_selection.check(self.fields, descriptor))

    def render(self, message: Any) -> bytes:
        """The response message as the request asked for it (JSON, UTF-8); `fields`
        as checked by `for_response`."""
        value = json_format.MessageToDict(
            message,
            use_integers_for_enums=self.enums_as_numbers,
            always_print_fields_with_no_presence=self.output_defaults,
        )
        if self.fields is not None:
            value = field_selection.apply(self.fields, value)
        if self.pretty:
            return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def split(
    query: Iterable[tuple[str, str]], headers: Mapping[str, str]
) -> tuple[Rendering, list[tuple[str, str]]]:
    """The request's system parameters read (and checked), and the query parameters
    left over: the request's own fields."""
    given: dict[str, tuple[str, str]] = {}  # canonical name -> (spelling, value)
    fields: list[tuple[str, str]] = []
    for name, value in query:
        canonical = _CANONICAL.get(name)
        if canonical is None:
            fields.append((name, value))
            continue
        before = given.get(canonical)
        if before is not None and before[1] != value:
            raise invalid(
                f"The system parameter {canonical} is given twice with different values "
                f"({before[0]}={before[1]!r}, {name}={value!r})."
            )
        given[canonical] = (name, value)
    return _rendering(given, headers), fields


def _rendering(given: dict[str, tuple[str, str]], headers: Mapping[str, str]) -> Rendering:
    def value(name: str) -> str | None:
        return given[name][1] if name in given else None

    for refused, why in (
        ("callback", "JSONP callbacks are not served: the answer is plain JSON"),
        ("password", "it is reserved so that no password is ever put in a URL"),
    ):
        if refused in given:
            raise invalid(f"The query parameter {given[refused][0]} is not accepted: {why}.")
    alt = value("alt")
    if alt not in (None, "", "json", ENUM_INT):
        raise invalid(
            f"{given['alt'][0]}={alt} is not served: the local server answers JSON "
            f"(alt=json, or alt={ENUM_INT} for enums as numbers)."
        )
    xgafv = value("xgafv")
    if xgafv not in (None, "1", "2"):
        raise invalid(f"Invalid {given['xgafv'][0]}={xgafv!r}: the error format is 1 or 2.")
    ct = value("ct")
    if ct is not None and ct.split(";")[0].strip().lower() != "application/json":
        raise invalid(f"$ct={ct} is not served: request bodies are JSON (application/json).")
    mask = value("fields")
    header_mask = headers.get(FIELD_MASK_HEADER)
    if mask is None or mask == "":
        mask = header_mask or None
    return Rendering(
        enums_as_numbers=alt == ENUM_INT,
        pretty=_boolean(given, "prettyPrint", default=True),
        output_defaults=_boolean(given, "outputDefaults", default=False),
        fields=field_selection.parse(mask) if mask else None,
    )


def _boolean(given: dict[str, tuple[str, str]], name: str, *, default: bool) -> bool:
    if name not in given:
        return default
    spelling, text = given[name]
    if text.lower() not in _BOOLEANS:
        raise invalid(f"Invalid {spelling}={text!r}: expected true or false.")
    return _BOOLEANS[text.lower()]
