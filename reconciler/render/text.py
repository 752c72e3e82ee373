"""The plan for people, modelled on `terraform plan`: one block per changed topic with
`+` / `~` / `-`, field-level before -> after, regions as a set change, then drift,
warnings and the summary line. Colour only when asked (the CLI decides: a TTY and no
NO_COLOR). Every string that comes from a file or the service goes through
`escape.text` (or `_q`), on a terminal too: no control character reaches the output."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from reconciler.ownership import plan_marker
from reconciler.plan.model import Drift, FieldChange, Plan, ResourceChange
from reconciler.plan.reasons import Reason, ReasonKind
from reconciler.render import diagnostics as report
from reconciler.render.escape import text as esc
from reconciler.render.findings import drift_summary, sources, where_declared
from reconciler.topic import IN_TRANSIT, REGIONS, StoragePolicy
from reconciler.topicfields import LABELS, MASK_PATHS, STORAGE_POLICY

SYMBOL = {"create": "+", "update": "~", "delete": "-", "no-op": " "}
# ANSI SGR foreground colours (green, yellow, red, magenta) and the reset after them.
COLOUR = {"+": "\x1b[32m", "~": "\x1b[33m", "-": "\x1b[31m", "!": "\x1b[35m"}
RESET = "\x1b[0m"
VERB = {
    "create": "will be created",
    "update": "will be updated in-place",
    "delete": "will be destroyed",
}

Style = Callable[[str, str], str]


def _styler(color: bool) -> Style:
    def style(symbol: str, text: str) -> str:
        if not color or symbol not in COLOUR:
            return text
        return f"{COLOUR[symbol]}{text}{RESET}"

    return style


def _q(value: Any) -> str:
    """A value as JSON, with what JSON leaves raw (DEL, C1, bidi...) escaped too."""
    return esc(json.dumps(value, ensure_ascii=False), backslash=False)


def header(plan: Plan) -> list[str]:
    """Where the plan was made, for which spec tree, and which plan it is (the digest a
    reviewer checks)."""
    digest = plan.digest
    projects = []
    if plan.projects:
        projects = [f"Projects: {esc(', '.join(plan.projects))} only (--project)"]
    owner = f"Owner: {esc(plan.owner)}"
    custom = [esc(line) for line in custom_constraint_lines(plan)]
    if not plan.target.kind and not plan.target.address:
        return [*projects, owner, *custom, f"Digest: {digest}"]
    return [
        f"Target: {esc(plan.target.describe())}; org policy: "
        f"{esc(plan.target.describe_policy())}",
        *projects,
        owner,
        *custom,
        f"Digest: {digest}",
    ]


def custom_constraint_lines(plan: Plan) -> list[str]:
    """One line per project with custom constraints in effect: those the plan judged,
    and those it could not (why: the plan's diagnostics). Plain text, not escaped."""
    out = []
    for project, found in plan.custom_constraints.items():
        parts = []
        if found.judged:
            parts.append("judged " + ", ".join(found.judged))
        names = [n.split(":", 1)[0] for n in found.not_judged]
        if "all" in names:
            parts.append("not known, so none judged (the diagnostics say why)")
        elif names:
            parts.append("not judged " + ", ".join(names) + " (the diagnostics say why)")
        out.append(f"Custom constraints in {project}: {'; '.join(parts)}")
    return out


def summary_line(plan: Plan) -> str:
    """The plan's last line. A plan with errors is never applied: it says so, not "No
    changes" (the refused topics are left out of its changes, so it may have none)."""
    counts = plan.counts()
    if plan.has_errors:
        errors = len(plan.errors)
        return (
            f"{errors} error{'' if errors == 1 else 's'}: this plan cannot be applied. Fix "
            "the errors and plan again."
        )
    if not plan.has_changes:
        return "No changes. The live topics match the specs."
    return (
        f"Plan: {counts['create']} to create, {counts['update']} to update, "
        f"{counts['delete']} to delete."
    )


def render(plan: Plan, color: bool = False) -> str:
    style = _styler(color)
    marker = plan_marker(plan.digest)
    lines: list[str] = []
    changes = [rc for rc in plan.resource_changes if rc.action != "no-op"]
    lines += header(plan)
    lines.append("")
    if changes:
        lines.append("reconcile will perform the following actions:")
        lines.append("")
        for rc in changes:
            lines.extend(_block(rc, style, marker))
            lines.append("")
    kept = [rc for rc in plan.resource_changes if rc.action == "no-op" and rc.unmanaged]
    if kept:
        lines.append("Not managed by reconcile, left as they are, on unchanged topics:")
        lines.append("")
        for rc in kept:
            lines.append(f"  {esc(rc.address)}")
            lines.extend(_unmanaged(rc))
        lines.append("")
    if plan.drift:
        lines.append("Drift (warnings, not changes; not counted in the exit code):")
        lines.append("")
        where = sources(plan)
        lines += [_drift(d, where.get(d.address, ("", 0)), style) for d in plan.drift]
        lines += ["", f"  {esc(drift_summary(plan))}", ""]
    for title, found in (
        ("Errors:", plan.errors),
        ("Warnings:", plan.warnings),
        ("Accepted (listed, not problems: the spec tree accepts them):", plan.accepted),
    ):
        if found:
            lines.append(title)
            lines += [f"  {x}" for x in report.lines(found)]
            lines.append("")
    lines.append(summary_line(plan))
    return "\n".join(lines) + "\n"


def _block(rc: ResourceChange, style: Style, marker: str) -> list[str]:
    sym = SYMBOL[rc.action]
    head = f"  # {esc(rc.address)} {VERB[rc.action]}"
    if rc.reasons:
        head += f" ({esc('; '.join(map(reason_text, rc.reasons)))})"
    out = [head, style(sym, f"  {sym} topic {_q(rc.address)} {{")]
    if rc.action == "delete":
        before = rc.change.before or {}
        for key in MASK_PATHS:
            if key in (LABELS.proto, STORAGE_POLICY.proto) or key in before:
                out.append(style("-", f"      - {key} = {_q(before.get(key))}"))
    for fc in rc.change.fields:
        if fc.path == LABELS.proto:
            out.extend(_labels(fc, sym, style))
        elif fc.path == STORAGE_POLICY.proto:
            out.extend(_policy(fc, sym, style))
        else:
            out.append(_value(fc, sym, style))
    out.extend(_unmanaged(rc))
    out.extend(_sends(rc, marker))
    for warning in rc.warnings:
        out.append(style("!", f"      # warning: {esc(warning)}"))
    out += [f"      # note: {esc(note)}" for note in rc.notes]
    out.append(style(sym, "    }"))
    return out


def _sends(rc: ResourceChange, marker: str) -> list[str]:
    """What apply sends for the change, all its request says: the call, the update
    mask, how the labels are made and the marker label."""
    request = rc.request
    if request is None:
        return []
    call = esc(request.method)
    if request.update_mask:
        call += f" (update mask: {esc(', '.join(request.update_mask))})"
    out = [f"      # sends {call}"]
    if request.marker_label is None:
        return out
    mark = f"{esc(request.marker_label)} = {_q(marker)}"
    if request.label_merge is None:
        out.append(f"      #   labels: those above, and {mark}")
    elif request.label_merge.set or request.label_merge.remove:
        out.append(f"      #   labels: as read right before the call, with the changes above, "
                   f"and {mark}")
    else:
        out.append(f"      #   labels: as read right before the call, and {mark}")
    return out


def _value(fc: FieldChange, sym: str, style: Style) -> str:
    """A field that holds one value (retention, key, schema settings): set, or
    before -> after."""
    if fc.before is None and sym == "+":
        return style("+", f"      + {fc.path} = {_q(fc.after)}")
    if fc.after is None:
        return style("-", f"      - {fc.path} = {_q(fc.before)}")
    return style("~", f"      ~ {fc.path} = {_q(fc.before)} -> {_q(fc.after)}")


def _unmanaged(rc: ResourceChange) -> list[str]:
    """What the topic has that reconcile shows but never changes."""
    return [f"      # unmanaged: {esc(note)}" for note in rc.unmanaged]


def _labels(fc: FieldChange, sym: str, style: Style) -> list[str]:
    before: dict[str, str] = fc.before or {}
    after: dict[str, str] = fc.after or {}
    keys = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    width = max((len(_q(k)) for k in keys), default=0)
    out = [style(sym, f"      {sym} labels = {{")]
    for k in keys:
        name = _q(k).ljust(width)
        if k not in before:
            out.append(style("+", f"          + {name} = {_q(after[k])}"))
        elif k not in after:
            out.append(style("-", f"          - {name} = {_q(before[k])}"))
        elif before[k] != after[k]:
            out.append(style("~", f"          ~ {name} = {_q(before[k])} -> {_q(after[k])}"))
    out.append("        }")
    return out


def _regions_text(regions: list[str], policy: StoragePolicy | None) -> str:
    """No policy allows every region; a set policy with no region allows none (the
    Pub/Sub API: an invalid configuration)."""
    if regions:
        return _q(regions)
    return "(every region)" if policy is None else "(no region allowed: invalid)"


def _policy(fc: FieldChange, sym: str, style: Style) -> list[str]:
    before: dict[str, Any] | None = fc.before
    after: dict[str, Any] | None = fc.after
    out = [style(sym, f"      {sym} {STORAGE_POLICY.proto} = {{")]
    if fc.note:
        out.append(f"          # {esc(fc.note)}")
    if after is None:
        out.append("          # no policy after this: every region allowed")
    was_policy, now_policy = StoragePolicy.from_json(before), StoragePolicy.from_json(after)
    regions_before = list(was_policy.regions) if was_policy else []
    regions_after = list(now_policy.regions) if now_policy else []
    if before is None and after is not None and sym == "+":
        out.append(style("+", f"          + {REGIONS} = {_q(regions_after)}"))
    elif not regions_before or not regions_after:
        if regions_before != regions_after:
            was = _regions_text(regions_before, was_policy)
            now = _regions_text(regions_after, now_policy)
            out.append(style("~", f"          ~ {REGIONS} = {was} -> {now}"))
    elif fc.added or fc.removed:
        out.append(style("~", f"          ~ {REGIONS} = ["))
        for r in fc.added:
            out.append(style("+", f"              + {_q(r)},"))
        for r in fc.removed:
            out.append(style("-", f"              - {_q(r)},"))
        kept = sorted(set(regions_before) & set(regions_after))
        if kept:
            out.append(f"                # unchanged: {esc(', '.join(kept))}")
        out.append("            ]")
    eit_before = bool(was_policy and was_policy.enforce_in_transit)
    eit_after = bool(now_policy and now_policy.enforce_in_transit)
    if before is None and after is not None and sym == "+":
        out.append(style("+", f"          + {IN_TRANSIT} = {_q(eit_after)}"))
    elif eit_before != eit_after:
        out.append(
            style("~", f"          ~ {IN_TRANSIT} = {_q(eit_before)} -> {_q(eit_after)}")
        )
    out.append("        }")
    return out


def _drift(d: Drift, where: tuple[str, int], style: Style) -> str:
    """One line per drifting topic: where it is declared and the mismatch in words
    (the fix, the same for every one, is said once in the summary)."""
    declared = where_declared(where)
    at = f" ({esc(declared)})" if declared else ""
    return style("!", f"  ! {esc(d.address)}{at}: {esc(d.message)}")


# Why a change is planned, in words (the plan document keeps the reason's own text).
REASON_WORDS = {
    ReasonKind.ADOPT: "adopted: this tree's owner label is added",
    ReasonKind.ADOPT_FROM: "taken over from the spec tree {}",
    ReasonKind.ALLOWS_DISALLOWED: "its storage policy is recomputed: it allows locations "
    "the org policy does not",
    ReasonKind.MISSES_ALLOWED: "its storage policy is recomputed: it misses locations the "
    "org policy allows",
    ReasonKind.BOTH_STALE: "its storage policy is recomputed: it allows locations the org "
    "policy does not and misses some it allows",
    ReasonKind.IN_TRANSIT: "its storage policy is recomputed: its in-transit enforcement "
    "is not the org policy's",
}


def reason_text(reason: Reason) -> str:
    """A reason as a reader says it; a prune's and a detach's own text are words."""
    words = REASON_WORDS.get(reason.kind)
    return words.format(reason.subject) if words is not None else str(reason)
