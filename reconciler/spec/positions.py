"""Where in a Topic document a rule's key or value is, for diagnostics: `validate`
places them from the documents it has loaded; `plan`, which holds only the desired
state, reads the topic's file again for the rare topic it reports on, so that its
org-policy errors point at the value as validate's do.

    position(file, line, path, value) -> (line, col) | None

(`orgrules.locate` says where a problem's key or value is in a loaded document.)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from reconciler.spec.orgrules import locate
from reconciler.yamlio import Document, YamlProblem, load_documents


@lru_cache(maxsize=32)
def _documents(file: str, mtime_ns: int, size: int) -> list[Document]:
    """The file's documents, read once while it is unchanged (a plan may report on
    many topics of one file)."""
    return load_documents(Path(file), display=file)


def position(
    file: str, line: int, path: tuple[str, ...], value: str | None
) -> tuple[int, int] | None:
    """(line, column) of `path`/`value` in the document of `file` that starts at
    `line`; None when the file cannot be read again or no longer has that document."""
    if not file or not line:
        return None
    try:
        stat = Path(file).stat()
        documents = _documents(file, stat.st_mtime_ns, stat.st_size)
    except (OSError, YamlProblem):
        return None
    for doc in documents:
        if doc.start.line == line:
            mark = doc.mark_for(locate(doc, path, value))
            return mark.line, mark.col
    return None
