"""Subscription filters: the Pub/Sub filter language over a message's attributes,
parsed once when a subscription is created (`compile_filter`) and applied to each
message it would receive (`Filter.matches`).

The language, as the service documents it (docs/local-server.md cites where):

    filter     := expression                      (at most 256 bytes of UTF-8)
    expression := term {AND term} | term {OR term}  (AND and OR mix only in parentheses)
    term       := NOT term | "-" term | "(" expression ")" | condition
    condition  := attributes ":" key              the attribute exists
                | attributes "." key "=" string   it exists and has that value
                | attributes "." key "!=" string  it is absent or has another value
                | hasPrefix "(" attributes "." key "," string ")"
    key        := letters, digits, "_" and "-" | string
    string     := "..." or '...' with backslash escapes

Operators and function names are case-sensitive (`AND`, `OR`, `NOT`, `hasPrefix`);
keys and values compare exactly. The parser is a hand-written scanner and recursive
descent with no regular expressions: linear in the filter's length, and nesting
(parentheses and negations) is bounded by `MAX_DEPTH`, so no filter a client sends can
make it slow or deep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAX_FILTER_BYTES = 256
MAX_DEPTH = 32  # nested parentheses and negations

Attributes = Mapping[str, str]
Test = Callable[[Attributes], bool]

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "?": "?", "`": "`",
}
_HEX = frozenset("0123456789abcdefABCDEF")
_WORDS = ("attributes", "hasPrefix", "AND", "OR", "NOT")


class FilterError(ValueError):
    """A filter the language does not allow: `reason`, and where (`offset`, a
    character index into the filter)."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


@dataclass(frozen=True)
class Filter:
    """A compiled filter: `matches(attributes)` says whether a message is delivered."""

    text: str
    matches: Test


def compile_filter(text: str) -> Filter | None:
    """The compiled filter (None for the empty filter, which keeps every message);
    `FilterError` for one the language does not allow."""
    if text == "":
        return None
    size = len(text.encode("utf-8"))
    if size > MAX_FILTER_BYTES:
        raise FilterError(
            f"the filter is {size} bytes long; a filter is at most {MAX_FILTER_BYTES} bytes",
            MAX_FILTER_BYTES,
        )
    parser = _Parser(text)
    test = parser.expression(0)
    parser.skip_space()
    if parser.pos < len(text):
        raise parser.unexpected("AND, OR or the end of the filter")
    return Filter(text, test)


