"""Positive and negative example specs driven by one parametrized test.

Each invalid case states what it expects on the very line that must be reported:
    - us-east1-b   # expect: error[region-zone] is a zone
Several expectations on one line are joined with `&&`. A case is a file, or a
directory (for cross-file checks and org-policy snapshots). A case passes only when
the reported diagnostics are exactly the expected ones: same lines, severities and
codes, each message containing its expected fragment. The positive examples are the
reference tree `specs/` and every file in `examples/specs/`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.spec.validate import validate_paths

CASES = Path(__file__).parent / "cases"
EXPECT = re.compile(r"#\s*expect:\s*(.+)$")
ONE = re.compile(r"(error|warning)\[([a-z0-9-]+)\]\s*(.*)")


def _cases(kind: str) -> list[Path]:
    return sorted(p for p in (CASES / kind).iterdir() if not p.name.startswith("."))


def _rel(path: Path, case: Path) -> str:
    return path.name if case.is_file() else str(path.relative_to(case))


def _expectations(case: Path) -> set[tuple[str, int, str, str, str]]:
    files = sorted(case.rglob("*.y*ml")) if case.is_dir() else [case]
    out = set()
    for f in files:
        for lineno, line in enumerate(f.read_text().splitlines(), start=1):
            m = EXPECT.search(line)
            if not m:
                continue
            for part in m.group(1).split("&&"):
                one = ONE.match(part.strip())
                assert one, f"{f}:{lineno}: malformed expectation {part!r}"
                out.add((_rel(f, case), lineno, one.group(1), one.group(2), one.group(3).strip()))
    return out


@pytest.mark.parametrize("case", _cases("invalid"), ids=lambda p: p.name)
def test_invalid_case_reports_exactly_the_expected_diagnostics(case: Path) -> None:
    expected = _expectations(case)
    assert expected, f"{case} states no expectation"
    result = validate_paths([case])
    got = [
        (_rel(Path(d.file), case), d.line, d.severity.value, d.code, d.message)
        for d in result.diagnostics.sorted()
    ]
    unmatched = list(got)
    for name, line, severity, code, fragment in sorted(expected):
        hit = next(
            (
                g
                for g in unmatched
                if g[:4] == (name, line, severity, code) and fragment in g[4]
            ),
            None,
        )
        assert hit is not None, (
            f"expected {name}:{line} {severity}[{code}] containing {fragment!r}; got:\n"
            + "\n".join(f"  {g[0]}:{g[1]} {g[2]}[{g[3]}] {g[4]}" for g in got)
        )
        unmatched.remove(hit)
    assert not unmatched, "unexpected diagnostics:\n" + "\n".join(
        f"  {g[0]}:{g[1]} {g[2]}[{g[3]}] {g[4]}" for g in unmatched
    )
    if any(e[2] == "error" for e in expected):
        assert result.diagnostics.has_errors


ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples" / "specs").glob("*.yaml"))
# examples/specs/org-policy.yaml is the tree's snapshot (the pre-commit example's), not a spec.
VALID = [ROOT / "specs", *[p for p in EXAMPLES if p.name != "org-policy.yaml"]]


@pytest.mark.parametrize("case", VALID, ids=lambda p: str(p.relative_to(ROOT)))
def test_valid_case_has_no_diagnostics(case: Path) -> None:
    result = validate_paths([case])
    assert [d.render() for d in result.diagnostics.sorted()] == []
    assert result.desired.topics, "a valid case must declare at least one topic"
