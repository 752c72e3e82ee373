"""Which fields of the resource a condition reads, from its text: every
`resource.a.b` selection (up to a method call, an index or the end), and whether it
is the whole argument of `has()`. The evaluator remembers outcomes by the values of
these fields and hands the library only them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    kind: str  # ident, string, punct, other
    text: str
    start: int
    end: int


_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
      | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
                   |'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*|`[^`]*`)
      | (?P<number>\d[\w.]*)
      | (?P<punct>[.()\[\]{},?:]|&&|\|\||[=!<>]=?|[-+*/%])
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(text: str) -> list[Token]:
    out = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # compiled text always scans; anything else is skipped
            pos += 1
            continue
        kind = match.lastgroup or "other"
        if kind != "space":
            out.append(Token(kind, match.group(), match.start(), match.end()))
        pos = match.end()
    return out


@dataclass(frozen=True)
class Chain:
    path: str  # the field path after `resource.` ("" for the resource itself)
    start: int
    end: int
    in_has: bool  # the whole argument of has()


def _field(token: Token) -> str:
    return token.text[1:-1] if token.text.startswith("`") else token.text


def chains(tokens: list[Token]) -> Iterator[Chain]:
    """Every `resource.a.b...` selection: up to a method call, an index or the end."""
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != "resource":
            continue
        if i and tokens[i - 1].text == ".":
            continue  # a field named resource, not the variable
        path: list[str] = []
        j = i + 1
        while (
            j + 1 < len(tokens)
            and tokens[j].text == "."
            and tokens[j + 1].kind == "ident"
            and not (j + 2 < len(tokens) and tokens[j + 2].text == "(")
        ):
            path.append(_field(tokens[j + 1]))
            j += 2
        end = tokens[j - 1].end
        in_has = (
            i >= 2
            and tokens[i - 1].text == "("
            and tokens[i - 2].text == "has"
            and j < len(tokens)
            and tokens[j].text == ")"
        )
        yield Chain(".".join(path), tok.start, end, in_has)



def outermost(reads: Iterable[str]) -> tuple[str, ...]:
    """The reads no other read encloses (`labels` and `labels.team`: `labels`), sorted:
    their values decide all the others'."""
    reads = set(reads)
    if "" in reads:
        return ("",)
    return tuple(sorted(
        r for r in reads if not any(r.startswith(o + ".") for o in reads if o != r)
    ))

