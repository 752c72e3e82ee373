"""Staged symlinks followed within git's index, never on disk (`validate --staged`).

Git records a symlink as a link (mode 120000) whose content is its target path; the
file it leads to is not part of the commit. A checkout of the commit follows it
within the repository, so the pre-commit check does the same, over the index alone:

    parse_stage_listing(out)   `git ls-files -z --stage` -> [IndexEntry]
    parse_batch(out)           `git cat-file --batch` -> [content]
    IndexLinks(entries, targets)
        .resolve(link) -> repository path ("" is the root) | LinkProblem
        .closure(paths) -> every entry the paths need, the links' targets included

A target is resolved one component at a time as the kernel would (a link met on the
way is replaced by its own target, `..` after it), against the index: an absolute
target or one climbing above the repository leads outside it, one that ends on
nothing staged leads nowhere, more than 40 links (Linux's MAXSYMLINKS) is a loop.
Each is a `LinkProblem`, a diagnostic at the link's path; nothing outside the
repository is ever named to git or read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LINK_MODE = "120000"
SUBMODULE_MODE = "160000"
MAX_LINKS = 40  # Linux's MAXSYMLINKS: links followed in one resolution


@dataclass(frozen=True)
class IndexEntry:
    mode: str
    object: str
    stage: int
    path: str  # as git names it, `/`-separated; os.fsdecode of its bytes

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE


@dataclass(frozen=True)
class LinkProblem:
    code: str
    message: str
    hint: str


def parse_stage_listing(out: bytes) -> list[IndexEntry]:
    """`<mode> <object> <stage>\\t<path>` records, NUL-terminated."""
    entries = []
    for record in filter(None, out.split(b"\0")):
        head, _, path = record.partition(b"\t")
        mode, obj, stage = head.decode("ascii").split(" ")
        entries.append(IndexEntry(mode, obj, int(stage), os.fsdecode(path)))
    return entries


def parse_batch(out: bytes) -> list[bytes]:
    """The contents `git cat-file --batch` printed: `<object> <type> <size>\\n`, the
    content, a newline; one per object asked for, in order."""
    contents = []
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split(b" ")
        if len(header) != 3:  # `<object> missing`: the index names a lost object
            raise ValueError(f"git cat-file: {out[at:end].decode(errors='replace')}")
        size = int(header[2])
        contents.append(out[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return contents


class IndexLinks:
    """The index's entries (the whole index, every stage 0 path) and the targets of
    its symlinks."""

    def __init__(self, entries: Sequence[IndexEntry], targets: dict[str, bytes]) -> None:
        self._entries = {e.path: e for e in entries}
        self._targets = {path: os.fsdecode(t) for path, t in targets.items()}
        self._dirs = {""}
        for path in self._entries:
            parts = path.split("/")
            self._dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        self._paths = sorted(self._entries)

    def resolve(self, link: str) -> str | LinkProblem:
        """Where the staged symlink `link` leads in the index: a staged file's or
        folder's path ("" the repository itself), or the problem."""
        pending = self._targets[link].split("/")
        if self._targets[link].startswith("/"):
            return _outside(self._targets[link])
        done = link.split("/")[:-1]  # relative to the link's own folder
        followed = 1
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    return _outside(self._targets[link])
                done.pop()
                continue
            here = "/".join([*done, part])
            entry = self._entries.get(here)
            if entry is not None and entry.is_link:
                followed += 1
                if followed > MAX_LINKS:
                    return LinkProblem(
                        "path-symlink-loop",
                        f"this symlink leads round in a loop (more than {MAX_LINKS} links "
                        "followed)",
                        "remove the link, or point it at a file in the repository",
                    )
                target = self._targets[here]
                if target.startswith("/"):
                    return _outside(target)
                pending = target.split("/") + pending
                continue
            done.append(part)
        found = "/".join(done)
        entry = self._entries.get(found)
        if found in self._dirs or (entry is not None and entry.mode != SUBMODULE_MODE):
            return found
        return LinkProblem(
            "path-broken-link",
            f"this symlink leads to {found}, which the commit does not contain",
            "stage the file it leads to, or remove the link",
        )

    def closure(self, paths: Iterable[str]) -> set[str]:
        """`paths` and, for every symlink among them or met on the way, what it leads
        to: a staged file, or every entry under a staged folder (one that holds the
        link too: validation names the loop, as it does in a checkout)."""
        wanted: set[str] = set()
        work = list(paths)
        while work:
            path = work.pop()
            if path in wanted:
                continue
            wanted.add(path)
            entry = self._entries.get(path)
            if entry is None or not entry.is_link:
                continue
            found = self.resolve(path)
            if isinstance(found, LinkProblem):
                continue
            if found in self._entries:
                work.append(found)
            else:
                work += self._under(found)
        return wanted

    def _under(self, folder: str) -> list[str]:
        prefix = folder + "/" if folder else ""
        return [p for p in self._paths if p.startswith(prefix)]


def _outside(target: str) -> LinkProblem:
    return LinkProblem(
        "path-link-outside",
        f"this symlink leads outside the repository (to {target}): the commit records "
        "only the link, so reconcile reads no file through it",
        "commit the spec itself here, or link to a file in the repository",
    )
