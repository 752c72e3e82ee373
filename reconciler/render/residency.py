"""The residency report for people (text), for a PR or a scheduled report (markdown)
and for machines (JSON: the report object itself, docs/residency.schema.json), all
from the same ResidencyReport."""

from __future__ import annotations

from reconciler.render.escape import md_code, md_prose
from reconciler.render.escape import text as esc
from reconciler.residency.model import RegionStore, ResidencyReport, TopicResidency
from reconciler.spec.durations import age_text as duration

RULE_TEXT = {"live": "live policy", "declared": "declared policy", "org": "org policy"}
# Past this many, the topics with nothing stored (and nothing to say) are counted, not
# listed one by one, in text and markdown (JSON lists every topic).
QUIET_LISTED = 20


def _quiet(t: TopicResidency) -> bool:
    """Nothing stored, nothing paused, nothing unknown: nothing to show but the name."""
    return t.exists and not t.regions and not t.paused_exports and not t.unknown


def _shown(report: ResidencyReport) -> tuple[list[TopicResidency], int]:
    """The topics to show one by one, and how many quiet ones are counted instead."""
    quiet = sum(1 for t in report.topics if _quiet(t))
    if quiet <= QUIET_LISTED:
        return list(report.topics), 0
    return [t for t in report.topics if not _quiet(t)], quiet


def _quiet_line(quiet: int) -> str:
    return f"{_topics(quiet)} with nothing stored (--format json lists every topic)"


def _size(value: int | None) -> str:
    return "unknown" if value is None else f"{value} B"


def _topics(n: int) -> str:
    return f"{n} topic" if n == 1 else f"{n} topics"


def summary(report: ResidencyReport) -> str:
    """One line; never "nothing stored outside" while a topic could not be checked."""
    outside = sum(1 for t in report.topics if t.outside)
    paused = sum(len(t.paused_exports) for t in report.topics)
    unchecked = report.unchecked
    topics = _topics(len(report.topics))
    if outside or paused:
        head = (f"{topics}: {outside} with messages stored outside the allowed regions, "
                f"{paused} paused exports")
        if unchecked:
            head += f"; {unchecked} could not be checked (figures unknown: see notes)"
    elif unchecked:
        head = (f"{topics}: none found storing messages outside the allowed regions or "
                f"with an export paused, but {unchecked} could not be checked (figures "
                "unknown: see notes)")
    else:
        head = f"{topics}: nothing stored outside the allowed regions, no export paused"
    return head + "."


def _region_line(r: RegionStore) -> str:
    line = (
        f"{r.region}: {r.unacked_messages} unacked ({_size(r.unacked_bytes)}, oldest "
        f"{duration(r.oldest_unacked_age_seconds)})"
    )
    if r.retained_acked_messages:
        line += (
            f", {r.retained_acked_messages} retained acked ({_size(r.retained_acked_bytes)}, "
            f"oldest {duration(r.oldest_retained_acked_age_seconds)})"
        )
    if r.not_allowed_by:
        rules = ", ".join(RULE_TEXT[x] for x in r.not_allowed_by)
        line += (
            f"  NOT ALLOWED by the {rules}; the last ages out within "
            f"{duration(r.ages_out_within_seconds)}"
        )
    return line


def _topic_text(t: TopicResidency) -> list[str]:
    mark = "!" if t.has_findings else "?" if t.unchecked else " "
    subs = f"{t.subscriptions} subscription" + ("" if t.subscriptions == 1 else "s")
    if t.subscriptions is None:
        subs = "subscriptions unknown"
    if not t.exists:
        return [f"{mark} {esc(t.address)}: does not exist ({subs})"]
    out = [f"{mark} {esc(t.address)} ({subs})"]
    if not t.regions and not t.unknown:
        out.append("    nothing stored")
    out += [f"    {esc(_region_line(r))}" for r in t.regions]
    out += [
        f"    export {esc(p.name)} ({p.kind}) paused: {esc(p.state)}" for p in t.paused_exports
    ]
    out += [f"    unknown: {esc(u)}" for u in t.unknown]
    return out


def text(report: ResidencyReport) -> str:
    lines = [f"Residency of {_topics(len(report.topics))} declared on {esc(report.target)}", ""]
    shown, quiet = _shown(report)
    for t in shown:
        lines += _topic_text(t)
    if quiet:
        lines.append(f"  {_quiet_line(quiet)}")
    if report.notes:
        lines += ["", "Notes:"] + [f"  {esc(n)}" for n in report.notes]
    lines += ["", summary(report)]
    return "\n".join(lines) + "\n"


def markdown(report: ResidencyReport) -> str:
    lines = [f"### Residency: {md_prose(summary(report))}", ""]
    lines += [
        "| Topic | Region | Unacked | Bytes | Oldest | Retained acked | Not allowed by | "
        "Ages out within |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    shown, quiet = _shown(report)
    for t in shown:
        name = md_code(t.address, in_table=True)
        if not t.regions:
            what = "does not exist" if not t.exists else (
                "unknown" if t.unknown else "nothing stored")
            lines.append(f"| {name} | {what} | | | | | | |")
        for r in t.regions:
            rules = ", ".join(RULE_TEXT[x] for x in r.not_allowed_by) or "—"
            age = duration(r.ages_out_within_seconds) if r.not_allowed_by else "—"
            lines.append(
                f"| {name} | {md_code(r.region, in_table=True)} | {r.unacked_messages} | "
                f"{_size(r.unacked_bytes)} | {duration(r.oldest_unacked_age_seconds)} | "
                f"{r.retained_acked_messages} | {rules} | {age} |"
            )
    if quiet:
        lines.append(f"| {md_prose(_quiet_line(quiet))} | | | | | | | |")
    paused = [(t, p) for t in report.topics for p in t.paused_exports]
    if paused:
        lines += ["", "**Paused exports**", ""]
        lines += [
            f"- {md_code(p.name)} ({p.kind}) on {md_code(t.address)}: {md_code(p.state)}"
            for t, p in paused
        ]
    unknown = [(t, u) for t in report.topics for u in t.unknown]
    if report.notes or unknown:
        lines += ["", "**Unknown**", ""]
        lines += [f"- {md_prose(n)}" for n in report.notes]
    return "\n".join(lines) + "\n"


def json(report: ResidencyReport) -> str:
    return report.dumps()


def render(report: ResidencyReport, fmt: str) -> str:
    if fmt == "json":
        return json(report)
    if fmt == "markdown":
        return markdown(report)
    return text(report)
