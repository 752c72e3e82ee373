"""Strings from files and from the service, made safe for where they are printed.

Paths, topic and project names, label keys and values and service messages are data:
they must never change the structure of what reconcile prints.

    text(s)        for a terminal or a log: control characters (C0, DEL, C1, ESC),
                   line and paragraph separators and invisible format characters
                   (bidi overrides, zero-width) are shown as \\xNN / \\uNNNN escapes, a
                   backslash as \\\\; so no colour, cursor movement or fake line.
    md_code(s)     a markdown code span that nothing can close early (no mention, no
                   HTML, no emphasis inside); `in_table` escapes pipes
    md_prose(s)    markdown text: inline markup characters backslash-escaped, @ kept
                   from pinging (a word joiner after it), whitespace runs collapsed
    md_fence(body) a fenced code block whose fence is longer than any run inside

                   None of the three leaves `<!--` in what it writes (a word joiner
                   after the `<`): markdown goes into pull-request comments, where an
                   HTML comment opener from data could hide what follows or pose as
                   a CI marker (examples/ci/reconcile_ci.py reads markers back).

    lines(s)       a message of several lines: `text` on each line, line breaks kept
    document(s, colour=False)
                   a rendered document (data already escaped by the renderers) made
                   inert once more: C0 and C1 controls but the line break, DEL, bidi
                   controls and line separators escaped; with `colour`, the SGR
                   colour sequences the text renderer writes are kept
    json_text(s)   JSON text made inert without changing what it parses to: the
                   characters JSON leaves raw in strings (DEL, C1, bidi controls,
                   line separators) written as \\uXXXX escapes, and so is a lone
                   surrogate (a byte of a file name that is not UTF-8, as
                   `os.fsdecode` gives it), which no stream can encode
    unicode_text(s) `s` with every lone surrogate written as `text` shows it
                   (`\\udcff`), for text that must be Unicode (a SARIF message)

The last three are what the output boundary (reconciler/commands/output.py) applies to
everything it writes; the renderers escape each piece of data with the first four.
"""

from __future__ import annotations

import re
import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
_UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
# What can open inline structure mid-line (prose never starts a line: newlines are
# escaped first): code, emphasis, links and images, HTML and autolinks, entities,
# table cells, strikethrough, GitHub math.
_INLINE = re.compile(r"([\\`*_\[\]<>&|~$])")
_WORD_JOINER = "\u2060"
_COMMENT_OPENER = "<!--"


def _escape_char(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x80 and (code < 0x20 or code == 0x7F):
        return f"\\x{code:02x}"
    if unicodedata.category(ch) in _UNSAFE_CATEGORIES or ch in "\ufeff":
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else (
            f"\\U{code:08x}"
        )
    return ch


def _needs_escape(ch: str, backslash: bool) -> bool:
    code = ord(ch)
    if 0x20 <= code < 0x7F:
        return backslash and ch == "\\"
    return _escape_char(ch) != ch


def text(value: object, backslash: bool = True) -> str:
    """`value` as one line of inert text (see the module docstring); `backslash=False`
    leaves backslashes alone (for JSON-quoted values, already unambiguous)."""
    s = str(value)
    # Printable ASCII (0x20-0x7E, as most paths, names and messages are) needs nothing
    # but its backslashes escaped: decided in C, not a character at a time.
    if s.isascii() and s.isprintable() and not (backslash and "\\" in s):
        return s
    if not any(_needs_escape(ch, backslash) for ch in s):
        return s
    return "".join(ch if not _needs_escape(ch, backslash) else _escape_char(ch) for ch in s)


def _no_comment(s: str) -> str:
    """`s` with every `<!--` broken by a word joiner (shown the same)."""
    return s.replace(_COMMENT_OPENER, "<" + _WORD_JOINER + "!--")


def md_code(value: object, in_table: bool = False) -> str:
    """A code span showing `value` (text-escaped) verbatim; never empty."""
    s = _no_comment(text(value)) or '""'
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")):
        s = f" {s} "
    if in_table:
        s = s.replace("|", "\\|")
    return f"{fence}{s}{fence}"


def md_prose(value: object) -> str:
    """`value` as markdown text that renders as itself and nothing more."""
    s = " ".join(text(value).split())
    if not s:
        return '\\"\\"'
    s = _no_comment(_INLINE.sub(r"\\\1", s))  # `\<!--` keeps `<!--`: broken too
    return s.replace("@", "@" + _WORD_JOINER)


def md_fence(body: str, info: str = "text") -> str:
    """`body` (already text-escaped line by line) in a fence no line can close."""
    body = _no_comment(body)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def lines(message: str) -> str:
    """A message's lines, each `text` (backslashes left alone), joined again."""
    return "\n".join(text(line, backslash=False) for line in message.split("\n"))


# What may never reach a terminal raw, even from a renderer: C0 controls but the line
# break, DEL, C1, the bidi controls, the line and paragraph separators, and lone
# surrogates (the bytes of a file name that is not UTF-8: a stream cannot encode them,
# and a write that fails loses the whole document).
_SURROGATES = "\ud800-\udfff"
_DANGEROUS = (
    "\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
    + _SURROGATES
)
_SURROGATE = re.compile(f"[{_SURROGATES}]")
_DOCUMENT = re.compile(f"(\x1b\\[[0-9;]*m)|[{_DANGEROUS}]")
_JSON_RAW = re.compile(f"[{_DANGEROUS}]")


def document(rendered: str, colour: bool = False) -> str:
    """`rendered` with nothing dangerous left raw (see the module docstring)."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1) if colour else "\\x1b" + match.group(1)[1:]
        return _escape_char(match.group())

    return _DOCUMENT.sub(one, rendered)


def json_text(data: str) -> str:
    """`data` (JSON text) with the characters it may hold raw escaped the JSON way."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", data)


def unicode_text(value: str) -> str:
    """`value` with each lone surrogate shown as `text` shows it, all else as it is."""
    return _SURROGATE.sub(lambda m: _escape_char(m.group()), value)
