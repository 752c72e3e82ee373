"""`reconcile import` from end to end: write specs that reproduce live topics, so that
an existing project can be brought under reconcile without retyping it.

    run_import(projects, topics, out_dir, force, local, emulator, timeout) -> exit code

One file per project (`DIR/<project>.yaml`); nothing is written unless every target
file is new (or `--force`), so a refusal never leaves half an import behind. Usage
errors are raised before any call to the service.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from reconciler.backends.base import ObservedTopic
from reconciler.backends.deadline import DEFAULT_TIMEOUT
from reconciler.errors import EXIT_OK, BackendError, UsageError
from reconciler.fileio import write_atomically
from reconciler.names import topic_name, topics_prefix
from reconciler.spec.export import build_documents, render_documents, settings_key


def select(
    project: str, topics: Sequence[ObservedTopic], wanted: Sequence[str]
) -> list[ObservedTopic]:
    """The topics named by --topic (ID or full name; all when none named)."""
    if not wanted:
        return list(topics)
    names = {w if w.startswith("projects/") else topics_prefix(project) + w for w in wanted}
    return [t for t in topics if t.name in names]


def missing_topics(
    projects: Sequence[str], found: dict[str, list[ObservedTopic]], wanted: Sequence[str]
) -> list[str]:
    """--topic values that matched no live topic in any of the projects."""
    names = {t.name for ts in found.values() for t in ts}
    out = []
    for w in wanted:
        full = [w] if w.startswith("projects/") else [topic_name(p, w) for p in projects]
        if not names.intersection(full):
            out.append(w)
    return out


def existing_profiles(out_dir: Path, skip: set[Path]) -> dict[str, tuple[int, int, int]]:
    """Named hedging profiles already defined in the output tree (files about to be
    overwritten excluded), so that imported topics refer to them instead of
    redefining them (a duplicate profile name would fail validation)."""
    if not out_dir.is_dir():
        return {}
    from reconciler.diagnostics import Diagnostics
    from reconciler.spec.loader import discover, load_tree
    from reconciler.spec.profiles import profile_from_settings

    scratch = Diagnostics()
    files, _ = discover([out_dir], scratch)
    files = [f for f in files if f.resolve() not in skip]
    if not files:
        return {}
    tree = load_tree(files, scratch)
    out: dict[str, tuple[int, int, int]] = {}
    for located in tree.profiles:
        profile = profile_from_settings(located.model.spec, None)
        out.setdefault(located.model.metadata.name, settings_key(profile))
    return out


def read_live(
    local: bool, emulator: str | None, projects: Sequence[str], timeout: float = DEFAULT_TIMEOUT
) -> tuple[dict[str, list[ObservedTopic]], str]:
    from reconciler.backends.target import open_backend

    backend: Any = open_backend(local, emulator, None, timeout=timeout)
    try:
        return {p: backend.list_topics(p) for p in projects}, str(backend.target)
    finally:
        backend.close()


def run_import(
    projects: Sequence[str],
    topics: Sequence[str],
    out_dir: Path,
    force: bool = False,
    local: bool = False,
    emulator: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> int:
    """Read the live topics of `projects` and write one spec file per project."""
    projects = list(dict.fromkeys(projects))
    targets = {p: out_dir / f"{p}.yaml" for p in projects}
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} exists and is not a directory")
    clash = [str(path) for path in targets.values() if path.exists()]
    if clash and not force:
        raise UsageError(
            f"refusing to overwrite {', '.join(clash)}",
            hint="pass --force to replace them, or choose another --out directory",
        )
    live, target = read_live(local, emulator, projects, timeout)
    missing = missing_topics(projects, live, topics)
    if missing:
        raise BackendError(
            f"no such topic in {', '.join(projects)}: {', '.join(missing)}; nothing written",
            hint="list the topics with `gcloud pubsub topics list --project P`",
        )
    chosen = {p: select(p, live[p], topics) for p in projects}
    skip = {path.resolve() for path in targets.values()}
    result = build_documents(chosen, existing_profiles(out_dir, skip))
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    for project in projects:
        docs = result.documents.get(project, [])
        count = sum(1 for d in docs if d["kind"] == "Topic")
        if not count:
            click.echo(f"project {project}: no topics to import; nothing written", err=True)
            continue
        header = (
            f"Imported by `reconcile import` from {target} at {stamp}.\n"
            f"Project {project}: {count} topic(s). Review, then `reconcile plan` "
            "(expect only the ownership label to be added)."
        )
        write_atomically(targets[project], render_documents(docs, header), "spec file")
        click.echo(f"wrote {targets[project]} ({count} topic(s))", err=True)
    return EXIT_OK
