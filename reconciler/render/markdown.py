"""The plan for a pull-request comment: a header (counts, target, org-policy source,
digest), the errors or the change table, warnings and drift in view, then the text plan
in a collapsible `<details>` block (no colour).

Every string from a file or the service is escaped (render/escape.py): names, paths,
labels and regions go in code spans no content can close, messages are
backslash-escaped prose, and the text plan sits in a fence longer than any backtick
run inside it; so no heading, HTML, `@` mention or table break can come from data.
"""

from __future__ import annotations

from reconciler.diagnostics import Diagnostic
from reconciler.plan.model import Plan
from reconciler.render import text
from reconciler.render.escape import md_code, md_fence, md_prose
from reconciler.render.findings import drift_summary, sources, where_declared
from reconciler.render.grouping import Group, grouped

ICON = {"create": "➕ create", "update": "🔄 update", "delete": "🗑️ delete"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _where(d: Diagnostic) -> str:
    return f"{d.file}:{d.line}:{d.col or 1}" if d.line else d.file


def _diagnostic(d: Diagnostic | Group) -> list[str]:
    """A list item; a finding about several topics (render/grouping.py) with each
    topic under it."""
    where = "projects/" + d.project if isinstance(d, Group) else _where(d)
    out = f"- {md_code(where)} {d.severity.value}\\[{md_prose(d.code)}\\]: {md_prose(d.message)}"
    if d.hint:
        out += f" ({md_prose(d.hint)})"
    if not isinstance(d, Group):
        return [out]
    return [out, *(f"  - {md_code(_where(m))} {md_code(m.topic or '')}" for m in d.members)]


def _header(plan: Plan) -> list[str]:
    if plan.has_errors:
        headline = (
            f"**❌ {_plural(len(plan.errors), 'error')}: this plan cannot be applied.** "
            "Fix the errors and plan again."
        )
    else:
        headline = f"**{text.summary_line(plan)}**"
    projects = []
    if plan.projects:
        named = ", ".join(md_code(p) for p in plan.projects)
        projects = [f"- Projects: {named} only (`--project`)"]
    return [
        "### reconcile plan",
        "",
        headline,
        "",
        f"- Target: {md_code(plan.target.describe())}, org policy: "
        f"{md_code(plan.target.describe_policy())}",
        *projects,
        f"- Owner: {md_code(plan.owner)}",
        *(f"- {md_prose(line)}" for line in text.custom_constraint_lines(plan)),
        f"- Digest: `{plan.digest}` (apply exactly this plan with "
        f"`reconcile apply PLANFILE --expect-digest {plan.digest}`)",
        "",
    ]


def _table(plan: Plan) -> list[str]:
    changes = [rc for rc in plan.resource_changes if rc.action != "no-op"]
    if not changes:
        return []
    lines = ["| Action | Topic | Fields | Notes |", "| --- | --- | --- | --- |"]
    for rc in changes:
        fields = ", ".join(md_code(p, in_table=True) for p in rc.update_mask) or (
            "all" if rc.action != "update" else "—"
        )
        notes = "; ".join(
            md_prose(n)
            for n in [*map(text.reason_text, rc.reasons), *rc.warnings, *rc.notes]
        ) or "—"
        lines.append(
            f"| {ICON[rc.action]} | {md_code(rc.address, in_table=True)} | {fields} | {notes} |"
        )
    return [*lines, ""]


def _listed(title: str, diagnostics: list[Diagnostic]) -> list[str]:
    if not diagnostics:
        return []
    items = [x for d in grouped(diagnostics) for x in _diagnostic(d)]
    return [f"**{title}**", "", *items, ""]


def _accepted(plan: Plan) -> list[str]:
    """The findings the spec tree accepts, folded: each with where and why."""
    if not plan.accepted:
        return []
    items = [
        f"- {md_code(_where(d))} {md_prose(d.code)}: {md_prose(d.message)} (accepted at "
        f"{md_code(d.acceptance.where)}: {md_prose(d.acceptance.justification)})"
        for d in plan.accepted if d.acceptance is not None
    ]
    return [
        f"<details><summary>Accepted ({len(plan.accepted)}): listed, not problems"
        "</summary>", "", *items, "", "</details>", "",
    ]


def render(plan: Plan) -> str:
    lines = _header(plan)
    lines += _listed(f"Errors ({len(plan.errors)})", plan.errors)
    lines += _table(plan)
    lines += _listed(f"Warnings ({len(plan.warnings)})", plan.warnings)
    lines += _accepted(plan)
    if plan.drift:
        lines.append(
            f"**Drift** ({_plural(len(plan.drift), 'topic')} out of step with the org "
            "policy; warnings only):"
        )
        lines.append("")
        where = sources(plan)
        for d in plan.drift:
            declared = where_declared(where.get(d.address, ("", 0)))
            at = f" ({md_code(declared)})" if declared else ""
            lines.append(f"- {md_code(d.address)}{at}: {md_prose(d.message)}")
        lines += ["", md_prose(drift_summary(plan)), ""]
    if plan.resource_changes or plan.drift:
        lines += [
            "<details><summary>Full plan</summary>",
            "",
            md_fence(text.render(plan, color=False).rstrip("\n")),
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n"
