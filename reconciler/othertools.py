"""Topics other tools manage, known by the label each puts on what it manages, so that
plan and import can say so before reconcile adopts one and `--prune` never deletes
one (docs/adoption.md gives the hand-over from each tool, and the public sources).

    goog-terraform-provisioned   Terraform's Google provider (on by default since 6.0,
                                 on resources it creates)
    managed-by-cnrm              Config Connector (a system label, on every resource
                                 that takes labels)

A topic with such a label is managed by that tool, or was: the label stays on the
topic after the tool lets go of it, until someone removes it. Two tools that both
correct a topic fight over it, each undoing the other's changes on every run; the
label is the only sign of that a topic carries. Core names, shared by plan and import:
no imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ADOPTION_GUIDE = "docs/adoption.md"


@dataclass(frozen=True)
class OtherTool:
    """A tool that labels what it manages: the label's key, the tool's name as a
    message says it, and what to do on that tool's side so that it lets go of a topic
    and leaves it in place (`let_go`)."""

    label: str
    name: str
    let_go: str


TERRAFORM = OtherTool(
    "goog-terraform-provisioned",
    "Terraform (the Google provider)",
    "make Terraform forget its google_pubsub_topic without destroying it: a `removed` "
    "block with `lifecycle { destroy = false }` in place of the resource block, or "
    "`terraform state rm ADDRESS` and the block deleted",
)
CONFIG_CONNECTOR = OtherTool(
    "managed-by-cnrm",
    "Config Connector",
    "annotate its PubSubTopic object `cnrm.cloud.google.com/deletion-policy: abandon`, "
    "then delete that object (Config Connector keeps the topic)",
)
OTHER_TOOLS = (TERRAFORM, CONFIG_CONNECTOR)
_BY_LABEL = {tool.label: tool for tool in OTHER_TOOLS}


def is_other_tools_label(key: str) -> bool:
    """A label another tool puts on what it manages: never one of reconcile's user
    labels (import leaves it out of the spec; plan neither sets nor removes it)."""
    return key in _BY_LABEL


def managed_by(labels: Mapping[str, str]) -> list[OtherTool]:
    """The other tools whose label these topic labels carry (usually none)."""
    if not labels:
        return []
    return [tool for tool in OTHER_TOOLS if tool.label in labels]


def remove_label_command(name: str, tool: OtherTool) -> str:
    """The gcloud command that removes `tool`'s label from the topic
    projects/P/topics/T (`name`), once the tool has let go of it."""
    parts = name.split("/")
    project, topic = (parts[1], parts[3]) if len(parts) == 4 else ("PROJECT", name)
    return (
        f"gcloud pubsub topics update {topic} --project {project} "
        f"--remove-labels={tool.label}"
    )
