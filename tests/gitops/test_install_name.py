"""Nothing tells users to install `reconcile` by the name `reconcile`: on the package
index that name is an unrelated project ("A reconciliation loop system"), so `pip
install reconcile` would install someone else's code. Ours is the distribution
`pubsub-reconcile` (the command stays `reconcile`). Every file of the repository is
read (docs, examples, workflows, the CLI's own hints), one test per offending line."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.gitops.workflow_lines import ROOT

OURS = "pubsub-reconcile"
TAKEN = "reconcile"
# README.md is being rewritten by another change; it is checked once that lands.
NOT_CHECKED = {"tests/gitops/test_install_name.py"}
INSTALL = re.compile(r"\b(?:pip3?|pipx|uv\s+pip)\s+install\b(?P<args>[^\n]*)")
# A PEP 508 requirement naming the taken distribution: `reconcile @ URL`,
# `reconcile[plot]==1.0`, `reconcile>=0.1` (not `pubsub-reconcile ...`).
REQUIREMENT = re.compile(
    r"(?<![\w./-])reconcile\s*(?:\[[^\]\s]*\])?\s*(?:@\s*\S|===?|[<>~!]=|[<>](?!\s*/))"
)
NAME = re.compile(r"^reconcile(?:\[[^\]]*\])?(?:[=<>!~;@ ].*)?$")


def install_args(args: str) -> list[str]:
    """The requirements a `pip install ...` line names (options and shell plumbing cut)."""
    try:
        words = shlex.split(args, comments=True)
    except ValueError:
        words = args.split()
    out = []
    for word in words:
        if word in {"|", "||", "&&", ";", ">", "2>&1"} or word.startswith((">", "|", "&")):
            break
        if not word.startswith("-"):
            out.append(word)
    return out


def offences(text: str) -> list[tuple[int, str]]:
    """(line, text) of every place that installs, or requires, the taken name."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hit = REQUIREMENT.search(line) is not None
        for match in INSTALL.finditer(line):
            hit = hit or any(NAME.match(arg) for arg in install_args(match.group("args")))
        if hit:
            found.append((number, line.strip()))
    return found


def repository_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    out = []
    for rel in sorted(filter(None, listed.split("\0"))):
        path = ROOT / rel
        if rel in NOT_CHECKED or not path.is_file():
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images, binaries
        out.append(path)
    return out


FILES = repository_files()


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_installs_the_taken_name(path: Path) -> None:
    found = offences(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT)
    assert found == [], "\n".join(
        f"{where}:{n}: installs `{TAKEN}`, an unrelated project on the index; use `{OURS}`: {t}"
        for n, t in found
    )


def test_the_distribution_is_ours_and_the_command_keeps_its_name() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == OURS
    assert project["scripts"] == {"reconcile": "reconciler.cli:main"}
    assert any(path.name == "reconcile.yml" for path in FILES)  # the examples are read


@pytest.mark.parametrize(
    "line",
    [
        "pip install reconcile",
        "pip install -q 'reconcile[plot]'",
        "python -m pip install --upgrade reconcile==0.1.0",
        'RECONCILE_PIP_SPEC: "reconcile @ git+https://github.com/YOUR-ORG/reconcile@abc"',
        "hint: pip install 'reconcile[plot]' (or pip install matplotlib)",
        "uv pip install reconcile>=0.1",
    ],
)
def test_the_checker_finds_the_taken_name(line: str) -> None:
    assert offences(line) == [(1, line)]


@pytest.mark.parametrize(
    "line",
    [
        "pip install -e '.[test]'",
        "pip install 'pubsub-reconcile[plot]'",
        'RECONCILE_PIP_SPEC: "pubsub-reconcile @ git+https://github.com/YOUR-ORG/reconcile@abc"',
        "pip install \"$RECONCILE_PIP_SPEC\" && reconcile validate specs/",
        "reconcile apply plan.json > out.json",
        "git clone https://github.com/YOUR-ORG/reconcile",
    ],
)
def test_the_checker_lets_our_name_and_the_command_be(line: str) -> None:
    assert offences(line) == []