def describe(error: FilterError, text: str) -> str:
    """The error as a client reads it: the reason and the place, quoted."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return f"Invalid filter {shown!r}: {error.reason} (at character {error.offset + 1})."


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # ------------------------------------------------------------------ scanning

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text) and text[self.pos] in " \t\r\n":
            self.pos += 1

    def peek_word(self) -> str:
        """The run of key characters at the cursor (not consumed)."""
        end = self.pos
        while end < len(self.text) and self.text[end] in _KEY_CHARS:
            end += 1
        return self.text[self.pos : end]

    def take(self, symbol: str) -> bool:
        if self.text.startswith(symbol, self.pos):
            self.pos += len(symbol)
            return True
        return False

    def expect(self, symbol: str, what: str) -> None:
        self.skip_space()
        if not self.take(symbol):
            raise self.unexpected(what)

    def unexpected(self, wanted: str) -> FilterError:
        if self.pos >= len(self.text):
            return FilterError(f"the filter ends where {wanted} is expected", self.pos)
        found = self.peek_word() or self.text[self.pos]
        hint = ""
        if found.upper() in ("AND", "OR", "NOT") and found not in _WORDS:
            hint = f" (boolean operators are written in capitals: {found.upper()})"
        elif found.lower() == "hasprefix" and found != "hasPrefix":
            hint = " (the function is hasPrefix)"
        return FilterError(f"expected {wanted}, found {found!r}{hint}", self.pos)

    # ------------------------------------------------------------------- grammar

    def expression(self, depth: int) -> Test:
        """term {AND term} or term {OR term}: one operator per level."""
        terms = [self.term(depth)]
        operator = ""
        while True:
            self.skip_space()
            start = self.pos
            word = self.peek_word()
            if word not in ("AND", "OR"):
                break
            if operator and word != operator:
                raise FilterError(
                    "AND and OR cannot be combined without parentheses: write "
                    "(a AND b) OR c, or a AND (b OR c)",
                    start,
                )
            operator = word
            self.pos += len(word)
            terms.append(self.term(depth))
        if len(terms) == 1:
            return terms[0]
        parts = tuple(terms)
        if operator == "AND":
            return lambda attrs: all(t(attrs) for t in parts)
        return lambda attrs: any(t(attrs) for t in parts)

    def term(self, depth: int) -> Test:
        if depth >= MAX_DEPTH:
            raise FilterError(
                f"the filter nests parentheses and negations more than {MAX_DEPTH} deep",
                self.pos,
            )
        self.skip_space()
        if self.peek_word() == "NOT":
            self.pos += 3
            inner = self.term(depth + 1)
            return lambda attrs: not inner(attrs)
        if self.take("-"):
            inner = self.term(depth + 1)
            return lambda attrs: not inner(attrs)
        if self.take("("):
            inner = self.expression(depth + 1)
            self.expect(")", "')'")
            return inner
        return self.condition()

    def condition(self) -> Test:
        start = self.pos
        word = self.peek_word()
        if word == "hasPrefix":
            self.pos += len(word)
            self.expect("(", "'(' after hasPrefix")
            self.skip_space()
            key = self.member()
            self.expect(",", "',' between hasPrefix's two arguments")
            prefix = self.value()
            self.expect(")", "')' closing hasPrefix")

            def has_prefix(attrs: Attributes) -> bool:
                got = attrs.get(key)
                return got is not None and got.startswith(prefix)

            return has_prefix
        if word != "attributes":
            raise self.unexpected("a condition on attributes (attributes:KEY, "
                                  'attributes.KEY = "VALUE", hasPrefix(...)), NOT, - or (')
        self.pos += len(word)
        if self.take(":"):
            self.skip_space()
            key = self.key()
            return lambda attrs: key in attrs
        if self.text.startswith(".", self.pos):
            self.pos = start
            key = self.member()
            self.skip_space()
            if self.take("!="):
                wanted = self.value()
                return lambda attrs: attrs.get(key) != wanted
            if self.take("="):
                wanted = self.value()
                return lambda attrs: attrs.get(key) == wanted
            raise self.unexpected("=, != after the attribute")
        raise self.unexpected("':' (the attribute exists) or '.' (its value) after attributes")

    def member(self) -> str:
        """attributes.KEY: the key."""
        if not (self.take("attributes") and self.take(".")):
            raise self.unexpected("attributes.KEY")
        return self.key()

    def key(self) -> str:
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            return self.string()
        word = self.peek_word()
        if not word:
            raise self.unexpected("an attribute key (letters, digits, _ and -, or a string)")
        self.pos += len(word)
        return word

    def value(self) -> str:
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            return self.string()
        raise self.unexpected('a string literal ("...")')

    def string(self) -> str:
        text = self.text
        quote = text[self.pos]
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(text):
                raise FilterError("a string literal is not closed", start)
            char = text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape())
            else:
                out.append(char)
                self.pos += 1

    def escape(self) -> str:
        """One backslash escape at the cursor: simple, \\xHH, \\uHHHH, \\UHHHHHHHH or
        octal \\ooo."""
        text = self.text
        start = self.pos
        if self.pos + 1 >= len(text):
            raise FilterError("a string literal ends in a lone backslash", start)
        kind = text[self.pos + 1]
        if kind in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[kind]
        widths = {"x": 2, "X": 2, "u": 4, "U": 8}
        if kind in widths:
            digits = text[self.pos + 2 : self.pos + 2 + widths[kind]]
            if len(digits) != widths[kind] or not all(d in _HEX for d in digits):
                raise FilterError(f"\\{kind} takes {widths[kind]} hexadecimal digits", start)
            code = int(digits, 16)
            self.pos += 2 + widths[kind]
        elif kind in "0123":
            digits = text[self.pos + 1 : self.pos + 4]
            if len(digits) != 3 or not all(d in "01234567" for d in digits):
                raise FilterError("an octal escape is a backslash and three digits 0-7", start)
            code = int(digits, 8)
            self.pos += 4
        else:
            raise FilterError(f"unknown escape \\{kind} in a string literal", start)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise FilterError("the escape names no Unicode character", start)
        return chr(code)
