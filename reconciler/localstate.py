"""Where `--local` keeps the embedded server's state: one place per spec repository,
whatever the current directory.

    local_state_dir(paths=(), cwd=None) -> Path   absolute; nothing is created
    shown(path) -> str                            relative when under the current dir

The state lives in `.reconcile/local/` at the repository root: the nearest ancestor
of the first spec PATH (of the current directory when no PATH is given) that contains
`.git`. Without a repository it sits next to the spec root (the spec root's parent:
`specs/`'s parent for the default PATH). So `plan specs --local` from the root and
`plan . --local` from inside `specs/` use one state, never a second, empty one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

LOCAL_STATE_DIR = Path(".reconcile") / "local"
DEFAULT_SPECS = Path("specs")  # spec/validate.py's DEFAULT_PATH (not imported: light)


def repository_root(start: Path) -> Path | None:
    """The nearest of `start` and its ancestors holding `.git` (a folder, or the file
    of a worktree or submodule)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def local_state_dir(paths: Sequence[Path] = (), cwd: Path | None = None) -> Path:
    """The absolute state directory `--local` uses for these spec PATHs."""
    here = Path(os.path.abspath(cwd or Path.cwd()))
    first = Path(os.path.abspath(here / (paths[0] if paths else DEFAULT_SPECS)))
    spec_root = first.parent if first.is_file() else first
    found = repository_root(spec_root if paths else here)
    base = found if found is not None else spec_root.parent
    return base.resolve() / LOCAL_STATE_DIR


def shown(path: str) -> str:
    """A state directory for people: relative to the current directory when it is
    under it (`.reconcile/local`), else as recorded (absolute)."""
    target = Path(path)
    if not target.is_absolute():
        return path
    try:
        return str(target.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return path
