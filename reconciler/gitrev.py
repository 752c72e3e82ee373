"""Files as they were at a git revision, for `reconcile projects --changed-from REF`:
the spec PATHs (and the org-policy snapshot) written out of `git archive` into a
scratch directory laid out like the repository, so that the tree then is validated
exactly as the tree now is.

    at_revision(ref, paths, scratch) -> [path in scratch]   one per PATH that existed

Only git's own commands are run (`rev-parse`, `cat-file`, `archive`); a REF that
starts with `-` is refused, so that it is never taken for an option. The archive is
unpacked with tarfile's "data" filter (no links out of the scratch directory, no
devices, no absolute paths).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

from reconciler.errors import UsageError

TIMEOUT = 120.0  # s for one git command (a spec repository is small)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("git")
    if exe is None:
        raise UsageError("--changed-from needs git, which is not on PATH")
    try:
        return subprocess.run(
            [exe, *args], cwd=cwd, capture_output=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} did not finish within {TIMEOUT:g} s in {cwd}") from None


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


def repository_of(path: Path) -> Path:
    """The root of the git work tree holding `path`."""
    where = path if path.is_dir() else path.parent
    done = _git(where if where.exists() else Path.cwd(), "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise UsageError(
            f"--changed-from: {path} is not in a git repository ({_said(done)})",
            hint="run it in a clone of the spec repository",
        )
    return Path(done.stdout.decode().strip()).resolve()


def resolve(root: Path, ref: str) -> str:
    """The commit `ref` names, or a UsageError saying what git said."""
    if ref.startswith("-") or not ref.strip():
        raise UsageError(f"--changed-from {ref!r}: not a git revision")
    done = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if done.returncode != 0:
        raise UsageError(
            f"--changed-from {ref}: no such commit in {root}",
            hint="fetch it first (e.g. `git fetch origin main`, or a checkout with the "
            "full history: actions/checkout `fetch-depth: 0`, GitLab `GIT_DEPTH: 0`)",
        )
    return done.stdout.decode().strip()


def _exists(root: Path, commit: str, rel: str) -> bool:
    name = f"{commit}:" if rel == "." else f"{commit}:{rel}"
    return _git(root, "cat-file", "-e", name).returncode == 0


def at_revision(
    root: Path, commit: str, paths: Sequence[Path], extra: Sequence[Path], scratch: Path
) -> list[Path]:
    """Write `paths` and `extra` (files such as the snapshot) as they were at `commit`
    under `scratch` (laid out as under `root`, with a `.git` marker so that the
    snapshot search stops there too); returns where each PATH that existed then is."""
    rels: dict[Path, str] = {}
    for path in [*paths, *extra]:
        try:
            rel = Path(os.path.abspath(path)).resolve().relative_to(root)
        except ValueError:
            raise UsageError(f"--changed-from: {path} is outside the repository {root}") from None
        rels[path] = rel.as_posix() or "."
    wanted = [r for r in dict.fromkeys(rels.values()) if _exists(root, commit, r)]
    (scratch / ".git").mkdir(parents=True, exist_ok=True)
    if wanted:
        done = _git(root, "archive", "--format=tar", commit, "--", *wanted)
        if done.returncode != 0:
            raise UsageError(f"--changed-from: git archive failed: {_said(done)}")
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(scratch, filter="data")
    return [scratch / rels[p] for p in paths if rels[p] in wanted]
