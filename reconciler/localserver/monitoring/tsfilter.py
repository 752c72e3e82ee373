"""The subset of Cloud Monitoring's filter language that `ListTimeSeries` takes here:

    metric.type = "pubsub.googleapis.com/topic/send_request_count"
      AND resource.type = "pubsub_topic"
      AND resource.labels.topic_id = one_of("orders", "payments")
      AND metric.labels.response_code = starts_with("dead")

Restrictions are `SELECTOR = VALUE`, joined by `AND` (or by white space alone, which
means AND too); VALUE is a quoted string (or a bare word), `starts_with("...")` or
`one_of("...", ...)`. Selectors: `metric.type` (exactly one metric type, as the
service requires), `resource.type`, `project`, `metric.labels.KEY` and
`resource.labels.KEY` (`label` works for `labels`). Anything else (OR, NOT,
parentheses, other operators or functions, metadata) is refused with an
INVALID_ARGUMENT naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reconciler.localserver.api.status import ServiceError, invalid, shown

SUPPORTED = (
    'supported here: SELECTOR = "VALUE", SELECTOR = starts_with("PREFIX") and '
    'SELECTOR = one_of("A", "B", ...) joined by AND, with SELECTOR one of metric.type, '
    "resource.type, project, metric.labels.KEY, resource.labels.KEY"
)

_TOKEN = re.compile(
    r"""(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<op>!=|>=|<=|=~|!~|=|:|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][A-Za-z0-9_./-]*)""",
    re.VERBOSE,
)
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class Matcher:
    """One restriction on a label: its value equals, starts with, or is one of."""

    scope: str  # "metric" or "resource"
    label: str
    how: str  # "=", "starts_with" or "one_of"
    values: tuple[str, ...]

    def matches(self, value: str | None) -> bool:
        if value is None:
            return False
        if self.how == "starts_with":
            return value.startswith(self.values[0])
        return value in self.values


@dataclass(frozen=True)
class Filter:
    metric_type: str
    resource_types: tuple[Matcher, ...]  # every one must hold
    labels: tuple[Matcher, ...]

    def resource_type_matches(self, resource_type: str) -> bool:
        return all(m.matches(resource_type) for m in self.resource_types)


def _error(text: str, position: int, message: str) -> ServiceError:
    return invalid(
        f"Unsupported filter {shown(text, 200)}: {message} (at character {position + 1}); "
        f"{SUPPORTED}."
    )


def _after_space(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)
    return found.end() if found else pos


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """The filter's tokens in one pass (linear in its length: the first thing it
    cannot read ends it)."""
    out = []
    i = _after_space(text, 0)
    while i < len(text):
        match = _TOKEN.match(text, i)
        if match is None or match.end() == i:
            raise _error(text, i, f"cannot read {shown(text[i : i + 10])}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind), i))
        i = _after_space(text, match.end())
    return out


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


def parse(text: str) -> Filter:
    """The filter, or INVALID_ARGUMENT saying what is not supported and where."""
    tokens = _tokens(text)
    if not tokens:
        raise invalid(f"The filter is empty: it must name one metric type; {SUPPORTED}.")
    i = 0
    restrictions: list[tuple[str, Matcher, int]] = []
    while i < len(tokens):
        kind, value, at = tokens[i]
        if kind == "word" and value in ("AND",):
            if not restrictions:
                raise _error(text, at, "AND needs a restriction before it")
            i += 1
            continue
        if kind == "word" and value.upper() in ("OR", "NOT"):
            raise _error(text, at, f"{value} is not supported")
        if kind != "word":
            raise _error(text, at, f"expected a selector, found {shown(value)}")
        selector, at_selector = value, at
        if i + 1 >= len(tokens):
            raise _error(text, at, f"{selector} needs = and a value")
        kind, op, at = tokens[i + 1]
        if kind != "op":
            raise _error(text, at, f"expected = after {selector}, found {shown(op)}")
        if op != "=":
            raise _error(text, at, f"the operator {op} is not supported")
        matcher, i = _value(text, tokens, i + 2, selector, at_selector)
        restrictions.append((selector, matcher, at_selector))
    return _assemble(text, restrictions)


def _value(
    text: str, tokens: list[tuple[str, str, int]], i: int, selector: str, at: int
) -> tuple[Matcher, int]:
    scope, label = _selector(text, selector, at)
    if i >= len(tokens):
        raise _error(text, at, f"{selector} = needs a value")
    kind, value, at_value = tokens[i]
    if kind == "string":
        return Matcher(scope, label, "=", (_unquote(value),)), i + 1
    if kind == "word" and i + 1 < len(tokens) and tokens[i + 1][1] == "(":
        if value not in ("starts_with", "one_of"):
            raise _error(text, at_value, f"the function {value}() is not supported")
        args = []
        j = i + 2
        while True:
            if j >= len(tokens):
                raise _error(text, at_value, f"{value}( is not closed")
            kind, arg, at_arg = tokens[j]
            if kind != "string":
                raise _error(text, at_arg, f"{value}() takes quoted strings, found {shown(arg)}")
            args.append(_unquote(arg))
            if j + 1 < len(tokens) and tokens[j + 1][1] == ",":
                j += 2
                continue
            if j + 1 < len(tokens) and tokens[j + 1][1] == ")":
                break
            raise _error(text, at_arg, f"{value}( is not closed")
        if value == "starts_with" and len(args) != 1:
            raise _error(text, at_value, "starts_with() takes one string")
        return Matcher(scope, label, value, tuple(args)), j + 2
    if kind == "word":
        return Matcher(scope, label, "=", (value,)), i + 1
    raise _error(text, at_value, f"expected a value after {selector} =, found {shown(value)}")


def _selector(text: str, selector: str, at: int) -> tuple[str, str]:
    if selector in ("metric.type", "resource.type"):
        return selector.split(".")[0], "type"
    if selector == "project":
        return "resource", "project_id"
    for scope in ("metric", "resource"):
        for word in ("labels", "label"):
            prefix = f"{scope}.{word}."
            if selector.startswith(prefix) and len(selector) > len(prefix):
                return scope, selector[len(prefix) :]
    raise _error(text, at, f"the selector {selector} is not supported")


def _assemble(text: str, restrictions: list[tuple[str, Matcher, int]]) -> Filter:
    metric_types = [(m, at) for s, m, at in restrictions if s == "metric.type"]
    if not metric_types:
        raise invalid(
            f"The filter {shown(text, 200)} names no metric type: ListTimeSeries needs "
            'exactly one, as metric.type = "pubsub.googleapis.com/...".'
        )
    types = set()
    for matcher, at in metric_types:
        if matcher.how != "=":
            raise _error(text, at, "metric.type must name one metric type (with =)")
        types.add(matcher.values[0])
    if len(types) > 1:
        raise invalid(
            f"The filter {shown(text, 200)} names {len(types)} metric types: ListTimeSeries reads "
            "one metric type at a time."
        )
    resource_types = tuple(m for s, m, _ in restrictions if s == "resource.type")
    labels = tuple(m for s, m, _ in restrictions if s not in ("metric.type", "resource.type"))
    return Filter(types.pop(), resource_types, labels)
