"""The documents' JSON writer (msgspec, reconciler/codec.py) against the standard
library's: digests and plan files must not depend on which of the two wrote them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.codec import canonical_json as canonical_bytes
from reconciler.codec import indented_json as indented_text


def reference_canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def reference_indented(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # lone surrogates: not UTF-8
SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | TEXT
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_both_forms_match_the_standard_library(value: Any) -> None:
    assert canonical_bytes(value) == reference_canonical(value)
    assert indented_text(value) == reference_indented(value)


def test_every_code_point_is_written_as_json_writes_it() -> None:
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 4096):
        chunk = points[start : start + 4096]
        value = {"".join(chunk[:64]): ["".join(chunk)], "keys": dict.fromkeys(chunk[::97], 1)}
        assert canonical_bytes(value) == reference_canonical(value), start
        assert indented_text(value) == reference_indented(value), start


class Text(str):
    pass


def test_values_msgspec_refuses_or_spells_otherwise_fall_back_to_json() -> None:
    for value in (
        {"big": 2**64, "small": -(2**63) - 1},
        {1: "integer key", 2: None},
        {"subclass": Text("x")},
        [[], {}, {"": [{}]}],
    ):
        assert canonical_bytes(value) == reference_canonical(value)
        assert indented_text(value) == reference_indented(value)


def test_a_lone_surrogate_is_written_as_its_escape_and_read_back() -> None:
    """A file name that is not UTF-8 (issue 49): msgspec cannot write its lone
    surrogate; the document holds the JSON escape instead, UTF-8 text that reads back
    as the same string."""
    value = {"file": "specs/bad\udcff.yaml", "k\udc80": ["x", "é"]}
    canonical = canonical_bytes(value)
    assert canonical == b'{"file":"specs/bad\\udcff.yaml","k\\udc80":["x","\xc3\xa9"]}'
    assert json.loads(canonical) == value
    indented = indented_text(value)
    indented.encode("utf-8")
    assert json.loads(indented) == value


def test_the_ascii_forms_are_what_json_writes_by_default() -> None:
    """`ascii=True` (the diagnostics' JSON, apply's outcome, `projects`, the plan's
    fingerprints): every character past `~` as its escape, astral ones as a surrogate
    pair, lone surrogates too, byte for byte the standard library's default output."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 4096):
        chunk = points[start : start + 4096]
        value = {"".join(chunk[:64]): ["".join(chunk)], "keys": dict.fromkeys(chunk[::97], 1)}
        assert canonical_bytes(value, ascii=True) == json.dumps(
            value, sort_keys=True, separators=(",", ":")).encode(), start
        assert indented_text(value, ascii=True) == json.dumps(value, indent=2) + "\n", start
    odd = {"file": "bad\udcff", "sub": Text("é"), "big": 2**64}  # msgspec refuses each
    assert canonical_bytes(odd, ascii=True) == json.dumps(
        odd, sort_keys=True, separators=(",", ":")).encode()
    assert indented_text({**odd, 1: "integer key"}, ascii=True) == json.dumps(
        {**odd, 1: "integer key"}, indent=2) + "\n"
