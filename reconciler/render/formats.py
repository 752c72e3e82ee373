"""A plan in the format asked for: `render(plan, fmt, color)` is the one entry the
commands use (`plan`, `show`, `apply`)."""

from __future__ import annotations

from reconciler.plan.model import Plan
from reconciler.render import FORMATS, markdown, text
from reconciler.render import json as render_json


def render(plan: Plan, fmt: str, color: bool = False) -> str:
    """The plan in `fmt` (one of FORMATS); colour applies to text only."""
    if fmt == "json":
        return render_json.render(plan)
    if fmt == "markdown":
        return markdown.render(plan)
    if fmt == "text":
        return text.render(plan, color=color)
    raise ValueError(f"unknown plan format {fmt!r}; expected one of {', '.join(FORMATS)}")
