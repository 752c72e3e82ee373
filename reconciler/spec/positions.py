"""Where in a Topic document a rule's key or value is, for diagnostics: `validate`
places them from the documents it has loaded; `plan`, which holds only the desired
state, reads the topic's file again for the rare topic it reports on, so that its
org-policy errors point at the value as validate's do.

    position(file, line, path, value) -> (file, line, col) | None
    topic_document(file, line) -> Document | None   the topic's document, read again

A value the topic does not write itself comes from a Defaults document of its
directory or one above it (nearest first, up to the repository root: the directories
a spec tree's Defaults documents apply from): the problem is placed at that
document's key or value, not at the topic's start or its `spec: {}`.

(`orgrules.locate` says where a problem's key or value is in a loaded document.)
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from reconciler.spec.discover import SPEC_SUFFIXES, search_bound
from reconciler.spec.orgrules import locate
from reconciler.yamlio import Document, YamlProblem, load_documents


@lru_cache(maxsize=32)
def _documents(file: str, mtime_ns: int, size: int) -> list[Document]:
    """The file's documents, read once while it is unchanged (a plan may report on
    many topics of one file)."""
    return load_documents(Path(file), display=file)


def position(
    file: str, line: int, path: tuple[str | int, ...], value: str | None
) -> tuple[str, int, int] | None:
    """(file, line, column) of `path`/`value` for the topic whose document starts at
    `line` of `file`: in that document, or in the Defaults document it inherits the
    value from; None when the file cannot be read again or no longer has that
    document."""
    topic = topic_document(file, line)
    if topic is None:
        return None
    if not _holds(topic, path):
        for defaults in _defaults_above(Path(file).parent):
            if _holds(defaults, path):
                mark = defaults.mark_for(locate(defaults, path, value))
                return defaults.file, mark.line, mark.col
    mark = topic.mark_for(locate(topic, path, value))
    return file, mark.line, mark.col


def _read(file: str) -> list[Document]:
    try:
        stat = Path(file).stat()
        return _documents(file, stat.st_mtime_ns, stat.st_size)
    except (OSError, YamlProblem):
        return []


def topic_document(file: str, line: int) -> Document | None:
    """The topic's document, read again: the one that starts at `line` of `file`."""
    if not file or not line:
        return None
    return next((doc for doc in _read(file) if doc.start.line == line), None)


def _holds(doc: Document, path: tuple[str | int, ...]) -> bool:
    """The document writes `path` itself (an int: an item of a list)."""
    node = doc.data_for_message()
    for part in path:
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            continue
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _defaults_above(directory: Path) -> list[Document]:
    """The Defaults documents of `directory` and the directories above it, nearest
    first, up to the repository root (`search_bound`); named relative to the current
    directory when `directory` is, as the topic's file is."""
    found: list[Document] = []
    try:
        start = directory.resolve()
    except (OSError, RuntimeError):
        return found
    bound = search_bound(start)
    for here in (start, *start.parents):
        shown = here if directory.is_absolute() else Path(os.path.relpath(here))
        try:
            names = sorted(e.name for e in here.iterdir() if e.name.endswith(SPEC_SUFFIXES))
        except OSError:
            names = []
        for name in names:
            found += [
                doc for doc in _read(str(shown / name))
                if isinstance(doc.data, dict) and doc.data.get("kind") == "Defaults"
            ]
        if here == bound:
            break
    return found
