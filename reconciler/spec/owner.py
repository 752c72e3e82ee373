"""The spec tree's owner identity: its one `Owner` document, or the default.

Recorded on every topic the tree creates or adopts (`reconcile-owner`), it is what
lets two trees split one project's topics: `--prune` deletes only this owner's
topics, and a topic another tree owns is taken over only when apply is told so
(docs/ownership.md). A second `Owner` document is an error at both places, so that no
tree has two identities by accident.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostics
from reconciler.names import owner_name_problem
from reconciler.spec.desired import Owner
from reconciler.spec.documents import OwnerDoc
from reconciler.spec.reporter import Reporter
from reconciler.spec.tree import Located

NAME = ("metadata", "name")


def check_owner(owners: list[Located[OwnerDoc]], diags: Diagnostics) -> Owner:
    """The tree's owner; every problem reported (a bad or second declaration)."""
    named = [o for o in owners if not o.is_invalid(NAME)]  # a broken one is reported
    if not named:
        return Owner()
    first = named[0]
    for other in named[1:]:
        for here, there in ((other, first), (first, other)):
            mark = there.doc.mark_for(NAME)
            Reporter(here, diags).error(
                NAME, "owner-twice",
                f"the spec tree declares its owner twice: {here.model.metadata.name!r} here "
                f"and {there.model.metadata.name!r} at {there.doc.file}:{mark.line}; a tree "
                "has one owner, so keep one Owner document",
            )
    problem = owner_name_problem(first.model.metadata.name)
    if problem is not None:
        Reporter(first, diags).error(NAME, "owner-name", problem)
    mark = first.doc.mark_for(NAME)
    return Owner(first.model.metadata.name, first.doc.file, mark.line)
