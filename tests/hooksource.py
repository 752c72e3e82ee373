"""One source of the `reconcile-validate` hook for every pre-commit test of a session:
a one-commit repository of the working tree and one pre-commit home beside it.

pre-commit builds a hook's environment once per (repository, rev) in its home and
reuses it, as on a developer's machine; each test with a home of its own built the
same environment again (an install of the project and its ~35 dependencies, the
largest part of those tests' time). Sharing one source at one rev and one home, every
test after the first runs the hook as a developer's second commit does. pre-commit
locks its home itself; the snapshot is made once, under a lock of its own, since
pytest-xdist's workers share the folder.
"""

from __future__ import annotations

import fcntl
from dataclasses import dataclass
from pathlib import Path

from tests.gitops.repo_support import git_env, snapshot_of_working_tree


@dataclass(frozen=True)
class HookSource:
    """The hook's repository, the rev to pin, and the pre-commit home to use."""

    repo: Path
    rev: str
    home: Path


def shared_hook_source(shared: Path) -> HookSource:
    """The session's hook source under `shared`, made by the first caller."""
    shared.mkdir(parents=True, exist_ok=True)
    repo, home, rev_file = shared / "reconcile-src", shared / "pre-commit-home", shared / "rev"
    with open(shared / "hook-source.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not rev_file.exists():
            git_home = shared / "git-home"
            git_home.mkdir(exist_ok=True)
            repo.mkdir(exist_ok=True)
            rev_file.write_text(snapshot_of_working_tree(repo, git_env(git_home)))
    return HookSource(repo, rev_file.read_text(), home)
