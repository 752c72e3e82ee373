"""The user's guide stays true: the spec reference is regenerated from the models and
compared; every relative link in README.md and docs/ names a file of the repository;
no page names a file the repository does not have."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitops.workflow_lines import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
NOT_OURS = ("DESIGN.md", "DOMAIN.md", "shared/data", "seeds/")


def test_spec_reference_is_current() -> None:
    """Stale after a model change: run `python -m reconciler.spec.reference >
    docs/spec-reference.md`."""
    fresh = subprocess.run(
        [sys.executable, "-m", "reconciler.spec.reference"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    checked_in = (ROOT / "docs" / "spec-reference.md").read_text()
    assert checked_in == fresh, (
        "docs/spec-reference.md is stale: run `python -m reconciler.spec.reference > "
        "docs/spec-reference.md`"
    )


def test_spec_reference_lists_every_model_field() -> None:
    from reconciler.spec.models import MODEL_BY_KIND
    from reconciler.spec.reference import rows

    page = (ROOT / "docs" / "spec-reference.md").read_text()
    for kind, model in MODEL_BY_KIND.items():
        assert f"## {kind}" in page
        for row in rows(kind, model):
            assert f"| `{row.path}` |" in page, (kind, row.path)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_name_files_of_the_repository(page: Path) -> None:
    missing = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        if not (page.parent / target).exists():
            missing.append(target)
    assert missing == [], f"{page.relative_to(ROOT)} links to files that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_name_no_file_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert [name for name in NOT_OURS if name in text] == []


def test_readme_links_the_guide() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "](docs/README.md)" in readme
    guide = (ROOT / "docs" / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in guide, f"docs/README.md does not link {page.name}"
