"""Files -> YAML documents -> typed spec records, every problem kept as a diagnostic.

Each document's data goes through the shape check (`shape.py`: msgspec into the
Structs of `documents.py`), which reports every shape problem and repairs the document
so that the semantic checks still see every other field of it; the records it gives
are what the checks read from then on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reconciler.diagnostics import Diagnostics
from reconciler.messagepaths import FOUND_ON_EVERY_TOPIC
from reconciler.spec.acceptances import InlineReader
from reconciler.spec.discover import SNAPSHOT_NAMES, SPEC_SUFFIXES, discover_tree, find_snapshot
from reconciler.spec.documents import API_VERSION, KINDS, HedgingProfileDoc, OwnerDoc, TopicDoc
from reconciler.spec.shape import check_shape
from reconciler.spec.tree import Located, SpecTree
from reconciler.spec.values import did_you_mean, type_name
from reconciler.yamlio import Document, PathKey, YamlProblem, load_documents

__all__ = [
    "SNAPSHOT_NAMES",
    "SPEC_SUFFIXES",
    "Located",
    "SpecTree",
    "discover",
    "find_snapshot",
    "load_tree",
]

_VALID: frozenset[PathKey] = frozenset()


def discover(paths: Sequence[Path], diags: Diagnostics) -> tuple[list[Path], Path | None]:
    """Spec files under `paths` and the snapshot found for them (see discover_tree)."""
    found = discover_tree(paths, diags)
    return found.files, found.snapshot


def load_tree(
    paths: Sequence[Path],
    diags: Diagnostics,
    on_document: Callable[[str | None], None] | None = None,
) -> SpecTree:
    """Every spec document under `paths`. `on_document` is told of each Topic document
    as it is loaded (its project, None when a Defaults gives it) and of each Defaults
    that names a project: `plan` starts reading those projects meanwhile."""
    found = discover_tree(paths, diags)
    tree = SpecTree(
        snapshot=found.snapshot, snapshot_looked=found.snapshot_looked, files=len(found.files)
    )
    inline = InlineReader(diags)
    for path in found.files:
        display = str(path)
        texts: list[str] = []
        try:
            documents = load_documents(
                path, display=display, positions=False, text_read=texts.append,
                layout_of=FOUND_ON_EVERY_TOPIC,
            )
        except YamlProblem as exc:
            diags.error(display, exc.mark.line, exc.mark.col, exc.code, exc.message)
            continue
        if texts:
            inline.read(texts[0], display, documents)
        if not documents or all(d.data is None for d in documents):
            diags.warning(display, 1, 1, "empty-file", "the file holds no spec documents")
            continue
        for doc in documents:
            for code, message, line, col in doc.problems:
                diags.error(doc.file, line, col, code, message)
            topics, defaults = len(tree.topics), len(tree.defaults)
            _load_document(doc, path, tree, diags)
            if on_document is not None:
                _tell(on_document, tree, topics, defaults)
            doc.release()  # validated: the data is re-read only if a message needs it
    tree.acceptances = inline.found
    return tree


def _tell(
    on_document: Callable[[str | None], None], tree: SpecTree, topics: int, defaults: int
) -> None:
    """Tell `on_document` of the document just loaded, if it was a Topic or a Defaults
    naming a project (the tree's lists were `topics` and `defaults` long before)."""
    if len(tree.topics) > topics:
        on_document(tree.topics[-1].model.metadata.project)
    elif len(tree.defaults) > defaults and tree.defaults[-1].model.spec.project:
        on_document(tree.defaults[-1].model.spec.project)


def _load_document(doc: Document, path: Path, tree: SpecTree, diags: Diagnostics) -> None:
    data = doc.data
    if data is None:
        return
    if not isinstance(data, dict):
        diags.error(
            doc.file, doc.start.line, doc.start.col, "not-a-mapping",
            f"a spec document must be a mapping with apiVersion and kind, not a "
            f"{type_name(data)}",
        )
        return
    invalid: set[PathKey] = set()
    version = data.get("apiVersion")
    if "apiVersion" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-api-version",
            f"the document has no apiVersion; add `apiVersion: {API_VERSION}`",
        )
        invalid.add(("apiVersion",))
    elif version != API_VERSION:
        m = doc.mark_for(("apiVersion",))
        diags.error(
            doc.file, m.line, m.col, "unknown-api-version",
            f"unknown apiVersion {version!r}; this reconcile reads {API_VERSION!r}",
        )
        invalid.add(("apiVersion",))
    kind = data.get("kind")
    if "kind" not in data:
        diags.error(
            doc.file, doc.start.line, doc.start.col, "missing-kind",
            f"the document has no kind; add one of: {', '.join(KINDS)}",
        )
        return
    if not isinstance(kind, str) or kind not in KINDS:
        m = doc.mark_for(("kind",))
        hint = did_you_mean(str(kind), KINDS)
        diags.error(
            doc.file, m.line, m.col, "unknown-kind",
            f"unknown kind {kind!r}; expected one of: {', '.join(KINDS)}{hint}",
        )
        return
    if invalid:
        data = {**data, "apiVersion": API_VERSION}
    record: Any = check_shape(kind, data, doc, diags, invalid)
    located = Located(record, doc, path, frozenset(invalid) if invalid else _VALID)
    if isinstance(record, TopicDoc):
        tree.topics.append(located)
    elif isinstance(record, HedgingProfileDoc):
        tree.profiles.append(located)
    elif isinstance(record, OwnerDoc):
        tree.owners.append(located)
    else:
        tree.defaults.append(located)
