"""The loader resolves plain scalars itself (and remembers each text not led by a
letter) and takes string children without entering them: every value keeps its type,
and the read without positions (large trees) gives the same data and the same
problems at the same places as the read with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reconciler.yamlio as yamlio
from reconciler.yamlio import MAX_DEPTH, YamlProblem, load_documents

SCALARS = """\
retention: 7d
again: 7d
hedge: 500ms
count: 100
ratio: 0.05
octal: 0o17
old_octal: 017
hex: 0x1F
sexagesimal: 190:20:30
exponent: 1e3
negative: -1.5e-3
infinity: .inf
nan_text: .nan
yes_word: yes
off_word: Off
null_word: ~
empty:
date: 2026-12-03
quoted: '7d'
double: "100"
tagged: ! 7d
string_tag: !!str 100
region: us-east1
long: projects/acme-project-00/locations/us-east1/keyRings/pubsub/cryptoKeys/topics
list: [7d, 100, yes, us-east1, '5s', ~]
flow: {schema: projects/p/schemas/s, encoding: JSON, first: 1e3}
"""


def _load_both(tmp_path: Path, text: str) -> tuple[Any, Any]:
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    with_positions = load_documents(path, text=text)
    without = load_documents(path, positions=False)
    return with_positions, without


# What the loader reads: the safe loader's YAML 1.1 types, a JSON exponent number as a
# float, and what int()/float() cannot read (dates, `017`, `190:20:30`, `.inf`) kept
# as written, for the models to reject with the text the user wrote.
EXPECTED = {
    "retention": "7d", "again": "7d", "hedge": "500ms", "count": 100, "ratio": 0.05,
    "octal": "0o17", "old_octal": "017", "hex": 31, "sexagesimal": "190:20:30",
    "exponent": 1000.0, "negative": -0.0015, "infinity": ".inf", "nan_text": ".nan",
    "yes_word": True, "off_word": False, "null_word": None, "empty": None,
    "date": "2026-12-03", "quoted": "7d", "double": "100", "tagged": "7d",
    "string_tag": "100", "region": "us-east1",
    "long": "projects/acme-project-00/locations/us-east1/keyRings/pubsub/cryptoKeys/topics",
    "list": ["7d", 100, True, "us-east1", "5s", None],
    "flow": {"schema": "projects/p/schemas/s", "encoding": "JSON", "first": 1000.0},
}


def test_scalars_resolve_as_before(tmp_path: Path) -> None:
    for _ in range(2):  # the second read answers from the remembered texts
        full, bare = _load_both(tmp_path, SCALARS)
        assert full[0].data == EXPECTED
        assert bare[0].data == EXPECTED
        assert [type(v) for v in bare[0].data.values()] == [type(v) for v in EXPECTED.values()]


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ("a: 1\nb: 2\na: 3\n", "yaml-duplicate-key", 3),
        ("a: {b: 1, b: 2}\n", "yaml-duplicate-key", 1),
        ("a:\n  - x\n  - {1: y}\n", None, None),
        ("a:\n  b: !!str {c: d}\n", "yaml-tag", 2),
        ("a: [x, !custom y]\n", "yaml-tag", 1),
        ("a:\n" + "".join("  " * (d + 1) + f"k{d}:\n" for d in range(MAX_DEPTH + 1))
         + "  " * (MAX_DEPTH + 2) + "leaf\n", "yaml-too-deep", MAX_DEPTH + 2),
        ("x: &x [a, b]\n" + "".join(f"y{i}: [*x, *x, *x, *x, *x, *x]\n" for i in range(4000)),
         "yaml-too-large", None),
    ],
)
def test_both_reads_agree_on_problems(
    tmp_path: Path, text: str, code: str | None, line: int | None
) -> None:
    outcomes = []
    for positions in (True, False):
        path = tmp_path / f"doc-{positions}.yaml"
        path.write_text(text)
        try:
            docs = load_documents(path, positions=positions)
        except YamlProblem as exc:
            outcomes.append((exc.code, exc.mark, exc.message))
        else:
            outcomes.append(("ok", [d.data for d in docs], [d.problems for d in docs]))
    assert outcomes[0] == outcomes[1]
    if code is not None:
        assert outcomes[0][0] == code
    if line is not None:
        assert outcomes[0][1].line == line


def test_boolean_keys_are_named_by_both_reads(tmp_path: Path) -> None:
    full, bare = _load_both(tmp_path, "spec:\n  on: x\n  labels: {yes: y}\n")
    assert full[0].problems == bare[0].problems
    assert [p[0] for p in bare[0].problems] == ["yaml-key-quote", "yaml-key-quote"]
    assert [p[2] for p in bare[0].problems] == [2, 3]


def test_the_node_limit_stops_both_reads_at_the_same_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yamlio, "MAX_NODES_PER_FILE", 11_000)  # made small (checked past 10k)
    text = "".join(f"k{i}: [a, b, c, d, e, f, g]\n" for i in range(1_500))
    path = tmp_path / "big.yaml"
    path.write_text(text)
    problems = []
    for positions in (True, False):
        with pytest.raises(YamlProblem) as raised:
            load_documents(path, positions=positions)
        problems.append((raised.value.code, raised.value.mark, raised.value.message))
    assert problems[0] == problems[1]
    assert problems[0][0] == "yaml-too-large"
