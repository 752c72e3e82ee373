"""Issue 11, bullet 5: every input under 1 MiB is validated in bounded work, whatever
YAML features it piles up (anchors, aliases, `<<` merges, deep flow nesting, long
scalars). Work is counted in nodes converted and pairs merged, never in seconds."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.spec.validate import validate_paths
from reconciler.yamlio import (
    ALIAS_ALLOWANCE,
    MAX_ALIAS_EXPANSION,
    Budget,
    YamlProblem,
    load_documents,
)

MIB = 1024 * 1024


@st.composite
def yaml_features(draw: st.DrawFn) -> str:
    """A document of named entries, each an anchored mapping, a list of aliases, a
    merge of earlier entries, a deep flow nest or a long scalar."""
    lines: list[str] = []
    anchors: list[str] = []
    for i in range(draw(st.integers(1, 40))):
        feature = draw(st.sampled_from(["map", "aliases", "merge", "flow", "scalar", "block"]))
        name = f"e{i}"
        if feature == "map" or not anchors:
            keys = draw(st.integers(1, 2000))
            body = ", ".join(f"k{j}: {j}" for j in range(keys))
            lines.append(f"{name}: &{name} {{{body}}}")
            anchors.append(name)
        elif feature == "aliases":
            refs = draw(st.lists(st.sampled_from(anchors), min_size=1, max_size=2000))
            lines.append(f"{name}: &{name} [{', '.join('*' + r for r in refs)}]")
            anchors.append(name)
        elif feature == "merge":
            refs = draw(st.lists(st.sampled_from(anchors), min_size=1, max_size=2000))
            lines.append(f"{name}: &{name} {{<<: [{', '.join('*' + r for r in refs)}], x: 1}}")
            anchors.append(name)
        elif feature == "flow":
            depth = draw(st.integers(1, 200))
            lines.append(f"{name}: " + "[" * depth + "]" * depth)
        elif feature == "block":
            depth = draw(st.integers(1, 300))
            nested = "".join(" " * (2 * d + 2) + f"n{d}:\n" for d in range(depth))
            lines.append(f"{name}:\n" + nested)
        else:
            lines.append(f"{name}: " + "x" * draw(st.integers(0, 200_000)))
    text = "\n".join(lines) + "\n"
    return text[: MIB - 1]


def _spent(path: Path) -> int:
    """Work done reading `path`: nodes converted (the loader's own count) plus pairs
    copied by merges, counted here independently of the loader's budget."""
    import reconciler.yamlio as yamlio

    copied = 0
    real = yamlio.merge_pairs

    def counting(node: Any, flatten: Any) -> Any:
        def counted(source: Any) -> Any:
            nonlocal copied
            pairs = flatten(source)
            copied += len(pairs)
            return pairs

        return real(node, counted)

    budget = Budget()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yamlio, "merge_pairs", counting)
        with contextlib.suppress(YamlProblem):
            load_documents(path, budget=budget)
    return budget.spent + copied


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_features())
def test_validate_work_is_bounded_by_the_input_size(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "features.yaml"
        path.write_text(text)
        spent = _spent(path)
        # Each written node is at least a byte; merges are charged like aliases (twice
        # counted here: as charged and as copied); the last charge may overshoot.
        bound = 2 * (MAX_ALIAS_EXPANSION + 1) * len(text) + 2 * ALIAS_ALLOWANCE
        assert spent <= bound, (spent, bound, len(text))
        # And the whole validate pipeline finishes with diagnostics, not an exception.
        result = validate_paths([path])
        assert result.diagnostics.items


def test_the_bound_holds_for_the_worst_merge_chain(tmp_path: Path) -> None:
    # Each mapping merges all earlier ones: quadratic copying without the budget.
    lines = ["e0: &e0 {k: 0}"]
    for i in range(1, 3000):
        lines.append(f"e{i}: &e{i} {{<<: [*e{i - 1}, *e0], k{i}: {i}}}")
    path = tmp_path / "chain.yaml"
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    spent = _spent(path)
    assert spent <= 2 * (MAX_ALIAS_EXPANSION + 1) * len(text) + 2 * ALIAS_ALLOWANCE


def test_the_bound_holds_for_many_merges_of_one_big_mapping(tmp_path: Path) -> None:
    # 100 mappings each merging a 1,000-key mapping 1,000 times: 10^8 copied pairs
    # from 600 KB if merges were free.
    big = ", ".join(f"k{i}: {i}" for i in range(1000))
    merges = ", ".join(["*big"] * 1000)
    text = f"big: &big {{{big}}}\n" + "".join(
        f"m{j}: {{<<: [{merges}]}}\n" for j in range(100)
    )
    path = tmp_path / "merges.yaml"
    path.write_text(text)
    assert len(text) < MIB
    spent = _spent(path)
    assert spent <= 2 * (MAX_ALIAS_EXPANSION + 1) * len(text) + 2 * ALIAS_ALLOWANCE
