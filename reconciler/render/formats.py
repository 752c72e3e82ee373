"""A plan in the format asked for: `render(plan, fmt, color)` is the one entry the
commands use (`plan`, `show`, `apply`). text, json and markdown render the plan;
github and sarif report its findings (render/findings.py) with the diagnostics'
reporters (render/diagnostics.py), for CI."""

from __future__ import annotations

from reconciler.plan.model import Plan
from reconciler.render import FORMATS, markdown, text
from reconciler.render import diagnostics as report
from reconciler.render import json as render_json
from reconciler.render.findings import findings


def render(plan: Plan, fmt: str, color: bool = False) -> str:
    """The plan in `fmt` (one of FORMATS); colour applies to text only."""
    if fmt == "json":
        return render_json.render(plan)
    if fmt == "markdown":
        return markdown.render(plan)
    if fmt == "text":
        return text.render(plan, color=color)
    if fmt in report.CI_REPORTERS:
        return report.REPORTERS[fmt](findings(plan))
    raise ValueError(f"unknown plan format {fmt!r}; expected one of {', '.join(FORMATS)}")
