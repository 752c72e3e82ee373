"""Any file name, in every CI format of the diagnostics (issue 49, item 5): a file is
named by bytes, which need not be UTF-8 (a byte that is not reaches reconcile as a
lone surrogate, `os.fsdecode`). Hypothesis draws names of bytes (invalid UTF-8,
control characters, `%`, spaces, `..`, newlines, the annotation's separators) and each
reporter's output, as the output boundary writes it (commands/output.py), must be
valid and UTF-8-encodable, name the file so that its bytes come back, and keep its
structure (one workflow command per finding, nothing injected).

Derandomized (the examples are a function of the test) and bounded: deterministic in CI.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import Any
from urllib.parse import unquote_to_bytes

import jsonschema
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.render import diagnostics as report
from reconciler.render import escape
from reconciler.render.sarif import uri
from tests.shared_data import shared_data

HOSTILE_BYTES = [
    b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xed\xa0\x80", b"%", b"%25", b"%zz", b" ", b"\n",
    b"\r", b"\t", b"\x1b[2J", b"..", b":", b",", b"::error::", b"\\", b"?", b"#",
    b"\xe2\x80\xae", b"\xc2\x85", "é".encode(), "😀".encode(), b"'", b'"',
]
# One path component: anything a file name may hold (not `/`, not NUL), never `.`
# alone (which a path drops).
NAMES = st.lists(
    st.sampled_from(HOSTILE_BYTES) | st.binary(min_size=1, max_size=3),
    min_size=1, max_size=6,
).map(lambda parts: b"".join(parts).replace(b"/", b"_").replace(b"\0", b"_")).filter(
    lambda name: name not in (b"", b".")
)


@cache
def sarif_validator() -> Any:
    """The OASIS schema's validator, built once (building it is most of a check)."""
    schema = json.loads(shared_data("sarif-schema-2.1.0.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def findings(name: bytes) -> tuple[bytes, list[Diagnostic]]:
    """Two findings at the file `specs/NAME` (one at a line, one about the whole
    file), the name in their messages too, as validation writes them."""
    path = b"specs/" + name
    file = os.fsdecode(path)
    return path, [
        Diagnostic(file, 3, 7, Severity.ERROR, "topic-id", f"bad topic in {file}", f"fix {file}"),
        Diagnostic(file, 0, 0, Severity.WARNING, "empty-file", "the file holds no spec documents"),
    ]


def written(text: str, data: bool) -> str:
    """What the output boundary writes of a rendered report (it must encode as UTF-8)."""
    out = escape.json_text(text) if data else escape.document(text)
    out.encode("utf-8")  # strict: what stdout does
    return out


# RFC 3986's relative-ref whose path does not start with `//`: pchar and `/` only,
# every `%` followed by two hex digits, no `:` in the first segment.
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@:]|%[0-9A-Fa-f]{2})"
_RELATIVE_REF = re.compile(rf"(?!//){_PCHAR}*(?:/{_PCHAR}*)*")
_NO_COLON_FIRST = re.compile(r"^[^/:]*(/|$)")


def is_relative_ref(value: str) -> bool:
    return bool(_RELATIVE_REF.fullmatch(value)) and bool(_NO_COLON_FIRST.match(value))


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(NAMES)
@example(b"bad\xff.yaml")
@example(b"a:b.yaml")
@example(b"100% done, really.yaml")
@example(b"..")
@example(b"line\nbreak\r.yaml")
def test_sarif_names_any_file_with_a_uri_that_decodes_to_its_bytes(name: bytes) -> None:
    path, found = findings(name)
    log = json.loads(written(report.REPORTERS["sarif"](found), data=True))
    sarif_validator().validate(log)
    (run,) = log["runs"]
    assert len(run["results"]) == 2
    for result in run["results"]:
        (location,) = result["locations"]
        value = location["physicalLocation"]["artifactLocation"]["uri"]
        assert is_relative_ref(value), value
        assert unquote_to_bytes(value) == path
    # The message is text: the name's undecodable bytes are shown, never raw surrogates.
    assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in run["results"][0]["message"]["text"])


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(NAMES)
@example(b"bad\xff.yaml")
def test_json_names_any_file_so_that_its_bytes_come_back(name: bytes) -> None:
    path, found = findings(name)
    diagnostics = json.loads(written(report.REPORTERS["json"](found), data=True))
    assert [os.fsencode(d["file"]) for d in diagnostics] == [path, path]
    assert diagnostics[0]["message"] == f"bad topic in {os.fsdecode(path)}"


def unescape_property(value: str) -> str:
    """The Actions toolkit's unescaping of a command property."""
    for escaped, raw in (("%2C", ","), ("%3A", ":"), ("%0A", "\n"), ("%0D", "\r"), ("%25", "%")):
        value = value.replace(escaped, raw)
    return value


_TEXT_ESCAPE = re.compile(r"\\(\\|n|r|t|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")
_NAMED = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def unescape_text(value: str) -> str:
    """The inverse of render/escape.py's `text`."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return _NAMED[code] if code in _NAMED else chr(int(code[1:], 16))

    return _TEXT_ESCAPE.sub(one, value)


ANNOTATION = re.compile(
    r"::(?P<level>error|warning) file=(?P<file>[^,:\r\n]*)(?:,line=\d+,col=\d+)?,"
    r"title=reconcile (?P<code>[a-z-]+)::(?P<message>[^\r\n]*)"
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(NAMES)
@example(b"x,line=1::error::injected\n::error file=evil")
@example(b"bad\xff.yaml")
def test_github_annotations_stay_one_command_each_and_name_the_file(name: bytes) -> None:
    path, found = findings(name)
    out = written(report.REPORTERS["github"](found), data=False)
    lines = out.split("\n")
    assert lines[-1] == "" and len(lines) == 3, out  # one command per finding
    for line, d in zip(lines, found, strict=False):
        command = ANNOTATION.fullmatch(line)
        assert command is not None, line
        assert command["code"] == d.code and command["level"] == d.severity.value
        assert os.fsencode(unescape_text(unescape_property(command["file"]))) == path
        said = d.message + (f" ({d.hint})" if d.hint else "")
        assert unescape_text(unescape_property(command["message"])) == said


def test_the_uri_of_odd_paths() -> None:
    assert uri("specs/a b%.yaml") == "specs/a%20b%25.yaml"
    assert uri(os.fsdecode(b"specs/bad\xff.yaml")) == "specs/bad%FF.yaml"
    assert uri("./specs//x.yaml") == "specs/x.yaml"
    assert uri("a:b.yaml") == "a%3Ab.yaml"  # not the scheme `a`
    assert uri("//host/x") == "/host/x"  # not an authority
    assert uri("/abs/é.yaml") == "/abs/%C3%A9.yaml"
