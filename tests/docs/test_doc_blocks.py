"""Every guide page agrees with the behaviour: each command block of README.md and
docs/*.md runs as a reader would run it (tests/docs/doc_blocks.py says how, and
docs/development.md the convention), in page order against a fresh copy of the
repository's specs/ and examples/, with the exit codes and output the page shows;
what cannot run here says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docs.doc_blocks import PAGES, ROOT, blocks, problems, run_block, sandbox

RUNNABLE = [page for page in PAGES if any(block.runs for block in blocks(page))]


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_s_commands_do_what_it_says(
    page: Path, tmp_path: Path, local_server: Any
) -> None:
    repo, bin_dir = sandbox(tmp_path)
    for block in blocks(page):
        if block.runs:
            run_block(block, repo, bin_dir, local_server.address)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_block_runs_or_says_why(page: Path) -> None:
    assert problems(page) == []


def test_the_convention_is_in_use() -> None:
    """The runner sees the pages' blocks: the README's main job and the quick start
    are run, and every block left out carries its reason."""
    readme = [b for b in blocks(ROOT / "README.md") if b.is_shell]
    assert any(b.runs and "reconcile apply specs/ --local" in b.content for b in readme)
    quickstart = [b for b in blocks(ROOT / "docs" / "quickstart.md") if b.runs]
    assert len(quickstart) >= 5
    for page in PAGES:
        for block in blocks(page):
            if block.is_shell and not block.runs:
                assert block.directives["skip"], block.where


@pytest.mark.slow
def test_the_quick_start_after_the_main_job_starts_empty_and_leaves_the_clone_as_it_was(
    tmp_path: Path, local_server: Any
) -> None:
    """The README's main job first (its topics in the local state), then the quick
    start, every block as the page shows it: afterwards the clone holds nothing the
    reader did not have (git sees no change, nothing untracked)."""
    import subprocess

    repo, bin_dir = sandbox(tmp_path)

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              check=True, env={"GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t",
                                               "GIT_AUTHOR_EMAIL": "t@e.invalid",
                                               "GIT_COMMITTER_EMAIL": "t@e.invalid",
                                               "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
        return done.stdout

    git("init", "-q")
    (repo / ".gitignore").write_text(".reconcile/\n")
    git("add", "-A")
    git("commit", "-q", "-m", "clone")
    main_job = next(b for b in blocks(ROOT / "README.md")
                    if b.runs and "reconcile apply specs/ --local" in b.content)
    run_block(main_job, repo, bin_dir, local_server.address)
    assert (repo / ".reconcile" / "local").is_dir()
    for block in blocks(ROOT / "docs" / "quickstart.md"):
        if block.runs:
            run_block(block, repo, bin_dir, local_server.address)
    assert git("status", "--porcelain", "--untracked-files=all") == ""
