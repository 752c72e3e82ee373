"""The query of SearchProjects, SearchFolders and SearchOrganizations, in the part of
the grammar the v3 reference documents: terms `field:value` (or `field=value`), a
value quoted when it holds spaces and ending in `*` to match a prefix (`*` alone: any
value), joined by `AND` and `OR` (AND binds tighter). Fields and values are matched
without regard to case. Two terms side by side: for projects the reference says a
project matching any of them is returned (OR); for folders and organizations it
says nothing, and this server reads them as AND. `NOT` and parentheses, which the
reference mentions for folders, are refused here (INVALID_ARGUMENT naming them): the
local server does not model them.

    parse(query, fields, side_by_side_or) -> Query    INVALID_ARGUMENT on a bad query
    Query.matches(values)                             values: field -> its values
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.localserver.api.status import invalid, shown

_TOKEN = re.compile(
    r"\s*(?:(?P<op>AND|OR|NOT)(?=\s|$)|(?P<paren>[()])|(?P<field>[A-Za-z][A-Za-z0-9_.\-]*)"
    r"\s*[:=]\s*(?P<value>\"(?:[^\"\\]|\\.)*\"|[^\s\"()]+))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Term:
    field: str  # canonical name, or "labels.KEY"
    value: str  # lowercased, without its quotes and trailing `*`
    prefix: bool

    def holds(self, values: Sequence[str]) -> bool:
        for value in values:
            value = value.lower()
            if value == self.value or (self.prefix and value.startswith(self.value)):
                return True
        return False


@dataclass(frozen=True)
class Query:
    """Either of the groups, each of whose terms hold (no group: everything)."""

    groups: tuple[tuple[Term, ...], ...] = ()

    def matches(self, values: Callable[[str], Sequence[str]]) -> bool:
        if not self.groups:
            return True
        return any(all(t.holds(values(t.field)) for t in group) for group in self.groups)


def parse(query: str, fields: Mapping[str, str], side_by_side_or: bool) -> Query:
    """`fields`: each accepted field name (lowercase) -> its canonical name; a name
    ending in "." accepts any key after it (labels.KEY)."""
    groups: list[list[Term]] = [[]]
    position = 0
    expect_term = True
    text = query.strip()
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None:
            raise invalid(f"Invalid query {shown(query)}: cannot read it from "
                          f"{shown(text[position:position + 20])}.")
        position = found.end()
        op = (found["op"] or "").upper()
        if found["paren"] or op == "NOT":
            raise invalid(f"Invalid query {shown(query)}: the local server does not "
                          "support NOT or parentheses in a query.")
        if op:
            if expect_term:
                raise invalid(f"Invalid query {shown(query)}: {op} needs a term on each side.")
            if op == "OR":
                groups.append([])
            expect_term = True
            continue
        if not expect_term and side_by_side_or:
            groups.append([])
        groups[-1].append(_term(query, found["field"], found["value"], fields))
        expect_term = False
    if expect_term and text:
        raise invalid(f"Invalid query {shown(query)}: it ends with an operator.")
    return Query(tuple(tuple(g) for g in groups if g))


def _term(query: str, field: str, value: str, fields: Mapping[str, str]) -> Term:
    name = fields.get(field.lower())
    if name is None:
        head, dot, key = field.partition(".")
        canonical = fields.get(head.lower() + dot) if dot else None
        if canonical is None or not key:
            known = ", ".join(sorted(set(fields)))
            raise invalid(f"Invalid query {shown(query)}: unknown field {field!r} "
                          f"(known: {known}).")
        name = canonical + key.lower()
    if value.startswith('"'):
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    prefix = value.endswith("*")
    return Term(name, value.removesuffix("*").lower(), prefix)
