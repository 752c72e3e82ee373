"""The snapshot's `ancestry:` documents: each project or folder mapped to its parent
folder or organization (`projects/P: none` for a project in no organization), each
named once, with no loop and no deeper than a hierarchy; and where an entry is, for a
plan that finds the live hierarchy elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.names import is_resource_number, project_id_problem
from reconciler.orgpolicy.snapshot.checker import (
    _CHILDREN,
    _PARENTS,
    _RESOURCE,
    NO_PARENT,
    Checker,
    Read,
)
from reconciler.orgpolicy.store import MAX_HIERARCHY_DEPTH, PolicyStore
from reconciler.yamlio import PathKey, YamlProblem, load_documents, read_text


def read_ancestry(
    checker: Checker, item: dict[str, Any], base: PathKey, store: PolicyStore, read: Read
) -> None:
    """An `ancestry:` document: each project or folder mapped to its parent folder or
    organization, each named once in the whole snapshot."""
    if read.ancestry_at is None:
        read.ancestry_at = (checker.doc.file, checker.doc.key_mark((*base, "ancestry")))
    extra = [k for k in item if k != "ancestry"]
    for key in extra:
        checker.error(
            (*base, key), "policy-unknown-field",
            f"unknown field {key!r} beside `ancestry`; an ancestry document holds only "
            "`ancestry:`",
            key=True,
        )
    ancestry = item["ancestry"]
    if not isinstance(ancestry, dict):
        checker.error(
            (*base, "ancestry"), "policy-format",
            "`ancestry` must map a resource (projects/P, folders/F) to its parent",
        )
        return
    for child, parent in ancestry.items():
        where = (*base, "ancestry", child)
        problem = _ancestry_problem(child, parent)
        if problem is not None:
            checker.error(where, "policy-ancestry-entry", problem)
            continue
        if child in store.ancestry or child in store.unparented:
            first, first_path = read.ancestry[child]
            m = first.doc.key_mark(first_path)
            checker.error(
                where, "policy-duplicate",
                f"the ancestry of {child} is given twice (first at {first.doc.file}:"
                f"{m.line}): keep one",
                key=True,
            )
            continue
        if parent == NO_PARENT:
            store.unparented.add(child)
        else:
            store.ancestry[child] = parent
        read.ancestry[child] = (checker, where)


def _ancestry_problem(child: Any, parent: Any) -> str | None:
    """Why `child: parent` is not an ancestry entry (a project or a folder, under a
    folder or an organization, each named as the service names it), or None."""
    shape = (
        "an ancestry entry maps projects/P or folders/F to its parent, folders/F or "
        f"organizations/O (or a project to `{NO_PARENT}`, when it is in no folder or "
        "organization)"
    )
    if not isinstance(child, str) or not isinstance(parent, str):
        return f"ancestry entry {child!r}: {parent!r}: {shape}"
    checked = [(child, _CHILDREN, "child")]
    if parent != NO_PARENT:
        checked.append((parent, _PARENTS, "parent"))
    for text, kinds, role in checked:
        match = _RESOURCE.fullmatch(text)
        if match is None or match.group(1) not in kinds:
            return f"ancestry entry {child}: {parent}: {text!r} cannot be a {role}; {shape}"
        kind, node = match.groups()
        if kind == "projects":
            if not is_resource_number(node) and (problem := project_id_problem(node)):
                return f"ancestry entry {child}: {problem}"
        elif not is_resource_number(node):
            return (
                f"ancestry entry {child}: {parent}: {kind} are named by number, without "
                f"leading zeros, e.g. {kind}/123456"
            )
    if parent == NO_PARENT and not child.startswith("projects/"):
        return (
            f"ancestry entry {child}: {NO_PARENT}: only a project may be in no folder or "
            "organization; a folder's parent is a folder or the organization"
        )
    return None


def ancestry_loops(store: PolicyStore, read: Read) -> None:
    """An ancestry that leads back to where it started, or deeper than any hierarchy
    (Resource Manager nests folders at most 10 deep), is an error at the entry that
    starts it (each loop said once)."""
    said: set[str] = set()
    for child in store.ancestry:
        chain = [child]
        looped = False
        while chain[-1] in store.ancestry and len(chain) <= MAX_HIERARCHY_DEPTH:
            parent = store.ancestry[chain[-1]]
            if parent in chain:
                looped = True
                loop = chain[chain.index(parent):]
                if not said & set(loop):
                    said.update(loop)
                    checker, where = read.ancestry[parent]
                    checker.error(
                        where, "policy-ancestry-entry",
                        f"the ancestry loops: {' -> '.join([*loop, parent])}; a folder's "
                        "parent is a folder above it or the organization",
                    )
                break
            chain.append(parent)
        if not looped and len(chain) > MAX_HIERARCHY_DEPTH and child not in said:
            said.add(child)
            checker, where = read.ancestry[child]
            checker.error(
                where, "policy-ancestry-entry",
                f"the ancestry above {child} is more than {MAX_HIERARCHY_DEPTH} levels "
                "deep; a hierarchy nests folders at most 10 deep",
            )


def ancestry_line(path: Path, child: str) -> int:
    """The line of `child:` in the snapshot's `ancestry:` (a plan that finds the live
    hierarchy elsewhere points there); 0 when the file no longer has it."""
    try:
        documents = load_documents(path, read_text(path), display=str(path))
    except YamlProblem:
        return 0
    for doc in documents:
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for i, item in enumerate(items):
            base: PathKey = (i,) if isinstance(doc.data, list) else ()
            found = item.get("ancestry") if isinstance(item, dict) else None
            if isinstance(found, dict) and child in found:
                return doc.key_mark((*base, "ancestry", child)).line
    return 0

