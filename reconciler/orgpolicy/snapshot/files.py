"""The snapshot file as a whole: read (every document, then the checks that need
them all) and written."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from reconciler.diagnostics import Diagnostics, Severity
from reconciler.errors import InputError
from reconciler.fileio import write_atomically
from reconciler.orgpolicy.model import Policy, is_custom
from reconciler.orgpolicy.snapshot.ancestry import ancestry_loops, read_ancestry
from reconciler.orgpolicy.snapshot.checker import (
    NO_PARENT,
    Checker,
    Read,
    structural_errors_since,
)
from reconciler.orgpolicy.snapshot.custom import (
    custom_constraint,
    custom_policy_target,
    is_custom_constraint,
    not_judged,
)
from reconciler.orgpolicy.snapshot.policies import read_policy
from reconciler.orgpolicy.store import PolicyStore
from reconciler.orgpolicy.unjudged import Gate
from reconciler.yamlio import PathKey, YamlProblem, load_documents, read_text
from reconciler.yamltext import dump_all


def read_snapshot(
    path: Path, diags: Diagnostics, projects: Collection[str] = (),
    gate: Gate | None = None,
) -> PolicyStore:
    """Every policy of the snapshot that has no error; every problem as a diagnostic.
    `projects` are those the specs name (for the unused-project warning, and, with
    `gate`, a validate's, for the projects whose custom constraints cannot be judged
    offline: no ancestry, or a condition that does not compile here)."""
    display = str(path)
    store = PolicyStore()
    try:
        text = read_text(path)
        documents = load_documents(path, text, display=display)
    except YamlProblem as exc:
        diags.error(display, exc.mark.line, exc.mark.col, exc.code, exc.message)
        return store
    custom_policies: list[tuple[Checker, PathKey, Policy]] = []
    lines = text.splitlines()
    read = Read()
    for doc in documents:
        for code, message, line, col in doc.problems:
            diags.error(doc.file, line, col, code, message)
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for i, item in enumerate(items):
            base: PathKey = (i,) if isinstance(doc.data, list) else ()
            if item is None:
                continue
            checker = Checker(doc, diags)
            if isinstance(item, dict) and "ancestry" in item and "name" not in item:
                read_ancestry(checker, item, base, store, read)
                continue
            if is_custom_constraint(item):
                custom_constraint(checker, item, base, store, lines, read)
                continue
            start = len(diags.items)
            policy = read_policy(checker, item, base, projects)
            if policy is None or structural_errors_since(diags, start):
                continue
            if policy.name in store.policies:
                checker.error(
                    (*base, "name"), "policy-duplicate",
                    f"policy {policy.name} appears twice in the snapshot; keep one",
                )
                continue
            store.put(policy)
            if is_custom(policy.constraint):
                custom_policies.append((checker, (*base, "name"), policy))
    ancestry_loops(store, read)
    require = gate is not None and gate.require
    for checker, name_path, policy in custom_policies:
        custom_policy_target(checker, name_path, policy, store, require, read.broken)
    if gate is not None and not gate.live:
        not_judged(store, read, sorted(projects), gate, display, diags)
    return store


def load_snapshot(path: Path) -> PolicyStore:
    """Read a snapshot file (YAML or JSON documents: Policy and CustomConstraint
    resources, plus an optional `ancestry:` mapping) for a server or a backend: any
    error is an InputError listing every problem with its line (validate reports them
    as diagnostics instead)."""
    diags = Diagnostics()
    store = read_snapshot(path, diags)
    errors = [d for d in diags.sorted() if d.severity is Severity.ERROR]
    if errors:
        raise InputError(
            "the org-policy snapshot has problems:\n  "
            + "\n  ".join(d.render() for d in errors),
            hint="fix the org-policy snapshot, or write a new one with `reconcile policy pull`",
        )
    return store


def dump_snapshot(store: PolicyStore, path: Path, header: str = "") -> None:
    """Write the snapshot atomically (a reader never sees half a file)."""
    docs: list[object] = [c.to_dict() for _, c in sorted(store.custom_constraints.items())]
    docs += [p.to_dict() for _, p in sorted(store.policies.items())]
    ancestry = {**store.ancestry, **{p: NO_PARENT for p in store.unparented}}
    if ancestry:
        docs.append({"ancestry": dict(sorted(ancestry.items()))})
    text = dump_all(docs)  # every string reads back as one (an etag `1e5` is quoted)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    write_atomically(path, text, "org-policy snapshot")
