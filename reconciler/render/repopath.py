"""A finding's file as the repository names it, for the reports a code host places
(GitHub annotations: render/github.py; SARIF: render/sarif.py): GitHub places an
annotation, and code scanning a result, only at a path relative to the repository
root, whatever directory the command ran in and however the path reached the
finding (an org-policy snapshot is found by resolved path, so it is absolute).

    repo_path(path) -> str

A path is made relative to the root of the git work tree holding it (the nearest
directory above it with a `.git`, as the snapshot search finds the root); its
directory is resolved, the file itself is not (a spec that is a symlink is annotated
where it is written). Left as it is: a path in no git work tree, and a relative one
that names nothing here (a finding about `projects/P` names a project, not a file).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


def repo_path(path: str) -> str:
    """`path` relative to its repository's root, or as given (module docstring)."""
    given = Path(path)
    if not path or (not given.is_absolute() and not os.path.lexists(given)):
        return path
    try:
        directory = given.parent.resolve()
    except (OSError, RuntimeError):
        return path
    root = _work_tree(directory)
    if root is None:
        return path
    return (directory / given.name).relative_to(root).as_posix()


@functools.lru_cache(maxsize=256)
def _work_tree(directory: Path) -> Path | None:
    """The nearest of `directory` and its parents holding `.git` (a directory, or the
    file a worktree or submodule has)."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
