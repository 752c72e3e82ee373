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
    if not any(_needs_escape(ch, backslash) for ch in s):
        return s
    return "".join(ch if not _needs_escape(ch, backslash) else _escape_char(ch) for ch in s)


def md_code(value: object, in_table: bool = False) -> str:
    """A code span showing `value` (text-escaped) verbatim; never empty."""
    s = text(value) or '""'
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
    s = _INLINE.sub(r"\\\1", s)
    return s.replace("@", "@" + _WORD_JOINER)


def md_fence(body: str, info: str = "text") -> str:
    """`body` (already text-escaped line by line) in a fence no line can close."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"
