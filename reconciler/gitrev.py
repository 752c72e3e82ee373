"""Files as they were at a git revision (`reconcile projects --changed-from REF`) or as
git's index holds them (`reconcile validate --staged`, the pre-commit hook): the spec
PATHs (and the org-policy snapshot) written into a scratch directory laid out like the
repository, so that the tree then, or the tree being committed, is validated exactly
as the tree now is.

    at_revision(ref, paths, scratch) -> [path in scratch]   one per PATH that existed
    staged(root, paths, scratch) -> StagedTree   the paths in scratch, one per path,
                                                 and the staged symlinks that lead
                                                 nowhere in the commit
    Relocation(scratch, root).shown(text)   scratch paths in a message as the user's

Only git's own commands are run (`rev-parse`, `cat-file`, `archive`, `ls-files`,
`checkout-index`); a staged symlink is followed within the index only
(reconciler/index_links.py); a REF that
starts with `-` is refused, so that it is never taken for an option. The archive is
unpacked with tarfile's "data" filter (no links out of the scratch directory, no
devices, no absolute paths).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from reconciler.diagnostics import Diagnostic, Severity
from reconciler.errors import UsageError
from reconciler.index_links import (
    IndexEntry,
    IndexLinks,
    LinkProblem,
    parse_batch,
    parse_stage_listing,
)
from reconciler.spec.discover import SNAPSHOT_NAMES

TIMEOUT = 120.0  # s for one git command (a spec repository is small)


def _git(
    cwd: Path, *args: str, option: str = "--changed-from", stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("git")
    if exe is None:
        raise UsageError(f"{option} needs git, which is not on PATH")
    try:
        return subprocess.run(
            [exe, *args], cwd=cwd, input=stdin, capture_output=True, timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} did not finish within {TIMEOUT:g} s in {cwd}") from None


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


def repository_of(path: Path, option: str = "--changed-from") -> Path:
    """The root of the git work tree holding `path`."""
    where = path if path.is_dir() else path.parent
    done = _git(
        where if where.exists() else Path.cwd(), "rev-parse", "--show-toplevel", option=option
    )
    if done.returncode != 0:
        raise UsageError(
            f"{option}: {path} is not in a git repository ({_said(done)})",
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
    rels = _relative(root, [*paths, *extra], "--changed-from")
    wanted = [r for r in dict.fromkeys(rels.values()) if _exists(root, commit, r)]
    (scratch / ".git").mkdir(parents=True, exist_ok=True)
    if wanted:
        done = _git(root, "archive", "--format=tar", commit, "--", *wanted)
        if done.returncode != 0:
            raise UsageError(f"--changed-from: git archive failed: {_said(done)}")
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(scratch, filter="data")
    return [scratch / rels[p] for p in paths if rels[p] in wanted]


def _relative(root: Path, paths: Sequence[Path], option: str) -> dict[Path, str]:
    """Each path as git names it, relative to the repository root."""
    rels: dict[Path, str] = {}
    for path in paths:
        try:
            rel = Path(os.path.abspath(path)).resolve().relative_to(root)
        except ValueError:
            raise UsageError(f"{option}: {path} is outside the repository {root}") from None
        rels[path] = rel.as_posix() or "."
    return rels


class StagedTree(NamedTuple):
    """`paths`: where each PATH is in the scratch tree; `problems`: a diagnostic at
    each staged symlink that cannot be followed within the commit (at its scratch
    path, as validation's own diagnostics are)."""

    paths: list[Path]
    problems: list[Diagnostic]


def staged(root: Path, paths: Sequence[Path], scratch: Path) -> StagedTree:
    """Write `paths` as git's index holds them (what `git commit` would record:
    untracked files and unstaged edits left out, a staged deletion gone) under
    `scratch`, with the org-policy snapshots staged at or above each of them, laid out
    as under `root` with a `.git` marker (a path with nothing staged is not written:
    validation names it missing).

    A staged symlink is what git records: a link whose content is its target. It is
    followed within the index only (index_links.py), as a checkout of the commit would
    follow it within the repository: one to a staged file or folder becomes a link
    in the scratch tree to that file's or folder's staged content; one that leads out
    of the repository, to nothing the commit holds, or round in a loop is a problem
    at the link's path, and nothing outside the repository is ever read."""
    option = "--staged"
    rels = _relative(root, paths, option)
    pathspecs = list(dict.fromkeys([*rels.values(), *_snapshot_candidates(rels.values())]))
    entries = _index_entries(root, pathspecs, option)
    (scratch / ".git").mkdir(parents=True, exist_ok=True)
    problems: list[Diagnostic] = []
    links: dict[str, str] = {}
    if any(e.is_link for e in entries):
        whole = _index_entries(root, [], option)
        index = IndexLinks(whole, _link_targets(root, [e for e in whole if e.is_link]))
        wanted = index.closure([e.path for e in entries])
        entries = [e for e in whole if e.path in wanted]
        for entry in entries:
            if entry.is_link:
                found = index.resolve(entry.path)
                if isinstance(found, LinkProblem):
                    problems.append(_link_diagnostic(scratch, entry.path, found))
                else:
                    links[entry.path] = found
    names = sorted({e.path for e in entries if not e.is_link})
    if names:
        prefix = str(scratch) + os.sep
        done = _git(
            root, "checkout-index", "-z", "--stdin", f"--prefix={prefix}",
            option=option, stdin=b"\0".join(os.fsencode(n) for n in names),
        )
        if done.returncode != 0:
            raise UsageError(
                f"{option}: git checkout-index failed: {_said(done)}",
                hint="resolve the merge conflicts in the spec tree and stage the result",
            )
    for link, target in sorted(links.items()):
        where = scratch / link
        where.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(scratch / target if target else scratch, where)
    return StagedTree([scratch / rels[p] for p in paths], problems)


def _index_entries(root: Path, pathspecs: Sequence[str], option: str) -> list[IndexEntry]:
    """The index's entries under `pathspecs` (all of them for none)."""
    listed = _git(root, "ls-files", "-z", "--stage", "--", *pathspecs, option=option)
    if listed.returncode != 0:
        raise UsageError(f"{option}: git ls-files failed: {_said(listed)}")
    return parse_stage_listing(listed.stdout)


def _link_targets(root: Path, links: Sequence[IndexEntry]) -> dict[str, bytes]:
    """Each staged symlink's content (its target), read from git's object store."""
    if not links:
        return {}
    done = _git(
        root, "cat-file", "--batch", option="--staged",
        stdin=b"".join(e.object.encode() + b"\n" for e in links),
    )
    if done.returncode != 0:
        raise UsageError(f"--staged: git cat-file failed: {_said(done)}")
    return {e.path: blob for e, blob in zip(links, parse_batch(done.stdout), strict=True)}


def _link_diagnostic(scratch: Path, link: str, problem: LinkProblem) -> Diagnostic:
    return Diagnostic(
        str(scratch / link), 0, 0, Severity.ERROR, problem.code, problem.message, problem.hint
    )


def _snapshot_candidates(specs: Iterable[str]) -> list[str]:
    """The org-policy snapshot names validation looks for at and above each spec PATH
    (spec/discover.py), as repository paths."""
    found: list[str] = []
    for rel in specs:
        here = PurePosixPath(rel)
        for directory in (here, *here.parents):
            found += [(directory / name).as_posix() for name in SNAPSHOT_NAMES]
    return found


class Relocation:
    """Scratch paths in what validation says, written back as the user's: the
    repository path, relative to the current directory."""

    def __init__(self, scratch: Path, root: Path) -> None:
        self._scratch = str(scratch)
        self._root = root

    def shown(self, text: str) -> str:
        if self._scratch not in text:
            return text
        return re.sub(re.escape(self._scratch) + r"(/[^\s:,;'\"()]*)?", self._user, text)

    def _user(self, found: re.Match[str]) -> str:
        inside = (found.group(1) or "").lstrip("/")
        return os.path.relpath(self._root / inside) if inside else os.path.relpath(self._root)
