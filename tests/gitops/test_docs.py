"""The user's guide stays true: the spec reference lists every field of the spec's
Structs and is the page `python -m reconciler.spec.reference` writes; no page names a
file the repository does not have. (Links, down to the heading, and the README's
index of the guide: tests/docs/test_readme.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitops.workflow_lines import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_OURS = ("DESIGN.md", "DOMAIN.md", "shared/data", "seeds/")


def test_spec_reference_lists_every_field() -> None:
    from reconciler.spec.documents import RECORD_BY_KIND
    from reconciler.spec.reference import rows

    page = (ROOT / "docs" / "spec-reference.md").read_text()
    for kind, model in RECORD_BY_KIND.items():
        assert f"## {kind}" in page
        for row in rows(kind, model):
            assert f"| `{row.path}` |" in page, (kind, row.path)


def test_spec_reference_is_the_generated_page() -> None:
    from reconciler.spec.reference import render

    page = (ROOT / "docs" / "spec-reference.md").read_text()
    assert page == render(), (
        "docs/spec-reference.md is stale: run "
        "`python -m reconciler.spec.reference > docs/spec-reference.md`"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_name_no_file_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert [name for name in NOT_OURS if name in text] == []
