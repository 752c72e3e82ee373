"""The plan for a pull-request comment: a compact summary table, then the text plan in
a collapsible `<details>` block (no colour)."""

from __future__ import annotations

from reconciler.plan.model import Plan
from reconciler.render import text

ICON = {"create": "➕ create", "update": "🔄 update", "delete": "🗑️ delete"}


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def render(plan: Plan) -> str:
    lines = ["### reconcile plan", "", f"**{text.summary_line(plan)}**", ""]
    changes = [rc for rc in plan.resource_changes if rc.action != "no-op"]
    if changes:
        lines += ["| Action | Topic | Fields | Notes |", "| --- | --- | --- | --- |"]
        for rc in changes:
            fields = ", ".join(f"`{p}`" for p in rc.update_mask) or (
                "all" if rc.action != "update" else ""
            )
            notes = "; ".join([*rc.reasons, *rc.warnings])
            lines.append(
                f"| {ICON[rc.action]} | `{rc.address}` | {fields} | {_cell(notes)} |"
            )
        lines.append("")
    if plan.drift:
        lines.append(f"**Drift** ({len(plan.drift)} topic(s) out of step with the org policy; "
                     "warnings only):")
        lines.append("")
        for d in plan.drift:
            lines.append(f"- `{d.address}` ({d.category}): {_cell(d.message)}")
        lines.append("")
    if plan.has_errors:
        lines.append(f"**{len(plan.errors)} error(s)**: this plan cannot be applied.")
        lines.append("")
    lines += [
        "<details><summary>Full plan</summary>",
        "",
        "```text",
        text.render(plan, color=False).rstrip("\n"),
        "```",
        "",
        "</details>",
    ]
    return "\n".join(lines) + "\n"
