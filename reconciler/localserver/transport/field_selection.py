"""The `fields` system parameter (`$fields`, the `X-Goog-FieldMask` header): a partial
response, Google's selector syntax checked against the response message and applied
to its JSON form.

The syntax (Google's "partial response" rules): a comma-separated list of fields;
`a/b` (or `a.b`, the FieldMask spelling) selects `b` inside `a`; `a(b,c)` selects
`b` and `c` inside `a`; `*` selects every field of its level. A field is named by
its JSON name (`messageStoragePolicy`) or its proto name (`message_storage_policy`).
Inside a repeated field the selection applies to each element; inside a map it
names keys. A selection naming no field of the message, or reaching inside a value
that has no fields (a string, a Timestamp), is INVALID_ARGUMENT.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from reconciler.localserver.api.status import invalid

# A selection: field (JSON name) -> its own selection, None for the whole field.
Selection = dict[str, "Selection | None"]

MAX_SELECTOR_CHARS = 8 * 1024
_PUNCTUATION = frozenset("(),/.")
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\*|[(),/.])")
# Message types whose JSON form is a string, number or list, not an object of fields.
_OPAQUE = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.Any",
        "google.protobuf.Empty",
        "google.protobuf.BoolValue",
        "google.protobuf.BytesValue",
        "google.protobuf.DoubleValue",
        "google.protobuf.FloatValue",
        "google.protobuf.Int32Value",
        "google.protobuf.Int64Value",
        "google.protobuf.StringValue",
        "google.protobuf.UInt32Value",
        "google.protobuf.UInt64Value",
    }
)


def parse(text: str) -> Selection:
    """The selection a `fields` value names (not yet checked against a message);
    INVALID_ARGUMENT for text that is not a selector."""
    if len(text) > MAX_SELECTOR_CHARS:
        raise invalid(f"Invalid field selector: longer than {MAX_SELECTOR_CHARS} characters.")
    tokens = _tokens(text)
    parser = _Parser(tokens, text)
    selection = parser.selection(top=True)
    return selection


def _tokens(text: str) -> list[str]:
    tokens = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise invalid(
                f"Invalid field selector {text!r}: unexpected {text[pos:].lstrip()[:1]!r} "
                f"at character {pos + 1}."
            )
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, what: str) -> Exception:
        return invalid(f"Invalid field selector {self.text!r}: {what}.")

    def selection(self, *, top: bool) -> Selection:
        out: Selection = {}
        while True:
            path, sub = self.item()
            _merge(out, path, sub)
            token = self._peek()
            if token == ",":
                self.pos += 1
                continue
            if token is None and top:
                return out
            if token == ")" and not top:
                return out
            raise self._fail(f"unexpected {token!r}" if token else "a '(' is not closed")

    def item(self) -> tuple[list[str], Selection | None]:
        path = [self.name()]
        while self._peek() in ("/", "."):
            self.pos += 1
            path.append(self.name())
        if self._peek() == "(":
            self.pos += 1
            sub = self.selection(top=False)
            self.pos += 1  # the ")"
            return path, sub
        return path, None

    def name(self) -> str:
        token = self._peek()
        if token is None or token in _PUNCTUATION:
            raise self._fail(f"unexpected {token!r}" if token else "a field name is missing")
        self.pos += 1
        return token


def _merge(into: Selection, path: list[str], sub: Selection | None) -> None:
    """Add `path` (with `sub` at its end) to `into`; a whole field absorbs any part."""
    head, rest = path[0], path[1:]
    if head in into and into[head] is None:
        return
    new: Selection | None = sub
    if rest:
        new = {}
        _merge(new, rest, sub)
    if new is None or head not in into:
        into[head] = new
        return
    existing = into[head]
    assert existing is not None
    for name, part in new.items():
        _merge(existing, [name], part)


def check(selection: Selection, descriptor: Descriptor) -> Selection:
    """`selection` with every name turned into the JSON name of a field of
    `descriptor` (recursively); INVALID_ARGUMENT for one that names no field."""
    out: Selection = {}
    for name, sub in selection.items():
        if name == "*":
            if sub is not None:
                raise invalid("Invalid field selector: '*' selects whole fields, without '(...)'.")
            return {"*": None}
        field = descriptor.fields_by_camelcase_name.get(name) or descriptor.fields_by_name.get(name)
        if field is None:
            known = ", ".join(sorted(f.json_name for f in descriptor.fields)) or "none"
            raise invalid(
                f"Invalid field selector: {name!r} is not a field of {descriptor.full_name} "
                f"(its fields: {known})."
            )
        out[field.json_name] = None if sub is None else _check_inside(field, sub)
    return out


def _check_inside(field: FieldDescriptor, sub: Selection) -> Selection:
    message = field.message_type
    if message is None or message.full_name in _OPAQUE:
        raise invalid(
            f"Invalid field selector: {field.json_name} has no fields to select from."
        )
    if message.GetOptions().map_entry:
        return sub  # map keys, as they are
    return check(sub, message)


def apply(selection: Selection, value: Any) -> Any:
    """The JSON value with only the selected fields (a checked `selection`)."""
    if "*" in selection:
        return value
    if isinstance(value, list):
        return [apply(selection, item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in selection:
            sub = selection[key]
            out[key] = item if sub is None else apply(sub, item)
    return out
