"""The spec tree's owner identity: its one `Owner` document, or the default.

Recorded on every topic the tree creates or adopts (`reconcile-owner`), it is what
lets two trees split one project's topics: `--prune` deletes only this owner's
topics, and a topic another tree owns is taken over only when apply is told so
(docs/ownership.md). A second `Owner` document is an error at both places, so that no
tree has two identities by accident.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reconciler.diagnostics import Diagnostics
from reconciler.names import owner_name_problem, project_id_problem, topic_id_problem
from reconciler.ownership import DEFAULT_OWNER
from reconciler.spec.desired import Owner, PruneOptIn
from reconciler.spec.documents import OwnerDoc
from reconciler.spec.positioned import PositionedDiagnostics
from reconciler.spec.tree import Located
from reconciler.spec.values import did_you_mean

NAME = ("metadata", "name")
OPT_INS = ("spec", "pruneSubscribed")
_ENTRY = re.compile(r"projects/([^/]*)/topics/([^/]*)")
_WILD = re.compile(r"[*?]")
_TOPIC_PART = re.compile(r"[A-Za-z0-9\-_.~+%]*")  # a topic ID's characters
ENTRY_FORM = "projects/PROJECT/topics/TOPIC (TOPIC may use * and ? to match several)"


def check_owner(owners: list[Located[OwnerDoc]], diags: Diagnostics) -> Owner:
    """The tree's owner; every problem reported (a bad or second declaration)."""
    named = [o for o in owners if not o.is_invalid(NAME)]  # a broken one is reported
    if not named:
        return Owner()
    first = named[0]
    for other in named[1:]:
        for here, there in ((other, first), (first, other)):
            mark = there.doc.mark_for(NAME)
            PositionedDiagnostics(here, diags).error(
                NAME, "owner-twice",
                f"the spec tree declares its owner twice: {here.model.metadata.name!r} here "
                f"and {there.model.metadata.name!r} at {there.doc.file}:{mark.line}; a tree "
                "has one owner, so keep one Owner document",
            )
    problem = owner_name_problem(first.model.metadata.name)
    if first.model.metadata.name == DEFAULT_OWNER:
        problem = (
            f"{DEFAULT_OWNER!r} is the owner of every tree without an Owner document, so "
            "it names no tree in particular (and --prune needs one that does); name this "
            "tree, e.g. `team-payments`, and take its topics over once with "
            f"--adopt-from {DEFAULT_OWNER}"
        )
    if problem is not None:
        PositionedDiagnostics(first, diags).error(NAME, "owner-name", problem)
    mark = first.doc.mark_for(NAME)
    return Owner(first.model.metadata.name, first.doc.file, mark.line, _opt_ins(first, diags))


def _opt_ins(owner: Located[OwnerDoc], diags: Diagnostics) -> tuple[PruneOptIn, ...]:
    """The well-formed `pruneSubscribed` entries; each malformed one is an error at its
    line."""
    if owner.is_invalid(OPT_INS):
        return ()  # its shape is reported already
    report = PositionedDiagnostics(owner, diags)
    found = []
    for i, entry in enumerate(owner.model.spec.prune_subscribed):
        problem = entry_problem(entry)
        if problem is not None:
            report.error((*OPT_INS, i), "prune-opt-in", f"pruneSubscribed entry {entry!r}: "
                         f"{problem}")
            continue
        mark = owner.doc.mark_for((*OPT_INS, i))
        found.append(PruneOptIn(entry, owner.doc.file, mark.line, mark.col))
    return tuple(found)


def entry_problem(entry: str) -> str | None:
    """What is wrong with a `projects/P/topics/PATTERN` entry, if anything."""
    match = _ENTRY.fullmatch(entry)
    if match is None:
        return f"not a topic name: write {ENTRY_FORM}"
    project, topic = match.groups()
    problem = project_id_problem(project)
    if problem is not None:
        return problem
    if _WILD.search(topic):
        if not _TOPIC_PART.fullmatch(_WILD.sub("", topic)):
            return f"the pattern {topic!r} can match no topic ID (letters, digits, - _ . ~ + %)"
        return None
    return topic_id_problem(topic)


def check_opt_in_projects(owner: Owner, projects: Iterable[str], diags: Diagnostics) -> None:
    """An entry for a project where the tree declares no topic is never used (prune
    looks only at the tree's projects): an error, most likely a typo."""
    known = sorted(set(projects))
    for entry in owner.prune_subscribed:
        if entry.project not in known:
            diags.error(
                entry.file, entry.line, entry.column, "prune-opt-in",
                f"pruneSubscribed entry {entry.pattern!r} names project {entry.project!r}, "
                "where this tree declares no topic, so prune never looks there"
                + did_you_mean(entry.project, known),
            )
