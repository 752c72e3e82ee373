"""`--project P` (repeatable) on plan and apply: only the declared topics of those
projects are planned and applied, only those projects are read (ListTopics, org
policy) and `--prune` only deletes there. The whole tree is still validated: a spec
of another project can make the tree invalid.

    select_projects(desired, projects, prune=False) -> DesiredState
    require_owner_to_prune(desired)                  --prune needs an Owner document
    check_plan_projects(recorded, asked, path)       `apply PLANFILE --project`

A project that no spec declares is refused (did you mean...), with `--prune` too:
`--project` narrows the declared projects and never adds one. Without `--project` a
project with no declared topic is not pruned either, so a misspelt or retired
project name can never plan the deletion of every managed topic it has.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from reconciler.errors import PlanRefused, Refusal, UsageError
from reconciler.ownership import DEFAULT_OWNER
from reconciler.spec.desired import DesiredState


def selection(projects: Sequence[str]) -> list[str]:
    """The filter as the plan records it: sorted, each once ([] = every project)."""
    return sorted(set(projects))


def select_projects(
    desired: DesiredState, projects: Sequence[str], prune: bool = False
) -> DesiredState:
    """The declared topics of `projects` (all of them when none is named); with
    `prune`, only for a tree that declares its owner (require_owner_to_prune)."""
    declared = desired.projects
    unknown = [p for p in dict.fromkeys(projects) if p not in declared]
    if unknown:
        raise UsageError(_unknown_message(unknown, declared, prune), hint=_hint(prune))
    if prune:
        require_owner_to_prune(desired)
    if not projects:
        return desired
    wanted = set(projects)
    # Narrowed, the tree is still the same tree: its owner (and everything else but
    # the topics) kept, so a narrowed plan never reads as another tree's.
    return replace(desired, topics=[t for t in desired.topics if t.project in wanted])


def require_owner_to_prune(desired: DesiredState) -> None:
    """`--prune` deletes the undeclared topics of this tree's owner. Every tree without
    an Owner document is the owner `default`, so a prune there could delete a topic
    another such tree created in the same project: it is refused, before any call,
    until the tree names itself (docs/ownership.md, "Prune needs an owner")."""
    if desired.owner.declared:
        return
    raise UsageError(
        "--prune deletes only the topics this spec tree owns, and this tree declares no "
        f"owner: every tree without an Owner document is the owner {DEFAULT_OWNER!r}, so "
        "a prune here could delete a topic another tree created; nothing was changed",
        hint="add an Owner document naming this tree (kind: Owner, metadata: {name: "
        "TEAM}), then apply once with --adopt-from default to take over the topics it "
        "declares (docs/ownership.md)",
    )


def _unknown_message(unknown: list[str], declared: list[str], prune: bool) -> str:
    parts = []
    for name in unknown:
        match = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
        mean = f"; did you mean {match[0]!r}?" if match else ""
        parts.append(f"--project {name}: no spec declares a topic in this project{mean}")
    listed = ", ".join(declared) if declared else "none"
    text = "\n".join(parts) + f"\n(the specs declare: {listed})"
    if prune:
        text += (
            "\n--prune deletes only in projects the specs declare, so a project they do "
            "not name is not planned"
        )
    return text + "; nothing was read or changed"


def _hint(prune: bool) -> str:
    if prune:
        return (
            "name a declared project; to retire a project, delete its managed topics "
            "outside reconcile, or keep one declared topic there while pruning the rest"
        )
    return "name a project of the spec tree (its specs' metadata.project)"


def check_plan_projects(recorded: Sequence[str], asked: Sequence[str], path: Path) -> None:
    """`apply PLANFILE --project ...` must name exactly the plan's own filter."""
    if not asked or selection(asked) == list(recorded):
        return
    made = (
        "for the projects " + ", ".join(recorded) + " (--project)"
        if recorded
        else "for every declared project (no --project)"
    )
    raise PlanRefused(
        Refusal.RETARGET,
        f"{path} was made {made}, but this apply names --project "
        f"{', '.join(selection(asked))}; nothing was applied",
        hint="a saved plan applies exactly the projects it was made for: apply it "
        "without --project, or make a plan with `reconcile plan --project P --out PLANFILE`",
    )
