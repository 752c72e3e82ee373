"""`validate --staged` and the symlinks a commit holds (issue 49, item 7), with the
real git: git records a symlink as a link whose content is its target, not the file
it leads to, so the staged tree follows a link within the index only, as a checkout
of the commit would within the repository. A link out of the repository, to nothing
the commit holds, or round in a loop is an error at the link's path; nothing outside
the repository is read. (The pre-commit hook's own run of it is in
test_precommit_example.py.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.gitops.repo_support import git_env, run_git

ROOT = Path(__file__).parents[2]
GOOD = (ROOT / "examples" / "specs" / "minimal.yaml").read_text()


def topic(name: str) -> str:
    return GOOD.replace("name: hello", f"name: {name}")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.fail("git is required for the --staged tests")
    env = git_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    assert run_git(repo, env, "init", "-q").returncode == 0
    (repo / "specs" / "good.yaml").write_text(GOOD)
    return repo, env


def staged(run_cli: Any, repo: Path, monkeypatch: Any, env: dict[str, str]) -> Any:
    monkeypatch.chdir(repo)
    for key in ("HOME", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(key, env[key])
    return run_cli("validate", "--staged", "specs")


@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_a_staged_link_out_of_the_repository_is_an_error_at_the_link(
    run_cli: Any, repo: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: Any,
    how: str,
) -> None:
    """The issue's trial: the file outside held a spec with an error, which --staged
    validated (and passed or failed on) although the commit does not contain it."""
    root, env = repo
    outside = tmp_path / "outside" / "secret.yaml"
    outside.parent.mkdir()
    outside.write_text(topic("goog-outside"))
    target = str(outside) if how == "absolute" else os.path.relpath(outside, root / "specs")
    (root / "specs" / "link.yaml").symlink_to(target)
    run_git(root, env, "add", "-A")
    result = staged(run_cli, root, monkeypatch, env)
    assert result.exit_code == 1, result.output
    assert (
        f"specs/link.yaml: error[path-link-outside]: this symlink leads outside the "
        f"repository (to {target}): the commit records only the link, so reconcile reads "
        "no file through it (commit the spec itself here, or link to a file in the "
        "repository)"
    ) in result.stdout
    assert "goog-outside" not in result.output


def test_a_staged_link_within_the_repository_is_followed_in_the_index(
    run_cli: Any, repo: tuple[Path, dict[str, str]], monkeypatch: Any,
) -> None:
    """A link to a staged file or folder elsewhere in the repository is what a
    checkout of the commit validates: the staged content, reported at the link's
    path; an unstaged edit of the target changes nothing."""
    root, env = repo
    (root / "common" / "team").mkdir(parents=True)
    (root / "common" / "shared.yaml").write_text(topic("goog-shared"))
    (root / "common" / "team" / "t.yaml").write_text(topic("team-topic"))
    (root / "specs" / "shared.yaml").symlink_to("../common/shared.yaml")
    (root / "specs" / "team").symlink_to("../common/team")
    run_git(root, env, "add", "-A")
    (root / "common" / "team" / "t.yaml").write_text(topic("goog-unstaged"))
    result = staged(run_cli, root, monkeypatch, env)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stdout.splitlines() if "error[" in line]
    assert errors == [
        "specs/shared.yaml:6:9: error[topic-id]: topic ID 'goog-shared' must not start "
        "with 'goog' (reserved by Google)"
    ]
    assert "3 files checked" in result.stderr  # good, shared (its target) and team/t

    # The staged target fixed (and the link unchanged): the commit passes.
    (root / "common" / "shared.yaml").write_text(topic("shared"))
    run_git(root, env, "add", "common/shared.yaml")
    assert staged(run_cli, root, monkeypatch, env).exit_code == 0


def test_links_that_lead_nowhere_in_the_commit(
    run_cli: Any, repo: tuple[Path, dict[str, str]], monkeypatch: Any,
) -> None:
    root, env = repo
    specs = root / "specs"
    (specs / "escape.yaml").symlink_to("../../../etc/passwd")
    (specs / "loop1.yaml").symlink_to("loop2.yaml")
    (specs / "loop2.yaml").symlink_to("loop1.yaml")
    (root / "untracked.yaml").write_text(topic("goog-untracked"))
    (specs / "unstaged.yaml").symlink_to("../untracked.yaml")
    run_git(root, env, "add", "specs")
    result = staged(run_cli, root, monkeypatch, env)
    assert result.exit_code == 1, result.output
    found = {line.split(": error[")[0]: line.split("]")[0].split("[")[1]
             for line in result.stdout.splitlines() if ": error[" in line}
    assert found == {
        "specs/escape.yaml": "path-link-outside",
        "specs/loop1.yaml": "path-symlink-loop",
        "specs/loop2.yaml": "path-symlink-loop",
        "specs/unstaged.yaml": "path-broken-link",
    }, result.stdout
    assert "specs/unstaged.yaml: error[path-broken-link]: this symlink leads to " \
        "untracked.yaml, which the commit does not contain" in result.stdout
    assert "goog-untracked" not in result.output and "root:" not in result.output


def _index(files: list[str], links: dict[str, str]) -> Any:
    from reconciler.index_links import IndexEntry, IndexLinks

    entries = [IndexEntry("100644", "0" * 40, 0, f) for f in files]
    entries += [IndexEntry("120000", "0" * 40, 0, link) for link in links]
    return IndexLinks(entries, {link: target.encode() for link, target in links.items()})


def test_a_link_is_resolved_a_component_at_a_time_as_the_kernel_would() -> None:
    """`..` after a link climbs from where the link leads, not from its name; a link
    met inside a target is followed too; the result never names a path outside."""
    from reconciler.index_links import LinkProblem

    index = _index(
        ["deep/x/y.yaml", "deep/z.yaml", "top.yaml"],
        {"specs/x": "../deep/x", "specs/a.yaml": "x/../z.yaml",
         "specs/b.yaml": "x/../../top.yaml", "specs/c.yaml": "x/../../../top.yaml",
         "specs/all": ".."},
    )
    assert index.resolve("specs/x") == "deep/x"
    assert index.resolve("specs/a.yaml") == "deep/z.yaml"
    assert index.resolve("specs/b.yaml") == "top.yaml"
    outside = index.resolve("specs/c.yaml")
    assert isinstance(outside, LinkProblem) and outside.code == "path-link-outside"
    assert index.resolve("specs/all") == ""  # the repository itself
    # The link written in the scratch tree leads straight to its end: that alone.
    assert index.closure(["specs/a.yaml"]) == {"specs/a.yaml", "deep/z.yaml"}
    assert index.closure(["specs/x"]) == {"specs/x", "deep/x/y.yaml"}
