"""What a plan says of topics another tool labels as its own (reconciler/othertools.py):
a warning before it adopts one, or on one it manages already, and none of them among
`--prune`'s deletes.

    other_tool_warnings(topic, live) -> [Diagnostic]       a declared topic
    keep_from_prune(owned) -> (candidates, [Diagnostic])    prune's candidates
    undeclared_tools_note(topics) -> str                    undeclared topics: which
                                                            a tool labels

Nothing is refused: the label says that a tool manages the topic or did (it stays
after the tool lets go), which only the team can tell; the warning says which tool and
how to hand the topic over (docs/adoption.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reconciler.backends.base import ObservedTopic
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.othertools import ADOPTION_GUIDE, OtherTool, managed_by, remove_label_command
from reconciler.ownership import OWNERSHIP_LABEL, is_owned
from reconciler.spec.desired import DesiredTopic

OTHER_TOOL = "other-tool-topic"
PRUNE_OTHER_TOOL = "prune-other-tool"


def other_tool_warnings(topic: DesiredTopic, live: ObservedTopic | None) -> list[Diagnostic]:
    """A declared topic that exists with another tool's label: adopting it (the plan
    adds reconcile's ownership labels) or managing it starts a tug of war with that
    tool's pipeline unless the tool has let go of it."""
    if live is None:
        return []
    labels = live.shape.labels
    adopting = not is_owned(labels)
    out = []
    for tool in managed_by(labels):
        what = (
            "this plan adopts it (adds reconcile's ownership labels)" if adopting
            else f"reconcile manages it too ({OWNERSHIP_LABEL})"
        )
        out.append(Diagnostic(
            topic.file or topic.address, topic.line, 1 if topic.line else 0,
            Severity.WARNING, OTHER_TOOL,
            f"{topic.address} carries {tool.label}, the label "
            f"{tool.name} puts on what it manages: {what}; while {tool.name} manages it "
            "as well, each tool undoes the other's changes on every run",
            hint=_hand_over(topic.address, tool),
            topic=topic.address,
        ))
    return out


def _hand_over(address: str, tool: OtherTool) -> str:
    return (
        f"hand it over first: {tool.let_go}; then remove the label "
        f"(`{remove_label_command(address, tool)}`), as {ADOPTION_GUIDE} shows; or, to "
        f"leave it to {tool.name}, remove it from this tree's specs"
    )


def keep_from_prune(
    owned: Sequence[ObservedTopic],
) -> tuple[list[ObservedTopic], list[Diagnostic]]:
    """Prune's candidates without those another tool labels, and a warning for each of
    those: `--prune` never deletes a topic another tool may manage."""
    kept: list[ObservedTopic] = []
    said: list[Diagnostic] = []
    for live in owned:
        tools = managed_by(live.shape.labels)
        if not tools:
            kept.append(live)
            continue
        tool = tools[0]
        said.append(Diagnostic(
            live.name, 0, 0, Severity.WARNING, PRUNE_OTHER_TOOL,
            f"not pruned: {live.name} carries {tool.label}, the label {tool.name} puts on "
            "what it manages; --prune never deletes a topic another tool may manage",
            hint=f"if it should go, delete it with {tool.name}; if reconcile alone "
            f"manages it now, remove the label (`{remove_label_command(live.name, tool)}`) "
            "and plan again",
            topic=live.name,
        ))
    return kept, said


def undeclared_tools_note(topics: Iterable[ObservedTopic]) -> str:
    """For the undeclared-topics warning, whose hint says how to adopt them: those of
    `topics` another tool labels as its own, to hand over before adopting ("" when
    none)."""
    named: dict[str, list[str]] = {}
    for live in topics:
        for tool in managed_by(live.shape.labels):
            named.setdefault(tool.name, []).append(live.name.rsplit("/", 1)[-1])
    if not named:
        return ""
    parts = "; ".join(f"{', '.join(ids)} by {tool}" for tool, ids in named.items())
    return (
        f"; labelled as managed by another tool, to hand over before adopting them "
        f"({ADOPTION_GUIDE}): {parts}"
    )
