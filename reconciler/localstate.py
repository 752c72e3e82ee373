"""Where `--local` keeps the embedded server's state: one place per spec repository,
whatever the current directory, and one state whoever serves it.

    local_state_dir(paths=(), cwd=None) -> Path   absolute; nothing is created
    prepare_state_dir(state_dir)                  create it (and .reconcile/.gitignore)
    publish_server(state_dir, address)            a running `local-server` says where it is
    withdraw_server(state_dir)                    ... and that it stopped
    running_server(state_dir) -> address | None   the server serving this state now
    shown(path) -> str                            relative when under the current dir

The state lives in `.reconcile/local/` at the repository root: the nearest ancestor
of the first spec PATH (of the current directory when no PATH is given) that contains
`.git`. Without a repository it sits next to the spec root (the spec root's parent:
`specs/`'s parent for the default PATH). So `plan specs --local` from the root and
`plan . --local` from inside `specs/` use one state, never a second, empty one.

Creating `.reconcile/` writes `.reconcile/.gitignore` holding `*` (as git's own
tools and pytest's cache do), so that the local state is never committed by
accident, with no edit to the repository's own .gitignore.

One state, one server: while `reconcile local-server --local` (or `--state DIR`)
serves a state it holds the state's lock and publishes its address in
`server.json` there; `--local` then talks to that server instead of starting an
embedded one (backends/connect.py), so both see the same topics.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

LOCAL_STATE_DIR = Path(".reconcile") / "local"
DEFAULT_SPECS = Path("specs")  # spec/validate.py's DEFAULT_PATH (not imported: light)
GITIGNORE_TEXT = "# Created by reconcile: the local server's state is not for Git.\n*\n"
SERVER_FILE = "server.json"
MAX_SERVER_FILE = 4096


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


def prepare_state_dir(state_dir: Path) -> None:
    """Create the state directory; in the `.reconcile/local` layout, also
    `.reconcile/.gitignore` (`*`) when it is not there. Raises OSError."""
    state_dir.mkdir(parents=True, exist_ok=True)
    if state_dir.parts[-2:] == LOCAL_STATE_DIR.parts:
        ignore = state_dir.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text(GITIGNORE_TEXT)


def publish_server(state_dir: Path, address: str) -> None:
    """Written by `reconcile local-server` once it serves `state_dir` (whose lock it
    holds): its address and process, replaced atomically."""
    tmp = state_dir / (SERVER_FILE + ".tmp")
    tmp.write_text(json.dumps({"address": address, "pid": os.getpid()}) + "\n")
    os.replace(tmp, state_dir / SERVER_FILE)


def withdraw_server(state_dir: Path) -> None:
    """Removed by `reconcile local-server` before it stops serving."""
    with contextlib.suppress(OSError):
        (state_dir / SERVER_FILE).unlink()


def running_server(state_dir: Path) -> str | None:
    """The address of the `local-server` process serving `state_dir`, when its
    `server.json` names a process that is still running (the caller holds that the
    state's lock is taken, and checks the server answers)."""
    try:
        with open(state_dir / SERVER_FILE, "rb") as fh:
            data = json.loads(fh.read(MAX_SERVER_FILE))
        address, pid = data["address"], data["pid"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(address, str) or not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # running, as another user
    return address


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
