"""Walking the spec tree: every file found, every folder that could not be read named.

Nothing is skipped silently: an unreadable folder, a broken or looping symlink or a
vanished entry is an error diagnostic naming the path, so that a plan (and `--prune`)
never acts on a partial tree. Symlinked folders are followed; a link back to one of
its own ancestors is a loop (error), a second link to a folder already read is read
once (warning).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.diagnostics import Diagnostics
from reconciler.errors import InputError

SPEC_SUFFIXES = (".yaml", ".yml")
SNAPSHOT_NAMES = ("org-policy.yaml", "org-policy.yml")
MAX_FILES = 100_000


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    snapshot: Path | None = None
    snapshot_looked: list[Path] = field(default_factory=list)


def discover_tree(paths: Sequence[Path], diags: Diagnostics) -> Discovery:
    """Spec files under the given paths (sorted, hidden entries skipped) and the
    org-policy snapshot found at a spec root or above it, if any."""
    out = Discovery()
    for root in paths:
        if not root.exists():
            reason = "no such file or directory; check the PATH"
            if root.is_symlink():
                reason = "a broken or looping symlink; fix the link or the PATH"
            diags.error(str(root), 0, 0, "path-missing", reason)
            continue
        if not root.is_dir():
            # A file, or a FIFO, socket or device named as a PATH: the reader refuses
            # anything but a regular file, naming it (file-not-regular).
            out.files.append(root)
            _snapshot_for(root.parent, out)
            continue
        found: list[Path] = []
        _walk(root, found, diags)
        if not found:
            diags.error(
                str(root), 0, 0, "no-specs",
                "no spec files (*.yaml, *.yml) in this directory; point PATH at your spec tree",
            )
        out.files.extend(found)
        _snapshot_for(root, out)
    return out


def _snapshot_for(root: Path, out: Discovery) -> None:
    if out.snapshot is None:
        out.snapshot, looked = find_snapshot_looked(root)
        out.snapshot_looked.extend(p for p in looked if p not in out.snapshot_looked)


def _walk(root: Path, found: list[Path], diags: Diagnostics) -> None:
    """Depth first, sorted, files of a folder before its subfolders (as os.walk)."""
    seen: dict[str, Path] = {os.path.realpath(root): root}
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, (os.path.realpath(root),))]
    while stack:
        directory, ancestors = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            diags.error(
                str(directory), 0, 0, "path-unreadable",
                f"cannot read this folder ({exc.strerror}), so its specs were not checked; "
                "fix its permissions or remove it from the tree",
            )
            continue
        subfolders: list[tuple[Path, tuple[str, ...]]] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = directory / entry.name
            if entry.is_symlink() and not os.path.exists(path):
                diags.error(
                    str(path), 0, 0, "path-broken-link",
                    "a broken or looping symlink in the spec tree; fix the link or remove it",
                )
                continue
            try:
                is_dir = entry.is_dir()
            except OSError as exc:
                diags.error(str(path), 0, 0, "path-unreadable", f"cannot read: {exc.strerror}")
                continue
            if entry.name in SNAPSHOT_NAMES and directory == root:
                continue  # the snapshot, not a spec (a folder of that name: its reader says so)
            if is_dir:
                real = os.path.realpath(path)
                if real in ancestors:
                    diags.error(
                        str(path), 0, 0, "path-symlink-loop",
                        f"this symlink leads back to {seen.get(real, real)}, a folder that "
                        "contains it (a loop); remove the link",
                    )
                elif real in seen:
                    diags.warning(
                        str(path), 0, 0, "path-repeated",
                        f"this folder is the same as {seen[real]} (a symlink); its specs are "
                        "read once, from there",
                    )
                else:
                    seen[real] = path
                    subfolders.append((path, (*ancestors, real)))
                continue
            if not entry.name.endswith(SPEC_SUFFIXES):
                continue
            if len(found) >= MAX_FILES:
                diags.error(
                    str(root), 0, 0, "too-many-files",
                    f"more than {MAX_FILES:,} spec files; split the tree and validate "
                    "each part",
                )
                return
            found.append(path)
        stack.extend(reversed(subfolders))


def find_snapshot(start: Path) -> Path | None:
    """The nearest org-policy.yaml in the spec root or its parents, up to the repo root."""
    return find_snapshot_looked(start)[0]


def search_bound(here: Path) -> Path:
    """The last directory the snapshot search climbs to from `here` (resolved): the
    repository root (the nearest ancestor holding `.git`); outside a repository the
    home directory, else the current directory, when `here` is under it; else `here`
    itself. Never `/` or a shared folder such as /tmp, where anyone can leave an
    org-policy.yaml that would change what validation allows."""
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    for candidate in (Path.home(), Path.cwd()):
        try:
            top = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        if top != Path(top.anchor) and here.is_relative_to(top):
            return top
    return here


def find_snapshot_looked(start: Path) -> tuple[Path | None, list[Path]]:
    """The snapshot (if any) and every directory searched for it, nearest first, up to
    `search_bound`."""
    here = start.resolve()
    bound = search_bound(here)
    looked: list[Path] = []
    for directory in (here, *here.parents):
        looked.append(directory)
        # Anything there is the snapshot: a folder, a FIFO or a device is reported by
        # the reader, not taken for "no snapshot" (nor a folder's files for specs).
        present = [directory / n for n in SNAPSHOT_NAMES if os.path.lexists(directory / n)]
        if len(present) > 1:
            raise InputError(
                f"{directory}: two org-policy snapshots, {present[0].name} and "
                f"{present[1].name}; which one the org's constraints are is ambiguous, so "
                "neither is read",
                hint="keep one (`reconcile policy pull --out` writes org-policy.yaml) and "
                "delete or rename the other",
            )
        if present:
            return present[0], looked
        if directory == bound:
            break
    return None, looked
