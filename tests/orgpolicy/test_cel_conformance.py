"""The CEL library the evaluator uses, on google/cel-spec's conformance tests for the
parts of CEL that custom-constraint conditions use (benchmarks/cel_libraries.py runs
them for every candidate). The data is read from ../shared (or $RECONCILE_SHARED),
never copied into the repository."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("RECONCILE_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data" / "cel-spec"
# The two tests the library fails, neither reachable from a condition over a resource
# map: a dotted variable name resolved without the checker, and a map literal whose
# keys repeat across numeric types.
KNOWN_FAILURES = {
    "fields/qualified_identifier_resolution/qualified_identifier_resolution_unchecked",
    "fields/qualified_identifier_resolution/map_value_repeat_key_heterogeneous",
}


def _bench() -> ModuleType:
    path = REPO / "benchmarks" / "cel_libraries.py"
    spec = importlib.util.spec_from_file_location("cel_libraries", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cel_libraries"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    if not DATA.is_dir():
        pytest.skip(f"no cel-spec conformance data at {DATA} (../shared is absent)")
    return _bench()


def test_conformance_of_the_chosen_library(bench: ModuleType) -> None:
    library = bench._cel_expr_python()
    tallies = bench.conformance(library, DATA, bench.RELEVANT)
    failures = {f for t in tallies.values() for f in t.failures}
    assert failures <= KNOWN_FAILURES, sorted(failures - KNOWN_FAILURES)
    passed = sum(t.passed for t in tallies.values())
    assert passed >= 950, {n: (t.passed, t.applicable) for n, t in tallies.items()}


def test_condition_table_of_the_chosen_library(bench: ModuleType) -> None:
    passed, failures = bench.condition_table(bench._cel_expr_python())
    assert not failures
    assert passed == len(bench.CONDITIONS)
