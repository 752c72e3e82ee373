"""User docs describe the program as it is: no history of how it came to be (what an
earlier contract lacked, what is an addition to what). History lives in git. One test
per page, naming the line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Phrases that tell the story of the code rather than what it does.
HISTORY = re.compile(
    r"original (CLI )?contract|an addition to|#\s*addition\b|\bwas renamed\b|\bformerly\b"
    r"|\bin earlier versions\b|\bthe old (page|CLI|flag|option|format)\b|\bissue \d+\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_tells_no_history(page: Path) -> None:
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert found == [], "history in a user doc (it belongs in git):\n" + "\n".join(found)


def test_the_check_finds_the_phrases_it_was_written_for() -> None:
    for line in (
        "- `show` is an addition to the original CLI contract: it renders a saved plan.",
        "kind: Defaults                  # addition: applies to its directory and below",
    ):
        assert HISTORY.search(line), line
    assert not HISTORY.search("One addition of ours: before it hedges, a check ...")
