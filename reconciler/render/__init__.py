"""Renderers: a Plan (or diagnostics) as text for people, markdown for a pull request,
JSON for machines. `render(plan, fmt, color)` is the one entry the commands use."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconciler.plan.model import Plan

FORMATS = ("text", "json", "markdown")


def render(plan: Plan, fmt: str, color: bool = False) -> str:
    """The plan in `fmt` (one of FORMATS); colour applies to text only."""
    if fmt == "json":
        from reconciler.render import json as render_json

        return render_json.render(plan)
    if fmt == "markdown":
        from reconciler.render import markdown

        return markdown.render(plan)
    if fmt == "text":
        from reconciler.render import text

        return text.render(plan, color=color)
    raise ValueError(f"unknown plan format {fmt!r}; expected one of {', '.join(FORMATS)}")
