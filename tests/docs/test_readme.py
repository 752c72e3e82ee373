"""The README stays an entry point: short, naming only files in the repository,
indexing every guide page, and giving the test command that CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from reconciler import clidoc
from tests.docs.doc_blocks import PAGES, ROOT, blocks

README = ROOT / "README.md"
MAX_LINES = 200


def _links(page: Path) -> list[str]:
    found = []
    tokens = MarkdownIt("commonmark").parse(page.read_text())
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrGet("href")))
            elif child.type == "image":
                found.append(str(child.attrGet("src")))
    return found


def _anchors(page: Path) -> set[str]:
    tokens = MarkdownIt("commonmark").parse(page.read_text())
    return {
        clidoc.anchor(tokens[i + 1].content)
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    }


def test_the_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_every_page_links_only_files_in_the_repository_and_their_headings() -> None:
    broken = []
    for page in PAGES:
        for href in _links(page):
            if re.match(r"^[a-z]+:", href):
                continue
            path, _, fragment = href.partition("#")
            target = (page.parent / path).resolve() if path else page.resolve()
            if not target.exists() or ROOT.resolve() not in target.parents:
                broken.append(f"{page.relative_to(ROOT)}: {href}")
            elif fragment and target.suffix == ".md" and fragment not in _anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {href} (no such heading)")
    assert broken == []


def test_the_readme_indexes_every_guide_page() -> None:
    linked = {
        (ROOT / href.split("#", 1)[0]).resolve()
        for href in _links(README)
        if href.startswith("docs/")
    }
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    missing = sorted(str(p.relative_to(ROOT.resolve())) for p in pages - linked)
    assert missing == [], "add one line per page to the README's guide table"


def _readme_test_command() -> str:
    """The last step of the README's block that runs pytest, as run inside the
    virtualenv (`.venv/bin/python -m pytest ...` -> `python -m pytest ...`)."""
    commands = [
        c.text
        for b in blocks(README)
        if b.is_shell
        for c in b.commands
        if "pytest" in c.text
    ]
    assert len(commands) == 1, commands
    last = commands[0].split("&&")[-1].strip()
    return re.sub(r"^\.venv/bin/", "", last)


def test_ci_runs_the_readme_s_test_command_in_parallel() -> None:
    command = _readme_test_command()
    assert re.search(r"\s-n\s+(auto|\d+)\b", command), command
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in (line.strip() for line in ci), f".ci/run does not run `{command}`"
